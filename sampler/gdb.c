/* SPDX-License-Identifier: MIT */
/* gdb.c: gdbstub client -- handshake, register layout, vCPU list, stop/continue/detach, requests. */
#include "gdb.h"
#include "clock.h"
#include "err.h"
#include "qmp.h"
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#define REQ_TIMEOUT_MS(g) ((g)->req_ms > 0 ? (g)->req_ms : GDB_REQ_TIMEOUT_MS)
#define STOP_TIMEOUT_MS 1000 /* 0x03 -> stop reply; after this we ask with `?` */
#define MAX_RETRANSMIT 5
#define RESYNC_QUIET_MS 100  /* gdb_resync: the stream is drained once quiet this long ... */
#define RESYNC_MAX_MS 2000   /* ... or after this in all (a stub that never stops talking) */

static void take_conn_err(struct gdb *g)
{
	ERR_SET(g, g->conn.err ? g->conn.err : ERR_SYS, "%s", g->conn.errstr);
}

int gdb_write(struct gdb *g, const void *buf, size_t len)
{
	/* The pause watchdog's lock (guard.h): no write once the guard has resumed the VM. */
	if (g->gate && g->gate(g->gate_arg, 1) < 0) {
		ERR_SET(g, ERR_RESCUED, "the pause watchdog resumed the guest while gdbsample was held up");
		return -1;
	}
	if (len && (((const char *)buf)[0] == '$' || ((const char *)buf)[0] == '+')) g->owed = 0;
	g->sent_ms = now_ms(); /* replies are due from here */
	g->late_read = 0;
	int rc = conn_write(&g->conn, buf, len);
	int raced = g->gate && g->gate(g->gate_arg, 0) < 0;
	if (rc < 0) {
		take_conn_err(g);
		return -1;
	}
	if (raced) { /* written, but the guard resumed the VM meanwhile: the caller must gdb_resync */
		g->raced = 1;
		ERR_SET(g, ERR_RESCUED, "the pause watchdog resumed the guest while gdbsample was held up");
		return -1;
	}
	return 0;
}

int gdb_resync(struct gdb *g)
{
	/* The guard's bytes (guard.c): whatever our raced write did -- a 0x03 that stopped the VM
	 * again, a `$` that stopped a QEMU 7.2 VM and left the rest as noise -- they resume it. */
	static const char resume[] = "+\x03$c#63";
	g->raced = 0;
	g->running = 1;
	if (conn_write(&g->conn, resume, sizeof resume - 1) < 0) {
		take_conn_err(g);
		return -1;
	}
	/* Drop whatever was in flight (stop replies, replies to the raced batch) until the stub is
	 * quiet for RESYNC_QUIET_MS, at most RESYNC_MAX_MS. */
	long long end = now_ms() + RESYNC_MAX_MS;
	while (now_ms() < end) {
		ssize_t n = conn_read(&g->conn, g->rbuf, sizeof g->rbuf, RESYNC_QUIET_MS);
		if (n < 0) {
			take_conn_err(g);
			return -1;
		}
		if (n == 0) break;
	}
	g->roff = g->rlen = 0;
	rsp_dec_init(&g->dec);
	g->sent_ms = 0;
	return 0;
}

/* The first bytes of the connection (just read into rbuf) kept; 1 (error set) if they are a QEMU
 * monitor's greeting: -u or -p given a QMP or HMP socket, which would answer no request. */
