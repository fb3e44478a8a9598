/* SPDX-License-Identifier: MIT */
/* gdb_reply.c: pure parsers of gdbstub replies -- bytes in, structs out, no I/O (fuzz/, test_gdb.c). */
#include "gdb_reply.h"
#include "rsp.h"
#include "textnum.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* A hex number of 1..7 digits in [s, e) (so it fits an int): its value, *end past it; -1 if none. */
static int hexnum(const char *s, const char *e, const char **end)
{
	unsigned v = 0;
	int k = 0;
	for (; s + k < e && k < 8 && rsp_hexval((unsigned char)s[k]) >= 0; k++)
		v = v << 4 | (unsigned)rsp_hexval((unsigned char)s[k]);
	if (k == 0 || k == 8) return -1; /* no digit, or too many for a vCPU number */
	*end = s + k;
	return (int)v;
}

/* A thread id in [s, e): "p<pid>.<tid>" or "<tid>"; the tid (pid in *pid, 1 for the short form). */
static int thread_id(const char *s, const char *e, const char **end, int *pid)
{
	const char *q = s;
	*pid = 1;
	if (q < e && *q == 'p') {
		*pid = hexnum(q + 1, e, &q);
		if (*pid < 0 || q == e || *q != '.') return -1;
		q++;
	}
	return hexnum(q, e, end);
}

int gdb_parse_tid(const char *s, const char **end)
{
	const char *e;
	int pid, tid = thread_id(s, s + strlen(s), &e, &pid);
	if (tid >= 0 && end) *end = e;
	return tid;
}

/*
 * qfThreadInfo / qsThreadInfo replies (GDB manual, "General Query Packets"): "m<id>[,<id>...]"
 * with at least one id, more to come; "l" once the list is complete. An id is hex, or
 * "p<pid>.<tid>" once multiprocess is on. QEMU lists one vCPU a reply, thread ids 1..N.
 */
int gdb_parse_threads(const char *pkt, size_t len, int *pids, int *tids, int max, int *n)
{
	const char *p = pkt, *e = pkt + len;
	if (len == 1 && *p == 'l') return GDB_TL_END;
	if (len < 2 || *p != 'm') return GDB_TL_BAD;
	for (p++;; p++) {
		int pid, tid = thread_id(p, e, &p, &pid);
		if (tid < 0) return GDB_TL_BAD;
		for (int i = 0; i < *n; i++)
			if (tids[i] == tid && pids[i] == pid) return GDB_TL_DUP;
		if (*n >= max) return GDB_TL_FULL;
		pids[*n] = pid;
		tids[(*n)++] = tid;
		if (p == e) return GDB_TL_MORE;
		if (*p != ',') return GDB_TL_BAD;
	}
}

/*
 * Stop replies (GDB manual, "Stop Reply Packets"): "T<AA><n>:<r>;..." (QEMU: "T02thread:01;",
 * "T02thread:p01.02;" with multiprocess), "S<AA>", "W<AA>[;process:<pid>]", "X<AA>[;...]".
 * In T, pairs whose name we do not know are skipped; a pair without ':' is malformed.
 */
int gdb_parse_stop(const char *pkt, size_t len, struct gdb_stopinfo *out)
{
	const char *p = pkt, *e = pkt + len;
	if (len < 3 || !pkt[0] || !strchr("TSWX", pkt[0]) || rsp_hexval((unsigned char)pkt[1]) < 0 ||
	    rsp_hexval((unsigned char)pkt[2]) < 0)
		return -1;
	out->kind = pkt[0];
	out->sig = rsp_hexval((unsigned char)pkt[1]) << 4 | rsp_hexval((unsigned char)pkt[2]);
	out->pid = out->tid = -1;
	p += 3;
	if (out->kind != 'T') return 0; /* what follows S/W/X names no thread we use */
	while (p < e) {
		const char *colon = memchr(p, ':', (size_t)(e - p)), *semi;
		if (!colon) return -1;
		semi = memchr(colon, ';', (size_t)(e - colon));
		if (!semi) semi = e; /* the last pair's ';' is optional in practice */
		if (colon - p == 6 && !memcmp(p, "thread", 6)) {
			const char *end;
			int pid, tid = thread_id(colon + 1, semi, &end, &pid);
			if (tid < 0 || end != semi) return -1;
			out->pid = pid;
			out->tid = tid;
		}
		p = semi + (semi < e);
	}
	return 0;
}

