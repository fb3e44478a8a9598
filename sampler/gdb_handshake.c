/* SPDX-License-Identifier: MIT */
/* gdb_handshake.c: getting onto a gdbstub -- taking turns to connect, qSupported, the run state,
 * target.xml with its includes, the vCPU list. */
#include "gdb.h"
#include "clock.h"
#include "err.h"
#include <stddef.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

/* ---- connecting ---- */

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

/* ---- the handshake ---- */

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
	int rc = gdb_request(g, req, gdb_req_ms(g));
	g->capture = 0;
	return rc;
}

int gdb_run_state(struct gdb *g, char *state, size_t cap)
{
	if (monitor_cmd(g, "info status") < 0) return -1;
	int rc = gdb_parse_status(g->cons, state, cap);
	if (rc < 0) ERR_SET(g, ERR_PROTO, "unreadable \"info status\" from %s: %.60s", g->conn.where, g->cons);
	return rc;
}

int gdb_migrating(struct gdb *g)
{
	if (monitor_cmd(g, "info migrate") < 0) return -1;
	int rc = gdb_parse_migration(g->cons);
	return rc < 0 ? 2 : rc;
}

int gdb_replay_info(struct gdb *g, uint64_t *icount)
{
	if (monitor_cmd(g, "info replay") < 0) return -1;
	int rc = gdb_parse_replay(g->cons, icount);
	if (rc < 0) ERR_SET(g, ERR_PROTO, "unreadable \"info replay\" from %s: %.60s", g->conn.where, g->cons);
	return rc;
}

int gdb_replay_break(struct gdb *g, uint64_t icount)
{
	char cmd[48];
	snprintf(cmd, sizeof cmd, "replay_break %llu", (unsigned long long)icount);
	if (monitor_cmd(g, cmd) < 0) return -1;
	if (!g->cons[0]) return 0; /* hmp_replay_break says nothing when it set the breakpoint */
	size_t n = strcspn(g->cons, "\r\n");
	ERR_SET(g, ERR_PROTO, "QEMU refused replay_break %llu: %.*s", (unsigned long long)icount, (int)(n < 200 ? n : 200),
		g->cons);
	return -1;
}

int gdb_monitor_cont(struct gdb *g)
{
	if (monitor_cmd(g, "cont") < 0) return -1;
	if (gdb_parse_cont(g->cons)) return 1;
	g->running = 1;
	return 0;
}

/* The QEMU version behind the stub: "info version" prints "7.2.15 (Debian 1:7.2+dfsg-7+deb12u18)".
 * 0 if the stub is not QEMU or says nothing we can read. */
static int stub_version(struct gdb *g)
{
	return monitor_cmd(g, "info version") < 0 ? 0 : gdb_parse_version(g->cons);
}

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
		if (gdb_request(g, q, gdb_req_ms(g)) < 0) return -1;
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

/* ---- the target description ---- */

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
		if (gdb_request(g, req, gdb_req_ms(g)) < 0) break;
		const char *data;
		size_t got;
		int kind = gdb_parse_xfer(g->dec.pkt, g->dec.len, &data, &got);
		if (kind < 0) {
			ERR_SET(g, ERR_PROTO, "qXfer %s: %.20s", annex, g->dec.pkt);
			break;
		}
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
		memcpy(out + len, data, got);
		len += got;
		out[len] = 0;
		if (kind == 'l' || got == 0) return out;
	}
	free(out);
	return NULL;
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
	while (gdb_parse_include(xml, from, &at, &end, href, sizeof href) == 0) {
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

/* The register layout: from target.xml if the stub serves it, else x86_64's default. */
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

/* ---- all of it, in order ---- */

int gdb_handshake(struct gdb *g)
{
	/* Connecting stopped the VM (QEMU 7.2 also sent a stop reply unasked; gdb_request skips it). */
	if (gdb_request(g, "qSupported:multiprocess+;xmlRegisters=i386;qXfer:features:read+",
			gdb_req_ms(g)) < 0)
		return -1;
	struct gdb_features f;
	gdb_parse_supported(g->dec.pkt, &f);
	g->packet_size = f.packet_size;
	g->multiprocess = f.multiprocess;
	if (f.noack && gdb_request(g, "QStartNoAckMode", gdb_req_ms(g)) == 0 && !strcmp(g->dec.pkt, "OK"))
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
	if (gdb_request(g, "?", gdb_req_ms(g)) < 0) return -1;
	if (learn_layout(g, f.xfer_features) < 0) return -1;
	return list_threads(g);
}