static int not_a_stub(struct gdb *g)
{
	size_t k = sizeof g->first - g->firstlen < g->rlen ? sizeof g->first - g->firstlen : g->rlen;
	memcpy(g->first + g->firstlen, g->rbuf, k);
	g->firstlen += k;
	int kind = qmp_peer_kind(g->first, g->firstlen);
	const char *w = g->conn.where;
	int unix_path = w[0] == '/' || w[0] == '.';
	if (kind == QMP_PEER_QMP && unix_path)
		ERR_SET(g, ERR_USAGE, "%s is QEMU's QMP monitor socket, not a gdbstub: give it with --qmp %s "
			"(gdbsample then opens a gdbstub through it for the run)", w, w);
	else if (kind == QMP_PEER_QMP)
		ERR_SET(g, ERR_USAGE, "%s is QEMU's QMP monitor, not a gdbstub: --qmp takes a unix socket (QEMU "
			"-qmp unix:PATH,server=on,wait=off), through which gdbsample opens a gdbstub for the run", w);
	else if (kind == QMP_PEER_HMP)
		ERR_SET(g, ERR_USAGE, "%s is QEMU's human monitor (HMP), not a gdbstub: start QEMU with -gdb, type "
			"`gdbserver tcp:127.0.0.1:PORT` in that monitor, or give a QMP socket with --qmp", w);
	g->not_stub = kind != 0;
	return kind != 0;
}

enum gdb_ev gdb_next(struct gdb *g, int timeout_ms)
{
	/* The deadline counts from the request, so that no stream of acks, console packets or stray
	 * stop replies -- nor one byte every so often -- keeps a caller waiting past it. */
	long long deadline = timeout_ms < 0 ? -1 : (g->sent_ms ? g->sent_ms : now_ms()) + timeout_ms;
	for (;;) {
		while (g->roff < g->rlen) {
			size_t used;
			enum rsp_event ev = rsp_feed(&g->dec, g->rbuf + g->roff, g->rlen - g->roff, &used);
			g->roff += used;
			switch (ev) {
			case RSP_NONE:
			case RSP_ACK:
				continue;
			case RSP_NAK:
				g->st.naks++;
				return GDB_EV_NAK;
			case RSP_BADSUM:
			case RSP_OVERFLOW:
				g->st.badsum++;
				return GDB_EV_BAD;
			case RSP_PACKET:
				g->owed = 1;
				if (rsp_is_console(g->dec.pkt, g->dec.len)) {
					g->st.console++;
					size_t k = (g->dec.len - 1) / 2;
					if (g->capture && g->conslen + k < sizeof g->cons &&
					    !rsp_unhex((uint8_t *)g->cons + g->conslen, g->dec.pkt + 1, k))
						g->cons[g->conslen += k] = 0;
					continue;
				}
				return GDB_EV_PACKET;
			}
		}
		g->roff = g->rlen = 0;
		int wait = -1;
		if (deadline >= 0) {
			long long left = deadline - now_ms();
			if (left <= 0) {
				/* Past the deadline: one look at what already arrived (a caller that comes
				 * late still gets a reply that is there), then no more. */
				if (g->late_read) return GDB_EV_TIMEOUT;
				g->late_read = 1;
				left = 0;
			}
			wait = (int)left;
		}
		ssize_t n = conn_read(&g->conn, g->rbuf, sizeof g->rbuf, wait);
		if (n < 0) {
			take_conn_err(g);
			return GDB_EV_ERROR;
		}
		if (n == 0) return GDB_EV_TIMEOUT;
		g->rlen = (size_t)n;
		if (g->firstlen < sizeof g->first && not_a_stub(g)) return GDB_EV_ERROR;
	}
}

static int send_packet(struct gdb *g, const char *payload)
{
	int n = rsp_encode(g->last, sizeof g->last, payload, strlen(payload));
	if (n < 0) {
		ERR_SET(g, ERR_PROTO, "request too long: %.40s", payload);
		return -1;
	}
	g->lastlen = (size_t)n;
	return gdb_write(g, g->last, g->lastlen);
}

int gdb_request(struct gdb *g, const char *payload, int timeout_ms)
{
	int want_stop = payload[0] == '?' && payload[1] == 0;
	int tries = 0;
	if (send_packet(g, payload) < 0) return -1;
	for (;;) {
		switch (gdb_next(g, timeout_ms)) {
		case GDB_EV_PACKET:
			if (!want_stop && rsp_is_stop(g->dec.pkt, g->dec.len)) {
				g->st.stray_stops++; /* e.g. the stop reply QEMU sends when we connect */
				continue;
			}
			return 0;
		case GDB_EV_NAK: /* e.g. a client killed mid-packet left QEMU's parser mid-line */
		case GDB_EV_BAD:
			if (++tries > MAX_RETRANSMIT) {
				ERR_SET(g, ERR_PROTO, "request %.20s rejected %d times", payload, tries);
				return -1;
			}
			g->st.retransmits++;
			if (gdb_write(g, g->last, g->lastlen) < 0) return -1;
			continue;
		case GDB_EV_TIMEOUT:
			ERR_SET(g, ERR_TIMEOUT, "no reply to %.20s from %s", payload, g->conn.where);
			return -1;
		case GDB_EV_ERROR:
			return -1;
		}
	}
}

