/* session.c: one attachment to a guest -- the kernel image, connection, guard, sampler. */
#include "session.h"
#include "err.h"
#include "insn.h"
#include "pace.h"
#include "progress.h"
#include <stdarg.h>
#include <stdlib.h>

void session_warn(const struct session *ss, const char *fmt, ...)
{
	va_list ap;
	if (ss->o->quiet) return;
	progress_erase(stderr); /* on a line of its own, not after the status line */
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

static int syms_text_byte(const void *t, uint64_t addr)
{
	return syms_byte(t, addr);
}

/*
 * aarch64 Linux: the per-CPU __entry_task (BTF says it exists) is current; its address comes from
 * the entry code that loads it into SP_EL0 (el0t_64_sync, from the image's text, already at the
 * guest's addresses). Without image text or that code: attribution off, saying why.
 */
static void linux_percpu_addr(struct session *ss, const struct arch *ga)
{
	struct guestos *os = &ss->img.os;
	const struct symtab *t = &ss->img.syms;
	if (ga->id != ARCH_AARCH64 || !os->cur_sym) {
		os->os = OS_NONE;
		snprintf(os->why, sizeof os->why, "Linux tasks are found on x86_64 and arm64 guests only (%s "
			 "is not supported yet)", ga->name);
		return;
	}
	uint64_t addr = 0;
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->syms[i].name, "el0t_64_sync")) {
			uint64_t len = t->syms[i].size ? t->syms[i].size : 0x400;
			if (a64_sp_el0_source(syms_text_byte, t, t->syms[i].addr, len, &addr) == 0) break;
			addr = 0;
		}
	if (!addr) {
		os->os = OS_NONE;
		snprintf(os->why, sizeof os->why, "the address of the per-CPU %s is not known: el0t_64_sync's text "
			 "(from the kernel image) does not load SP_EL0 from it as 6.1's entry code does", os->cur_sym);
		return;
	}
	os->cur_off = addr;
	size_t n = strlen(os->what);
	snprintf(os->what + n, sizeof os->what - n, " (__entry_task at 0x%llx)", (unsigned long long)addr);
	os->cur_sym = NULL;
}

/* What reading the kernel from guest memory found and cost, on stderr. */
static void kfind_note(const struct session *ss)
{
	const struct kfind_stats *k = &ss->kf;
	progress_erase(stderr);
	fprintf(stderr, "gdbsample: kernel found in guest memory%s: %zu function names%s%s; read %.1f MB in %u stops "
		"(the attach's %.1f ms, the longest other %.1f ms, %u over 20 ms, %u rescued) in %.2f s\n",
		k->cached ? " (cached, checked)" : k->cache_written ? " (kept in the cache)" : "", ss->img.syms.n,
		k->orc ? ", ORC" : "", k->btf ? ", BTF" : "", (double)k->bytes / 1e6, k->stops, (double)k->first_ns / 1e6,
		(double)k->longest_ns / 1e6, k->over, k->rescued, (double)k->elapsed_ns / 1e9);
}

