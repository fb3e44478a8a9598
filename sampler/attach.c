/* SPDX-License-Identifier: MIT */
/* attach.c: reach a running VM through its monitor (QMP socket or libvirt domain), open a private
 * gdbstub on it for the session, and close it again on every way out. */
#include "attach.h"
#include "err.h"
#include <arpa/inet.h>
#include <netinet/in.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <unistd.h>

/*
 * The monitor commands used (QMP; libvirt passes the same JSON through):
 *   query-status       {"return": {"status": "running", "running": true, ...}}
 *   query-cpus-fast    {"return": [{"cpu-index": 0, "thread-id": 4242, ...}, ...]}
 *   query-kvm          {"return": {"enabled": false, "present": false}}
 *   human-monitor-command {"command-line": "info chardev"}   {"return": "gdb: filename=...\r\n..."}
 *   human-monitor-command {"command-line": "gdbserver tcp:127.0.0.1:P"} / "gdbserver none"
 *   cont
 * QEMU names the gdbstub's chardev "gdb" (from -gdb, -s or an earlier `gdbserver`). A second
 * `gdbserver` replaces the first, dropping whoever is connected to it, so we never issue one while
 * a "gdb" chardev exists. `gdbserver none` deletes the chardev; with no client stopped on it the VM
 * keeps running.
 */

const char *attach_kind_name(int kind)
{
	return kind == ATTACH_QMP ? "qmp" : kind == ATTACH_DOMAIN ? "domain" : "gdbstub";
}

/* Run cmd; the reply's "return" value in *ret. -1 on an error reply or a lost monitor. */
static int mon(struct attach *a, const char *cmd, struct jval *ret)
{
	struct jval m, x;
	if (a->kind == ATTACH_QMP) {
		if (qmp_exec(&a->q, cmd) < 0) {
			ERR_SET(a, a->q.err, "%s", a->q.errstr);
			return -1;
		}
		memcpy(a->reply, a->q.msg, a->q.mlen + 1);
	} else if (virt_exec(&a->v, cmd, a->reply, sizeof a->reply) < 0) {
		ERR_SET(a, a->v.err, "%s", a->v.errstr);
		return -1;
	}
	m.p = a->reply;
	m.len = strlen(a->reply);
	if (json_member(&m, "return", ret) < 0) {
		char desc[ERR_MAX] = "no return value";
		if (json_path(&m, "error.desc", &x) == 0) json_str(&x, desc, sizeof desc);
		ERR_SET(a, ERR_PROTO, "monitor: %s", desc);
		return -1;
	}
	return 0;
}

/* HMP command through human-monitor-command; its text output in out. */
static int hmp(struct attach *a, const char *line, char *out, size_t cap)
{
	char cmd[256];
	struct jval r;
	snprintf(cmd, sizeof cmd, "{\"execute\":\"human-monitor-command\",\"arguments\":{\"command-line\":\"%s\"}}",
		 line);
	if (mon(a, cmd, &r) < 0) return -1;
	if (json_str(&r, out, cap) < 0) {
		ERR_SET(a, ERR_PROTO, "monitor: '%s' answered no text", line);
		return -1;
	}
	return 0;
}

/* The VM's run state ("running", "paused", ...). */
static int status(struct attach *a, char *out, size_t cap)
{
	struct jval r, s;
	if (mon(a, "{\"execute\":\"query-status\"}", &r) < 0) return -1;
	if (json_member(&r, "status", &s) < 0 || json_str(&s, out, cap) < 0) {
		ERR_SET(a, ERR_PROTO, "monitor: query-status has no status");
		return -1;
	}
	return 0;
}

static int connect_monitor(struct attach *a)
{
	if (a->kind == ATTACH_QMP) {
		if (qmp_open(&a->q, a->target) < 0) {
			ERR_SET(a, a->q.err, "%s", a->q.errstr);
			qmp_close(&a->q);
			return -1;
		}
		return 0;
	}
	if (a->v.conn) return 0;
	if (virt_open(&a->v, a->uri, a->target) < 0) {
		ERR_SET(a, a->v.err, "%s", a->v.errstr);
		virt_close(&a->v);
		return -1;
	}
	return 0;
}

/* QMP serves one client at a time: we hold it only while talking, never during sampling. */
static void release_monitor(struct attach *a)
{
	if (a->kind == ATTACH_QMP) qmp_close(&a->q);
}

/* A free TCP port on 127.0.0.1 (bound then released: QEMU may lose a race for it, then we retry). */
static int free_port(void)
{
	struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
	socklen_t len = sizeof sin;
	int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), port = -1;
	if (fd >= 0 && bind(fd, (struct sockaddr *)&sin, sizeof sin) == 0 &&
	    getsockname(fd, (struct sockaddr *)&sin, &len) == 0)
		port = ntohs(sin.sin_port);
	if (fd >= 0) close(fd);
	return port;
}

/* Does `info chardev` list the gdbstub's chardev ("gdb: filename=...")? */
static int has_gdb_chardev(const char *text)
{
	for (const char *l = text; l && *l; l = strchr(l, '\n') ? strchr(l, '\n') + 1 : NULL)
		if (!strncmp(l, "gdb:", 4)) return 1;
	return 0;
}

static int vm_facts(struct attach *a)
{
	struct jval r, cpu, x;
	long long v;
	if (mon(a, "{\"execute\":\"query-cpus-fast\"}", &r) < 0) return -1;
	for (a->ncpu = 0; a->ncpu < GDB_MAX_CPUS && json_index(&r, a->ncpu, &cpu) == 0; a->ncpu++)
		a->tids[a->ncpu] = json_member(&cpu, "thread-id", &x) == 0 && json_int(&x, &v) == 0 ? (long)v : -1;
	if (mon(a, "{\"execute\":\"query-kvm\"}", &r) < 0) return -1;
	snprintf(a->accel, sizeof a->accel, "%s",
		 json_member(&r, "enabled", &x) == 0 && json_bool(&x) == 1 ? "kvm" : "tcg");
	return 0;
}