/* ---- pure parsers ---- */

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

/* ---- handshake ---- */

/* qfThreadInfo/qsThreadInfo until "l". Done once per attach; at most GDB_THREAD_QUERIES. */
static int list_threads(struct gdb *g)
{
	const char *q = "qfThreadInfo";
	g->ncpu = 0;
	for (int i = 0;; i++) {
		if (i == GDB_THREAD_QUERIES) {
			ERR_SET(g, ERR_PROTO, "the stub's thread list did not end after %d replies", i);
			return -1;
		}
		if (gdb_request(g, q, REQ_TIMEOUT_MS(g)) < 0) return -1;
		int rc = gdb_parse_threads(g->dec.pkt, g->dec.len, g->pids, g->tids, GDB_MAX_CPUS, &g->ncpu);
		if (rc == GDB_TL_END) break;
		if (rc == GDB_TL_FULL) {
			ERR_SET(g, ERR_PROTO, "more than %d vCPUs", GDB_MAX_CPUS);
			return -1;
		}
		if (rc < 0) {
			ERR_SET(g, ERR_PROTO, "%s thread list reply: %.40s", rc == GDB_TL_DUP ? "repeating" : "bad",
				g->dec.pkt);
			return -1;
		}
		q = "qsThreadInfo";
	}
	if (!g->ncpu) {
		ERR_SET(g, ERR_PROTO, "the stub lists no vCPUs");
		return -1;
	}
	return 0;
}

/* What one target description has cost so far (bounded: GDB_XML_*), and the includes being
 * expanded, outermost first (an annex that includes itself, however indirectly, is refused). */
struct xml_fetch {
	size_t total;                          /* bytes read, all annexes */
	int reads;                             /* qXfer requests */
	int files;                             /* annexes read */
	int depth;                             /* entries in path */
	char path[GDB_XML_DEPTH + 1][64];      /* annexes being expanded */
};

/* Read a whole qXfer:features annex into a malloc'd string. */
static char *read_annex(struct gdb *g, const char *annex, struct xml_fetch *f)
{
	size_t len = 0, cap = 4096;
	char *out = malloc(cap), req[256];
	int chunk = g->packet_size > 288 ? g->packet_size - 32 : 4096 - 32;
	if (chunk > 0xffb) chunk = 0xffb;
	if (!out) {
		ERR_SET(g, ERR_SYS, "out of memory");
		return NULL;
	}
	for (;;) {
		if (++f->reads > GDB_XML_READS) {
			ERR_SET(g, ERR_PROTO, "target description: no end after %d qXfer reads", GDB_XML_READS);
			break;
		}
		snprintf(req, sizeof req, "qXfer:features:read:%s:%zx,%x", annex, len, chunk);
		if (gdb_request(g, req, REQ_TIMEOUT_MS(g)) < 0) break;
		char kind = g->dec.pkt[0];
		if (kind != 'm' && kind != 'l') {
			ERR_SET(g, ERR_PROTO, "qXfer %s: %.20s", annex, g->dec.pkt);
			break;
		}
		size_t got = g->dec.len - 1;
		if (f->total + got > GDB_XML_MAX) {
			ERR_SET(g, ERR_PROTO, "target description larger than %d bytes", GDB_XML_MAX);
			break;
		}
		f->total += got;
		if (len + got + 1 > cap) {
			cap = (len + got + 1) * 2;
			char *n = realloc(out, cap);
			if (!n) {
				ERR_SET(g, ERR_SYS, "out of memory");
				break;
			}
			out = n;
		}
		memcpy(out + len, g->dec.pkt + 1, got);
		len += got;
		out[len] = 0;
		if (kind == 'l' || got == 0) return out;
	}
	free(out);
	return NULL;
}