int session_open(struct session *ss, const struct opts *o)
{
	memset(ss, 0, sizeof *ss);
	ss->o = o;
	ss->klo = o->klo;
	ss->khi = o->khi;
	int want = o->unwind == UNWIND_FP ? 0 : o->unwind == UNWIND_CFI ? IMG_WANT_CFI
		   : o->unwind == UNWIND_ORC ? IMG_WANT_ORC : IMG_WANT_ORC | IMG_WANT_CFI;
	if (o->nelf && image_load(&ss->img, o->elf, o->nelf, want, o->os) < 0)        /* before touching the VM */
		return fail(ss, ss->img.err, ss->img.errstr);
	ss->stopped_since = pace_now(); /* at the latest: connecting (below) stops the VM */
	int kind = o->qmp ? ATTACH_QMP : o->domain ? ATTACH_DOMAIN : ATTACH_GDBSTUB;
	ss->at.kind = kind;
	if (kind != ATTACH_GDBSTUB && attach_open(&ss->at, kind, o->qmp ? o->qmp : o->domain, o->uri) < 0)
		return fail(ss, ss->at.err, ss->at.errstr);
	/* The guard connects and hands us the connection: whoever stops the VM by connecting, the
	 * guard (in a session of its own) already holds the socket to resume it. */
	int gr = kind != ATTACH_GDBSTUB
		 ? guard_start(&ss->guard, &ss->g, "127.0.0.1", ss->at.port, NULL, "$c#63", (int64_t)(o->max_pause * 1e9),
			       attach_rescue, &ss->at)
		 : guard_start(&ss->guard, &ss->g, o->sock ? NULL : o->host, o->port, o->sock, "$c#63",
			       (int64_t)(o->max_pause * 1e9), NULL, NULL);
	if (gr < 0) return fail(ss, ss->g.err ? ss->g.err : ERR_SYS, ss->g.err ? ss->g.errstr : ss->guard.errstr);
	ss->g.gate = guard_gate; /* every write to the stub under the watchdog's lock */
	ss->g.gate_arg = &ss->guard;
	ss->attached = 1;
	if (kind != ATTACH_GDBSTUB) {
		char tids[128] = "";
		for (int i = 0, n = 0; i < ss->at.ncpu && n < (int)sizeof tids - 12; i++)
			n += snprintf(tids + n, sizeof tids - (size_t)n, "%s%ld", i ? "," : "", ss->at.tids[i]);
		snprintf(ss->how, sizeof ss->how, "via %s %s, accel %s, %d vCPUs (host threads %s), gdbstub %s",
			 attach_kind_name(kind), ss->at.target, ss->at.accel, ss->at.ncpu, tids, ss->g.conn.where);
		if (!o->quiet) fprintf(stderr, "gdbsample: attached %s\n", ss->how);
	}
	if (gdb_handshake(&ss->g) < 0) return fail(ss, ss->g.err, ss->g.errstr);
	/* No "the guest was already paused" warning: the gdbstub cannot tell (gdb_handshake), and
	 * with --qmp/--domain attach_open saw it running (query-status) or refused it. */
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
	if (!o->nelf && kfind_kernel(ss) < 0) return -1;                  /* a bare -p: the kernel from memory */
	if (!o->nelf && ss->kf.found && !o->quiet) kfind_note(ss);
	if (ss->img.syms.n && locate_kernel(ss) < 0) return -1;            /* KASLR, tables, unwinders */
	struct sampler_cfg cfg = { session_syms(ss), ss->nmethods, { 0 }, ss->img.has_orc ? &ss->img.orc : NULL,
				   ss->img.has_cfi ? &ss->img.cfi : NULL, ss->klo, ss->khi, o->max_frames, NULL, 0 };
	memcpy(cfg.order, ss->methods, sizeof cfg.order);
	cfg.os = &ss->img.os;
	cfg.pac_mask = ss->pac_mask;
	if (sampler_init(&ss->s, &ss->g, &cfg, ss->cpus, ss->ncpu) < 0)
		return fail(ss, ERR_SYS, ss->s.errstr);
	if (ss->img.os.os == OS_LINUX && ga->id != ARCH_X86_64) linux_percpu_addr(ss, ga);
	if (ss->img.os.os != OS_NONE && !plan_tasks_on(&ss->s.p)) {
		ss->img.os.os = OS_NONE;
		snprintf(ss->img.os.why, sizeof ss->img.os.why, "the gdbstub's %s registers include no %s (the "
			 "per-CPU base)", ga->name, ga->pcpu ? ga->pcpu : "per-CPU base register");
	}
	if (ss->img.os.os == OS_NONE && ss->img.syms.n && o->os != OS_NONE) {
		if (task_filter_on(&o->filter)) {
			char msg[256];
			snprintf(msg, sizeof msg, "--pid/--comm: task attribution is off: %s", ss->img.os.why);
			return fail(ss, ERR_USAGE, msg);
		}
		session_warn(ss, "task attribution off: %s", ss->img.os.why);
	}
	return 0;
}

int session_sample(struct session *ss, struct sample *out, int *n, struct pause *pz)
{
	*n = 0;
	int64_t t0 = pace_now();
	guard_enter(&ss->guard);
	int taken = sampler_take(&ss->s, out, n);
	int resumed = taken == 0 ? sampler_resume(&ss->s) : -1;
	int64_t t1 = pace_now(), from = ss->s.stopped_at_ns > t0 ? ss->s.stopped_at_ns : t0;
	pz->pause_ns = t1 - t0;
	pz->stopped_ns = t1 - from;
	if (resumed == 0) {
		guard_leave(&ss->guard);
		return 0;
	}
	if (ss->g.err == ERR_RESCUED) {
		/* We were held up and the guard's watchdog resumed the guest; our write was refused, so
		 * the stream holds nothing stale -- or it raced the rescue, and we resume and drain
		 * (gdb_resync): the VM runs and sampling goes on. A round read whole before the rescue
		 * is still good. */
		if (ss->g.raced && gdb_resync(&ss->g) < 0) {
			ERR_SET(ss, ss->g.err, "after the pause watchdog's rescue: %s", ss->g.errstr);
			return -1;
		}
		ss->g.err = ss->s.err = 0;
		ss->g.running = 1;
		ss->rescues = guard_acknowledge(&ss->guard);
		if (ss->guard.sh && ss->guard.sh->longest_ns > ss->rescue_max_ns) ss->rescue_max_ns = ss->guard.sh->longest_ns;
		if (ss->guard.sh && ss->guard.sh->rescued_at_ns > t0) { /* the guest ran from the rescue on */
			pz->pause_ns = ss->guard.sh->rescued_at_ns - t0;
			pz->stopped_ns = ss->guard.sh->rescued_at_ns > from ? ss->guard.sh->rescued_at_ns - from : 0;
		}
		session_warn(ss, "gdbsample was held up and the pause watchdog resumed the guest after more than "
			     "%.0f ms (rescue %llu)", ss->o->max_pause * 1e3, (unsigned long long)ss->rescues);
		if (taken == 0) return 0;
		ss->rescued_rounds++;
		*n = 0;
		return 1;
	}
	ERR_SET(ss, ss->s.err ? ss->s.err : ss->g.err, "%s", ss->s.err ? ss->s.errstr : ss->g.errstr);
	return -1;
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
	mods_free(&ss->mods);
	image_free(&ss->img);
	return rc;
}