int attach_open(struct attach *a, int kind, const char *target, const char *uri, long long deadline_ms,
		volatile sig_atomic_t *intr)
{
	char st[32], text[8192], line[64];
	memset(a, 0, sizeof *a);
	a->q.conn.fd = -1;
	a->q.conn.deadline_ms = deadline_ms; /* kept across qmp_open */
	a->q.conn.intr = intr;
	a->kind = kind;
	a->target = target;
	a->uri = uri;
	if (connect_monitor(a) < 0) return -1;
	if (hmp(a, "info chardev", text, sizeof text) < 0) goto fail;
	if (has_gdb_chardev(text)) {
		ERR_SET(a, ERR_PROTO, "the VM already has a gdbstub (QEMU -gdb/-s or an earlier `gdbserver`): "
			"someone may be debugging it; not touching it");
		goto fail;
	}
	if (status(a, st, sizeof st) < 0) goto fail;
	if (strcmp(st, "running")) {
		ERR_SET(a, ERR_PROTO, "the VM is %s, not running: nothing sampled, VM left %s", st, st);
		goto fail;
	}
	if (vm_facts(a) < 0) goto fail;
	for (int tries = 0; tries < 5 && !a->opened; tries++) {
		if ((a->port = free_port()) < 0) {
			ERR_SET(a, ERR_SYS, "no free loopback port: %s", strerror(errno));
			goto fail;
		}
		snprintf(line, sizeof line, "gdbserver tcp:127.0.0.1:%d", a->port);
		if (hmp(a, line, text, sizeof text) < 0) goto fail;
		a->opened = strstr(text, "Waiting for gdb connection") != NULL; /* else the port was taken */
	}
	if (!a->opened) {
		for (char *c = text; *c; c++) /* HMP's lines, as one */
			if (*c == '\r' || *c == '\n') *c = c[1] ? ' ' : 0;
		ERR_SET(a, ERR_SYS, "QEMU could not open a gdbstub: %s", text);
		goto fail;
	}
	release_monitor(a);
	return 0;
fail:
	release_monitor(a);
	return -1;
}

int attach_close(struct attach *a)
{
	char st[32], text[1024];
	int rc = 0;
	if (a->kind == ATTACH_GDBSTUB) return 0;
	a->q.conn.deadline_ms = 0; /* closing is never cut short: the stub must go, the VM run */
	a->q.conn.intr = NULL;
	if (a->opened) {
		if (connect_monitor(a) < 0) {
			ERR_SET(a, a->err, "cannot close the gdbstub on port %d", a->port);
			rc = -1;
		} else if (hmp(a, "gdbserver none", text, sizeof text) < 0) {
			rc = -1;
		} else {
			a->opened = 0;
			/* Our D;1 resumed the VM; if it still reads paused (a detach that failed), resume it:
			 * we only ever attach to a running VM -- unless someone else paused it meanwhile
			 * (leave_paused: the session saw their stop), which is theirs to undo. */
			struct jval r;
			if (a->leave_paused) goto out;
			if (status(a, st, sizeof st) < 0) rc = -1;
			else if (!strcmp(st, "paused") && mon(a, "{\"execute\":\"cont\"}", &r) < 0) rc = -1;
			else if (!strcmp(st, "paused") && (status(a, st, sizeof st) < 0 || strcmp(st, "running"))) {
				ERR_SET(a, ERR_PROTO, "the VM is %s after `cont`", st);
				rc = -1;
			}
		}
	}
out:
	release_monitor(a);
	if (a->kind == ATTACH_DOMAIN) virt_close(&a->v);
	return rc;
}

void attach_rescue(void *arg, int ours)
{
	struct attach *a = arg;
	if (!a->opened) return;
	a->leave_paused = !ours;
	if (a->kind == ATTACH_QMP) {
		a->err = 0;
		attach_close(a); /* the monitor is free: our parent (its holder) is gone */
		return;
	}
	/* libvirt's connection cannot cross a fork: run virsh instead (we are about to exit anyway). */
	char line[64];
	snprintf(line, sizeof line, "gdbserver none");
	if (a->uri) execlp("virsh", "virsh", "-q", "-c", a->uri, "qemu-monitor-command", a->target, "--hmp", line,
			   (char *)NULL);
	else execlp("virsh", "virsh", "-q", "qemu-monitor-command", a->target, "--hmp", line, (char *)NULL);
}

void attach_summary(const struct attach *a, const char *where, struct summary *t)
{
	summary_str(t, "attach", NULL, attach_kind_name(a->kind));
	if (a->kind != ATTACH_GDBSTUB) summary_str(t, "attach_target", NULL, a->target);
	else summary_null(t, "attach_target");
	summary_str(t, "gdbstub", NULL, where);
	summary_str(t, "accel", NULL, a->kind == ATTACH_GDBSTUB ? "unknown" : a->accel);
	if (a->ncpu) {
		char tids[GDB_MAX_CPUS * 21 + 1];
		size_t o = 0;
		tids[0] = 0;
		for (int i = 0; i < a->ncpu && o < sizeof tids; i++)
			o += (size_t)snprintf(tids + o, sizeof tids - o, "%s%ld", i ? "," : "", a->tids[i]);
		summary_str(t, "vcpu_threads", NULL, tids);
	} else {
		summary_null(t, "vcpu_threads");
	}
}