int gdb_stop_tid(const char *pkt, size_t len)
{
	struct gdb_stopinfo si;
	return gdb_parse_stop(pkt, len, &si) == 0 ? si.tid : -1;
}

int gdb_parse_status(const char *text, char *state, size_t cap)
{
	/* hmp_info_status: "VM status: running" / "VM status: paused" / "VM status: paused (STATE)"
	 * with STATE the run state's name when it is not plain `paused` (prelaunch, inmigrate,
	 * postmigrate, shutdown, guest-panicked, io-error, ...), maybe " (single step mode)". */
	const char *p = strstr(text, "VM status: ");
	state[0] = 0;
	if (!p) return -1;
	p += 11;
	if (!strncmp(p, "running", 7)) return 0;
	if (strncmp(p, "paused", 6)) return -1;
	const char *o = strstr(p, " ("), *c = o ? strchr(o, ')') : NULL;
	if (o && c && strncmp(o, " (single step", 13) && (size_t)(c - o - 2) < cap) {
		memcpy(state, o + 2, (size_t)(c - o - 2));
		state[c - o - 2] = 0;
		for (char *q = state; *q; q++)
			if ((*q < 'a' || *q > 'z') && *q != '-') {
				state[0] = 0; /* not a run state's name: none is left for the caller */
				return -1;
			}
	}
	return 1;
}

int gdb_parse_migration(const char *text)
{
	/* hmp_info_migrate (7.2 and 10.0): "globals:" and its lines, then -- once a migration was
	 * started -- "Migration status: STATUS" among its figures. */
	static const char *const over[] = { "none", "completed", "failed", "cancelled" };
	const char *p = strstr(text, "Migration status: ");
	if (!p) return strstr(text, "globals:") ? 0 : -1;
	p += 18;
	size_t n = strcspn(p, "\r\n ");
	if (!n) return -1;
	for (size_t i = 0; i < sizeof over / sizeof over[0]; i++)
		if (strlen(over[i]) == n && !strncmp(p, over[i], n)) return 0;
	return 1;
}

int gdb_parse_replay(const char *text, uint64_t *icount)
{
	/* hmp_info_replay (7.2 and 10.0): "Record/replay is not active", or "Replaying execution
	 * 'FILE': instruction count = N" ("Recording" while recording). The file name may hold any
	 * text: the count is the last such phrase's. */
	static const char phrase[] = "': instruction count = ";
	while (*text == ' ' || *text == '\r' || *text == '\n') text++;
	if (!strncmp(text, "Record/replay is not active", 27)) return GDB_RR_OFF;
	int mode = !strncmp(text, "Replaying execution '", 21) ? GDB_RR_REPLAY
		   : !strncmp(text, "Recording execution '", 21) ? GDB_RR_RECORD : -1;
	if (mode < 0) return -1;
	const char *last = NULL;
	for (const char *p = strstr(text + 20, phrase); p; p = strstr(p + 1, phrase)) last = p;
	if (!last) return -1;
	const char *d = last + sizeof phrase - 1;
	size_t n = strspn(d, "0123456789");
	if (!n || (d[n] && d[n] != '\r' && d[n] != '\n') || textnum_dec(d, n, INT64_MAX, icount)) return -1;
	return mode;
}

int gdb_parse_cont(const char *text)
{
	/* hmp_cont: silent when qmp_cont resumed the VM; "Error: ..." (hmp_handle_error) otherwise */
	return strstr(text, "Error") != NULL;
}

const char *gdb_state_reason(int status, const char *state)
{
	static const struct { const char *state; int sig; } as[] = {
		{ "postmigrate", 0x18 }, { "finish-migrate", 0x18 }, { "shutdown", 0x03 }, { "io-error", 0x17 },
		{ "watchdog", 0x0e }, { "internal-error", 0x06 }, { "", 0x02 },
	};
	if (status == 1)
		for (size_t i = 0; i < sizeof as / sizeof as[0]; i++)
			if (!strcmp(state, as[i].state)) return gdb_stop_reason(as[i].sig);
	if (status == 1 && !strcmp(state, "guest-panicked")) return "stopped: the guest panicked";
	return "stopped by someone else";
}