/* The next <xi:include href="NAME"/> in xml at or after from: 0 with [*at, *end) its extent and
 * href its name, -1 if there is none (or it is malformed: then it is left as text). */
static int next_include(const char *xml, size_t from, size_t *at, size_t *end, char *href, size_t cap)
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

/* Annex with every <xi:include href="..."/> replaced by that annex's text, recursively. */
static char *read_features(struct gdb *g, const char *annex, struct xml_fetch *f)
{
	if (f->depth > GDB_XML_DEPTH) {
		ERR_SET(g, ERR_PROTO, "target description nests includes deeper than %d", GDB_XML_DEPTH);
		return NULL;
	}
	for (int d = 0; d < f->depth; d++)
		if (!strcmp(f->path[d], annex)) {
			ERR_SET(g, ERR_PROTO, "target description: %.60s includes itself", annex);
			return NULL;
		}
	if (++f->files > GDB_XML_FILES) {
		ERR_SET(g, ERR_PROTO, "target description: more than %d annexes", GDB_XML_FILES);
		return NULL;
	}
	char *xml = read_annex(g, annex, f);
	if (!xml) return NULL;
	snprintf(f->path[f->depth++], sizeof f->path[0], "%s", annex);
	size_t from = 0, at, end;
	char href[64];
	while (next_include(xml, from, &at, &end, href, sizeof href) == 0) {
		char *sub = read_features(g, href, f), *joined = NULL;
		size_t sl = sub ? strlen(sub) : 0, post = strlen(xml + end);
		if (sub && at + sl + post > GDB_XML_MAX)
			ERR_SET(g, ERR_PROTO, "target description larger than %d bytes", GDB_XML_MAX);
		else if (sub && !(joined = malloc(at + sl + post + 1)))
			ERR_SET(g, ERR_SYS, "out of memory");
		if (!joined) {
			free(sub);
			free(xml);
			return NULL;
		}
		memcpy(joined, xml, at);
		memcpy(joined + at, sub, sl);
		memcpy(joined + at + sl, xml + end, post + 1);
		free(sub);
		free(xml);
		xml = joined;
		from = at + sl; /* the included text is expanded already: go on after it */
	}
	f->depth--;
	return xml;
}

static int learn_layout(struct gdb *g, int has_xfer)
{
	if (!has_xfer) return arch_layout_default(&g->layout, arch_find("x86_64"));
	struct xml_fetch *f = calloc(1, sizeof *f);
	char *xml = f ? read_features(g, "target.xml", f) : NULL;
	free(f);
	if (!xml) {
		ERR_SET(g, ERR_PROTO, "cannot read target.xml");
		return -1;
	}
	int rc = arch_layout_xml(&g->layout, xml);
	free(xml);
	if (rc < 0) ERR_SET(g, ERR_PROTO, "%s", g->layout.errstr);
	return rc;
}

static void nap_10ms(void)
{
	struct timespec ts = { 0, 10 * 1000 * 1000 };
	nanosleep(&ts, NULL);
}

/*
 * Two gdbsample started at the same instant on one stub both saw it free, both connected; QEMU
 * accepted one, the other waited in the listener's backlog, gave up and closed -- and when the
 * first left, QEMU accepted that closed connection (the kernel keeps it queued), which paused the
 * VM with nobody left to resume it. So gdbsample clients of one endpoint take turns: each holds
 * a host-wide lock on the endpoint's name from before it looks at the listener until QEMU has
 * accepted it (or it gave up without connecting). The lock is an abstract unix socket bound to
 * "gdbsample-connect <endpoint>": the kernel drops it when its holder closes it or dies, however
 * (SIGKILL included), so no stale lock is ever left; any user can take it (no file, no mode).
 * It orders gdbsample clients only; a gdb racing us in the same millisecond is not covered.
 * Returns the lock's fd, -1 if no lock can be made here (go on without), -2 if another holder
 * kept it past until.
 */
