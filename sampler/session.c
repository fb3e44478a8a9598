/* session.c: one attachment to a guest -- the kernel image, connection, guard, sampler. */
#include "session.h"
#include "err.h"
#include <stdarg.h>
#include <stdlib.h>

void session_warn(const struct session *ss, const char *fmt, ...)
{
	va_list ap;
	if (ss->o->quiet) return;
	fprintf(stderr, "gdbsample: warning: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

static int fail(struct session *ss, int code, const char *what)
{
	ERR_SET(ss, code, "%s", what);
	return -1;
}

const struct symtab *session_syms(const struct session *ss)
{
	return ss->img.syms.n ? &ss->img.syms : NULL;
}

int session_open(struct session *ss, const struct opts *o)
{
	memset(ss, 0, sizeof *ss);
	ss->o = o;
	int want = o->unwind == UNWIND_FP ? 0 : o->unwind == UNWIND_CFI ? IMG_WANT_CFI
		   : o->unwind == UNWIND_ORC ? IMG_WANT_ORC : IMG_WANT_ORC | IMG_WANT_CFI;
	if (o->nelf && image_load(&ss->img, o->elf, o->nelf, want) < 0)        /* before touching the VM */
		return fail(ss, ss->img.err, ss->img.errstr);
	int kind = o->qmp ? ATTACH_QMP : o->domain ? ATTACH_DOMAIN : ATTACH_GDBSTUB;
	ss->at.kind = kind;
	if (kind != ATTACH_GDBSTUB && attach_open(&ss->at, kind, o->qmp ? o->qmp : o->domain, o->uri) < 0)
		return fail(ss, ss->at.err, ss->at.errstr);
	if (kind != ATTACH_GDBSTUB ? gdb_connect(&ss->g, "127.0.0.1", ss->at.port, NULL) < 0
				   : gdb_connect(&ss->g, o->sock ? NULL : o->host, o->port, o->sock) < 0)
		return fail(ss, ss->g.err, ss->g.errstr);
	ss->attached = 1;
	if (kind != ATTACH_GDBSTUB) {
		char tids[128] = "";
		for (int i = 0, n = 0; i < ss->at.ncpu && n < (int)sizeof tids - 12; i++)
			n += snprintf(tids + n, sizeof tids - (size_t)n, "%s%ld", i ? "," : "", ss->at.tids[i]);
		snprintf(ss->how, sizeof ss->how, "via %s %s, accel %s, %d vCPUs (host threads %s), gdbstub %s",
			 attach_kind_name(kind), ss->at.target, ss->at.accel, ss->at.ncpu, tids, ss->g.conn.where);
		if (!o->quiet) fprintf(stderr, "gdbsample: attached %s\n", ss->how);
	}
	/* Connecting stopped the VM: from here on the guard covers every way we could exit. */
	if (guard_start(&ss->guard, ss->g.conn.fd, "$c#63", kind != ATTACH_GDBSTUB ? attach_rescue : NULL, &ss->at) < 0)
		return fail(ss, ERR_SYS, ss->guard.errstr);
	if (gdb_handshake(&ss->g) < 0) return fail(ss, ss->g.err, ss->g.errstr);
	if (ss->g.was_paused)
		session_warn(ss, "the guest was already paused when we attached (an earlier client left it "
			     "stopped?); it runs while sampled and after we detach");
	if (!ss->g.conn.loopback)
		session_warn(ss, "%s is not a loopback address: the gdbstub gives full control of the guest "
			     "to anyone who can reach it", ss->g.conn.where);
	const struct arch *ga = ss->g.layout.arch;
	if (ss->img.syms.machine && ss->img.syms.machine != ga->elf_machine) {
		char msg[96];
		snprintf(msg, sizeof msg, "the kernel image is not for %s, which the guest is", ga->name);
		return fail(ss, ERR_MISMATCH, msg);
	}
	struct opts *mo = (struct opts *)o;
	ss->ncpu = cli_cpus(mo, ss->g.ncpu, ss->cpus);
	if (ss->ncpu < 0) return fail(ss, ERR_USAGE, mo->errstr);
	if (o->nelf && locate_kernel(ss) < 0) return -1;                   /* KASLR, tables, unwinders */
	struct sampler_cfg cfg = { session_syms(ss), ss->nmethods, { 0 }, ss->img.has_orc ? &ss->img.orc : NULL,
				   ss->img.has_cfi ? &ss->img.cfi : NULL, o->klo, o->khi, o->max_frames };
	memcpy(cfg.order, ss->methods, sizeof cfg.order);
	if (sampler_init(&ss->s, &ss->g, &cfg, ss->cpus, ss->ncpu) < 0)
		return fail(ss, ERR_SYS, ss->s.errstr);
	return 0;
}

void session_kv(const struct session *ss, char *out, size_t cap)
{
	attach_kv(&ss->at, ss->g.conn.where, out, cap);
	session_image_kv(ss, out, cap);
}

int session_close(struct session *ss)
{
	int rc = 0;
	if (ss->attached) {
		/* D;1 must reach a stopped VM: a byte sent to a running QEMU 7.2 stops it and is eaten. */
		guard_enter(&ss->guard);
		if ((ss->g.running && gdb_stop(&ss->g) < 0) || gdb_sync(&ss->g) < 0 || gdb_detach(&ss->g) < 0) {
			ERR_SET(ss, ss->g.err, "detach: %s", ss->g.errstr);
			rc = -1;
		} else {
			guard_finish(&ss->guard, 1); /* detached cleanly: the guard has nothing to do */
		}
		ss->attached = 0;
	}
	guard_finish(&ss->guard, 0); /* after a failure the guard (still armed) resumes the VM itself */
	gdb_close(&ss->g);
	if (attach_close(&ss->at) < 0) { /* `gdbserver none`, and the VM must be running */
		if (!rc) ERR_SET(ss, ss->at.err, "%s", ss->at.errstr);
		rc = -1;
	}
	sampler_free(&ss->s);
	image_free(&ss->img);
	return rc;
}