const char *gdb_stop_reason(int sig)
{
	switch (sig) { /* GDB's signal numbers, as QEMU's gdb_vm_state_change maps run states */
	case 0x02: return "paused (a monitor `stop`, virsh suspend)";
	case 0x03: return "shut down";
	case 0x0e: return "stopped by its watchdog device";
	case 0x06: return "stopped on an internal error";
	case 0x11: /* GDB_SIGNAL_STOP, QEMU >= 8.2 */
	case 0x17: return "stopped on an I/O error"; /* GDB_SIGNAL_IO before */
	case 0x18: return "stopped for migration";
	default: return "stopped by someone else";
	}
}


/*
 * qSupported's reply (GDB manual, "General Query Packets"): "name=value;name+;name-;..." --
 * QEMU: "PacketSize=1000;qXfer:features:read+;multiprocess+;QStartNoAckMode+;...". Features
 * are found as substrings, as before: a reply only ever lists each once.
 */
void gdb_parse_supported(const char *pkt, struct gdb_features *out)
{
	const char *ps = strstr(pkt, "PacketSize=");
	long psize = ps ? strtol(ps + 11, NULL, 16) : 0;
	out->packet_size = psize > 0 && psize <= RSP_PKT_MAX ? (int)psize : 0;
	out->multiprocess = strstr(pkt, "multiprocess+") != NULL;
	out->xfer_features = strstr(pkt, "qXfer:features:read+") != NULL;
	out->noack = strstr(pkt, "QStartNoAckMode+") != NULL;
}

int gdb_parse_version(const char *text)
{
	/* hmp_info_version: "7.2.15 (Debian 1:7.2+dfsg-7+deb12u18)", "10.0.2", ... */
	int major = 0, minor = 0;
	if (sscanf(text, "%d.%d", &major, &minor) != 2 || major < 0 || major > 99 || minor < 0 || minor > 99)
		return 0;
	return major * 100 + minor;
}

/* A `g` reply: the registers as hex, in target.xml's order, each in the target's byte order. */
int gdb_parse_regs(const char *pkt, size_t len, uint8_t *regs, int cap)
{
	int n = (int)(len / 2);
	if (rsp_is_error(pkt, len) || len % 2 || n > cap || rsp_unhex(regs, pkt, (size_t)n)) return -1;
	return n;
}

/* A `p` reply: one register as hex, 1..8 bytes little-endian (as in `g`). */
int gdb_parse_reg(const char *pkt, size_t len, uint64_t *val)
{
	uint8_t b[8] = { 0 };
	size_t n = len / 2;
	if (rsp_is_error(pkt, len) || !n || n > 8 || len % 2 || rsp_unhex(b, pkt, n)) return -1;
	*val = rsp_le(b, (int)n);
	return 0;
}

/* An `m` reply: exactly the n bytes asked for, as hex ("E14" for memory that is not mapped). */
int gdb_parse_mem(const char *pkt, size_t len, uint8_t *out, size_t n)
{
	if (rsp_is_error(pkt, len) || len != n * 2) return -1;
	return rsp_unhex(out, pkt, n) ? -1 : 0;
}

/* A qXfer read's reply: 'm' and data (more may follow), 'l' and data (the last), else an error. */
int gdb_parse_xfer(const char *pkt, size_t len, const char **data, size_t *n)
{
	if (!len || (pkt[0] != 'm' && pkt[0] != 'l')) return -1;
	*data = pkt + 1;
	*n = len - 1;
	return pkt[0];
}

/* Target descriptions (GDB manual, "Target Description Format") pull in annexes with XInclude:
 * <xi:include href="64bit-core.xml"/>. Only that form is recognized; anything else is text. */
int gdb_parse_include(const char *xml, size_t from, size_t *at, size_t *end, char *href, size_t cap)
{
	const char *inc = strstr(xml + from, "<xi:include");
	if (!inc) return -1;
	const char *close = strstr(inc, "/>"), *h = strstr(inc, "href=\"");
	if (!close || !h || h > close) return -1;
	h += 6;
	const char *he = strchr(h, '"');
	if (!he || he > close || (size_t)(he - h) >= cap) return -1;
	memcpy(href, h, (size_t)(he - h));
	href[he - h] = 0;
	*at = (size_t)(inc - xml);
	*end = (size_t)(close + 2 - xml);
	return 0;
}

int gdb_state_is_ours(int status, const char *state)
{
	/* running: a `cont` raced our hold, and resuming changes nothing; plain `paused` is what the
	 * gdbstub's own stop makes (RUN_STATE_PAUSED); `debug` a breakpoint or step */
	return status == 0 || (status == 1 && (!state[0] || !strcmp(state, "debug")));
}