static int endpoint_lock(const char *where, const char *path, long long until)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	char *real = path ? realpath(path, NULL) : NULL;
	snprintf(sun.sun_path + 1, sizeof sun.sun_path - 1, "gdbsample-connect %s", real ? real : where);
	free(real);
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 + strlen(sun.sun_path + 1));
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (fd < 0) return -1;
	while (bind(fd, (struct sockaddr *)&sun, len) < 0) {
		int busy = errno == EADDRINUSE;
		if (!busy || now_ms() >= until) {
			close(fd);
			return busy ? -2 : -1;
		}
		nap_10ms();
	}
	return fd;
}

/*
 * QEMU serves one gdbstub client. While one is attached, another's connect() still succeeds
 * (the kernel queues it on the listening socket, two deep) but QEMU never accepts it nor says
 * anything -- until the first client leaves: then it accepts the queued connection, even one
 * closed long ago, and that pauses the VM for good. Checked with QEMU 7.2. So: do not connect
 * while the host's kernel lists an accepted client on the stub's socket; and once connected
 * (after a race with another client, or where that cannot be seen), wait for QEMU to accept us.
 * Both within GDB_ACCEPT_MS, then give up -- without having sent a byte, which could stop a
 * running VM. Other gdbsample clients are kept out of that race by the endpoint lock.
 */
int gdb_connect(struct gdb *g, const char *host, int port, const char *path)
{
	char where[128];
	long long until = now_ms() + GDB_ACCEPT_MS;
	memset(g, 0, sizeof *g);
	rsp_dec_init(&g->dec);
	g->conn.fd = -1;
	conn_where(where, sizeof where, host, port, path);
	int lock = endpoint_lock(where, path, until);
	if (lock == -2) goto busy;
	while (conn_listener_taken(host, port, path) == 1) { /* the other client may be leaving */
		if (now_ms() >= until) goto busy;
		nap_10ms();
	}
	if (conn_open(&g->conn, host, port, path) < 0) {
		char hint[512];
		conn_stub_hint(hint, sizeof hint, g->conn.open_errno, host, port, path);
		ERR_SET(g, g->conn.err ? g->conn.err : ERR_SYS, "%s%s", g->conn.errstr, hint);
		if (lock >= 0) close(lock);
		return -1;
	}
	while (conn_peer_state(&g->conn) == CONN_QUEUED) {
		if (now_ms() >= until) {
			conn_close(&g->conn);
			goto busy;
		}
		nap_10ms();
	}
	if (lock >= 0) close(lock); /* accepted: whoever comes next sees the stub taken */
	return 0;
busy:
	if (lock >= 0) close(lock);
	ERR_SET(g, ERR_PROTO, "the gdbstub at %s is in use by another client (gdb or gdbsample?)", where);
	return -1;
}

/* A monitor command through the stub: qRcmd relays its output as 'O' packets, then "OK". Its
 * text in g->cons ("" from a stub without qRcmd, which answers ""); -1 on a lost connection. */
static int monitor_cmd(struct gdb *g, const char *cmd)
{
	char req[96] = "qRcmd,";
	for (size_t i = 0; cmd[i] && 6 + 2 * i + 3 <= sizeof req; i++)
		snprintf(req + 6 + 2 * i, 3, "%02x", (unsigned char)cmd[i]);
	g->capture = 1;
	g->conslen = 0;
	g->cons[0] = 0;
	int rc = gdb_request(g, req, REQ_TIMEOUT_MS(g));
	g->capture = 0;
	return rc;
}

/* The QEMU version behind the stub: "info version" prints "7.2.15 (Debian 1:7.2+dfsg-7+deb12u18)".
 * 0 if the stub is not QEMU or says nothing we can read. */
static int stub_version(struct gdb *g)
{
	int major = 0, minor = 0;
	if (monitor_cmd(g, "info version") < 0 || sscanf(g->cons, "%d.%d", &major, &minor) != 2 || major < 0 ||
	    major > 99 || minor < 0 || minor > 99)
		return 0;
	return major * 100 + minor;
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
			if ((*q < 'a' || *q > 'z') && *q != '-') return -1;
	}
	return 1;
}

int gdb_handshake(struct gdb *g)
{
	/* Connecting stopped the VM (QEMU 7.2 also sent a stop reply unasked; gdb_request skips it). */
	if (gdb_request(g, "qSupported:multiprocess+;xmlRegisters=i386;qXfer:features:read+",
			REQ_TIMEOUT_MS(g)) < 0)
		return -1;
	const char *s = g->dec.pkt, *ps = strstr(s, "PacketSize=");
	long psize = ps ? strtol(ps + 11, NULL, 16) : 0;
	g->packet_size = psize > 0 && psize <= RSP_PKT_MAX ? (int)psize : 0;
	g->multiprocess = strstr(s, "multiprocess+") != NULL;
	int has_xfer = strstr(s, "qXfer:features:read+") != NULL;
	int noack = strstr(s, "QStartNoAckMode+") != NULL;
	if (noack && gdb_request(g, "QStartNoAckMode", REQ_TIMEOUT_MS(g)) == 0 && !strcmp(g->dec.pkt, "OK"))
		g->noack = 1;
	/* Whether the VM was paused before we connected: QEMU < 8.1 greets a client whose connection
	 * stopped a running VM with a stop reply (the accept handler stops the VM before any byte of
	 * ours is read, so the greeting comes before qSupported's answer), and greets none if it was
	 * stopped already. QEMU >= 8.1 sends stop replies only when a client may expect one (after
	 * c/s/vCont/?/0x03: "gdbstub: only send stop-reply packets when allowed to") and greets no
	 * client. So the greeting is evidence only with the version known (session.c decides). */
	g->greeted = g->st.stray_stops > 0;
	g->qemu_version = stub_version(g);
	/* A run state other than plain `paused` (-S's prelaunch, an incoming or finished migration,
	 * a shutdown kept with -no-shutdown, a panic...) is not what connecting makes: not ours. */
	g->runstate[0] = 0;
	if (g->qemu_version && monitor_cmd(g, "info status") == 0)
		gdb_parse_status(g->cons, g->runstate, sizeof g->runstate);
	if (gdb_request(g, "?", REQ_TIMEOUT_MS(g)) < 0) return -1;
	if (learn_layout(g, has_xfer) < 0) return -1;
	return list_threads(g);
}

int gdb_stop(struct gdb *g)
{
	if (gdb_write(g, "\x03", 1) < 0) return -1;
	g->running = 0;
	for (;;) {
		switch (gdb_next(g, STOP_TIMEOUT_MS)) {
		case GDB_EV_PACKET:
			if (rsp_is_stop(g->dec.pkt, g->dec.len)) return 0;
			continue; /* a late reply from an earlier batch */
		case GDB_EV_NAK:
		case GDB_EV_BAD:
			continue;
		case GDB_EV_TIMEOUT: /* VM was already stopped: 0x03 is discarded without a reply */
			g->st.recover++;
			return gdb_request(g, "?", REQ_TIMEOUT_MS(g));
		case GDB_EV_ERROR:
			return -1;
		}
	}
}

int gdb_take_unasked(struct gdb *g, int *sig)
{
	int stops = 0;
	for (;;) {
		while (g->roff < g->rlen) {
			size_t used;
			enum rsp_event ev = rsp_feed(&g->dec, g->rbuf + g->roff, g->rlen - g->roff, &used);
			g->roff += used;
			struct gdb_stopinfo si;
			if (ev != RSP_PACKET) continue; /* acks, and noise: nothing was asked */
			g->owed = 1;
			if (rsp_is_console(g->dec.pkt, g->dec.len)) {
				g->st.console++;
			} else if (gdb_parse_stop(g->dec.pkt, g->dec.len, &si) == 0) {
				g->st.stray_stops++;
				*sig = si.sig;
				stops++;
			}
		}
		g->roff = g->rlen = 0;
		ssize_t n = recv(g->conn.fd, g->rbuf, sizeof g->rbuf, MSG_DONTWAIT);
		if (n > 0) {
			g->rlen = (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR) continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return stops;
		ERR_SET(g, ERR_EOF, "connection to %s closed%s%s", g->conn.where, n ? ": " : "", n ? strerror(errno) : "");
		return -1;
	}
}

int gdb_probe_stop(struct gdb *g)
{
	/* The owed '+' first, only if one is owed: QEMU 7.2 drops the 0x03 while a reply of its
	 * waits for an ack, and a '+' that is not owed stops a running VM (silently on >= 8.1). */
	static const char probe[] = "+\x03$qC#b4";
	int stopped = 0, skip = !g->owed;
	if (gdb_write(g, probe + skip, sizeof probe - 1 - (size_t)skip) < 0) return -1;
	for (;;) {
		switch (gdb_next(g, REQ_TIMEOUT_MS(g))) {
		case GDB_EV_PACKET:
			if (rsp_is_stop(g->dec.pkt, g->dec.len)) {
				stopped = 1; /* ours: it comes before qC's answer, which the stop let through */
				continue;
			}
			if (g->dec.pkt[0] != 'Q' || g->dec.pkt[1] != 'C') continue; /* a late reply */
			g->running = !stopped ? g->running : 0;
			return stopped;
		case GDB_EV_NAK:
		case GDB_EV_BAD:
			if (gdb_write(g, "$qC#b4", 6) < 0) return -1;
			continue;
		case GDB_EV_TIMEOUT:
			ERR_SET(g, ERR_TIMEOUT, "no reply to qC from %s", g->conn.where);
			return -1;
		case GDB_EV_ERROR:
			return -1;
		}
	}
}

int gdb_alive(struct gdb *g, int pid, int tid)
{
	char req[32];
	if (g->multiprocess) snprintf(req, sizeof req, "Tp%x.%x", pid, tid);
	else snprintf(req, sizeof req, "T%x", tid);
	if (gdb_request(g, req, REQ_TIMEOUT_MS(g)) < 0) return -1;
	return !strcmp(g->dec.pkt, "OK");
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

int gdb_cont(struct gdb *g)
{
	if (gdb_write(g, "$c#63", 5) < 0) return -1;
	g->running = 1;
	return 0;
}

int gdb_sync(struct gdb *g)
{
	if (send_packet(g, "qC") < 0) return -1;
	for (;;) {
		enum gdb_ev ev = gdb_next(g, REQ_TIMEOUT_MS(g));
		if (ev == GDB_EV_PACKET && g->dec.pkt[0] == 'Q' && g->dec.pkt[1] == 'C') return 0;
		if (ev == GDB_EV_ERROR) return -1;
		if (ev == GDB_EV_TIMEOUT) {
			ERR_SET(g, ERR_TIMEOUT, "no reply to qC from %s", g->conn.where);
			return -1;
		}
	}
}

int gdb_detach(struct gdb *g)
{
	/* QEMU takes D;1 with or without multiprocess; a bare D fails (E22) once any client has
	 * enabled multiprocess, which lasts as long as the QEMU process. */
	if (gdb_request(g, "D;1", REQ_TIMEOUT_MS(g)) < 0) return -1;
	if (strcmp(g->dec.pkt, "OK")) {
		ERR_SET(g, ERR_PROTO, "detach refused: %.20s", g->dec.pkt);
		return -1;
	}
	return 0;
}

void gdb_hg(const struct gdb *g, int cpu, char *out, size_t cap)
{
	if (g->multiprocess) snprintf(out, cap, "Hgp%x.%x", g->pids[cpu], g->tids[cpu]);
	else snprintf(out, cap, "Hg%x", g->tids[cpu]);
}

static int select_cpu(struct gdb *g, int cpu)
{
	char hg[32];
	gdb_hg(g, cpu, hg, sizeof hg);
	if (gdb_request(g, hg, REQ_TIMEOUT_MS(g)) < 0) return -1;
	if (strcmp(g->dec.pkt, "OK")) {
		ERR_SET(g, ERR_PROTO, "%s refused: %.20s", hg, g->dec.pkt);
		return -1;
	}
	return 0;
}

int gdb_regs(struct gdb *g, int cpu, uint8_t *regs, int cap)
{
	if (select_cpu(g, cpu) < 0 || gdb_request(g, "g", REQ_TIMEOUT_MS(g)) < 0) return -1;
	int n = (int)(g->dec.len / 2);
	if (rsp_is_error(g->dec.pkt, g->dec.len) || g->dec.len % 2 || n > cap || rsp_unhex(regs, g->dec.pkt, (size_t)n)) {
		ERR_SET(g, ERR_PROTO, "bad g reply: %.20s", g->dec.pkt);
		return -1;
	}
	if (n < g->layout.need) { /* pc, sp or fp would read as 0: not a sample */
		ERR_SET(g, ERR_PROTO, "g reply of %d bytes; the register layout needs %d", n, g->layout.need);
		return -1;
	}
	return n;
}

int gdb_reg(struct gdb *g, int cpu, int num, uint64_t *val)
{
	char req[32];
	uint8_t b[8] = { 0 };
	snprintf(req, sizeof req, "p%x", num);
	if (select_cpu(g, cpu) < 0 || gdb_request(g, req, REQ_TIMEOUT_MS(g)) < 0) return -1;
	size_t n = g->dec.len / 2;
	if (rsp_is_error(g->dec.pkt, g->dec.len) || !n || n > 8 || g->dec.len % 2 || rsp_unhex(b, g->dec.pkt, n)) return -2;
	*val = rsp_le(b, (int)n);
	return 0;
}

int gdb_mem(struct gdb *g, int cpu, uint64_t addr, uint8_t *out, int len)
{
	char req[64];
	if (len > GDB_MEM_MAX) len = GDB_MEM_MAX;
	if (cpu >= 0 && select_cpu(g, cpu) < 0) return -1;
	snprintf(req, sizeof req, "m%llx,%x", (unsigned long long)addr, len);
	if (gdb_request(g, req, REQ_TIMEOUT_MS(g)) < 0) return -1;
	if (rsp_is_error(g->dec.pkt, g->dec.len) || g->dec.len != (size_t)len * 2) return -2;
	return rsp_unhex(out, g->dec.pkt, (size_t)len) ? -2 : 0;
}

#define BLOCK_BATCH 32 /* `m` requests per write in gdb_read_block (~1 KB of requests) */

int gdb_read_block(struct gdb *g, int cpu, uint64_t addr, uint8_t *out, size_t len)
{
	char buf[BLOCK_BATCH * 40], req[64];
	int unmapped = 0;
	if (select_cpu(g, cpu) < 0) return -1;
	for (size_t off = 0; off < len;) {
		size_t boff = 0, at[BLOCK_BATCH], n[BLOCK_BATCH];
		int k = 0;
		for (; k < BLOCK_BATCH && off < len; k++) {
			n[k] = len - off < GDB_MEM_MAX ? len - off : GDB_MEM_MAX;
			at[k] = off;
			snprintf(req, sizeof req, "m%llx,%zx", (unsigned long long)(addr + off), n[k]);
			if (rsp_append(buf, sizeof buf, &boff, req) < 0) break;
			off += n[k];
		}
		if (gdb_write(g, buf, boff) < 0) return -1;
		for (int i = 0; i < k;) { /* every reply is read, even after an error, to stay in step */
			enum gdb_ev ev = gdb_next(g, REQ_TIMEOUT_MS(g));
			if (ev == GDB_EV_ERROR) return -1;
			if (ev == GDB_EV_TIMEOUT) {
				ERR_SET(g, ERR_TIMEOUT, "no reply to a memory read from %s", g->conn.where);
				return -1;
			}
			if (ev == GDB_EV_PACKET && rsp_is_stop(g->dec.pkt, g->dec.len)) {
				g->st.stray_stops++;
				continue;
			}
			if (ev != GDB_EV_PACKET || g->dec.len != n[i] * 2 ||
			    rsp_unhex(out + at[i], g->dec.pkt, n[i]))
				unmapped = 1;
			i++;
		}
	}
	return unmapped ? -2 : 0;
}

void gdb_close(struct gdb *g)
{
	conn_close(&g->conn);
}
