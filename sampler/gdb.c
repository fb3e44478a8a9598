/* gdb.c: gdbstub client -- handshake, register layout, vCPU list, stop/continue/detach, requests. */
#include "gdb.h"
#include "err.h"
#include <stdlib.h>
#include <time.h>

#define REQ_TIMEOUT_MS 3000 /* a single request; QEMU answers in well under a millisecond */
#define STOP_TIMEOUT_MS 1000 /* 0x03 -> stop reply; after this we ask with `?` */
#define MAX_RETRANSMIT 5

static long long now_ms(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1000LL + ts.tv_nsec / 1000000;
}

static void take_conn_err(struct gdb *g)
{
	ERR_SET(g, g->conn.err ? g->conn.err : ERR_SYS, "%s", g->conn.errstr);
}

int gdb_write(struct gdb *g, const void *buf, size_t len)
{
	if (conn_write(&g->conn, buf, len) < 0) {
		take_conn_err(g);
		return -1;
	}
	return 0;
}

enum gdb_ev gdb_next(struct gdb *g, int timeout_ms)
{
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
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
				if (rsp_is_console(g->dec.pkt, g->dec.len)) {
					g->st.console++;
					continue;
				}
				return GDB_EV_PACKET;
			}
		}
		g->roff = g->rlen = 0;
		int wait = -1;
		if (deadline >= 0) {
			long long left = deadline - now_ms();
			wait = left < 0 ? 0 : (int)left;
		}
		ssize_t n = conn_read(&g->conn, g->rbuf, sizeof g->rbuf, wait);
		if (n < 0) {
			take_conn_err(g);
			return GDB_EV_ERROR;
		}
		if (n == 0) return GDB_EV_TIMEOUT;
		g->rlen = (size_t)n;
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

int gdb_parse_tid(const char *s, const char **end)
{
	char *e;
	if (*s == 'p') {
		strtol(s + 1, &e, 16);
		if (*e != '.') return -1;
		s = e + 1;
	}
	long t = strtol(s, &e, 16);
	if (e == s || t < 0) return -1;
	if (end) *end = e;
	return (int)t;
}

static int parse_pid(const char *s)
{
	return *s == 'p' ? (int)strtol(s + 1, NULL, 16) : 1;
}

/* qfThreadInfo/qsThreadInfo: "m<id>[,<id>...]" per reply, "l" at the end. Done once per attach. */
static int list_threads(struct gdb *g)
{
	const char *q = "qfThreadInfo";
	g->ncpu = 0;
	for (;;) {
		if (gdb_request(g, q, REQ_TIMEOUT_MS) < 0) return -1;
		const char *p = g->dec.pkt;
		if (*p == 'l') break;
		if (*p != 'm') {
			ERR_SET(g, ERR_PROTO, "bad thread list reply: %.40s", p);
			return -1;
		}
		p++;
		while (*p) {
			const char *e;
			int pid = parse_pid(p), tid = gdb_parse_tid(p, &e);
			if (tid < 0) {
				ERR_SET(g, ERR_PROTO, "bad thread id in %.40s", g->dec.pkt);
				return -1;
			}
			if (g->ncpu == GDB_MAX_CPUS) {
				ERR_SET(g, ERR_PROTO, "more than %d vCPUs", GDB_MAX_CPUS);
				return -1;
			}
			g->pids[g->ncpu] = pid;
			g->tids[g->ncpu++] = tid;
			p = *e == ',' ? e + 1 : e;
			if (*e && *e != ',') break;
		}
		q = "qsThreadInfo";
	}
	if (!g->ncpu) {
		ERR_SET(g, ERR_PROTO, "the stub lists no vCPUs");
		return -1;
	}
	return 0;
}

/* Read a whole qXfer:features annex into a malloc'd string. */
static char *read_annex(struct gdb *g, const char *annex)
{
	size_t len = 0, cap = 4096;
	char *out = malloc(cap), req[256];
	int chunk = (g->packet_size ? g->packet_size : 4096) - 32;
	if (chunk > 0xffb) chunk = 0xffb;
	if (!out) return NULL;
	for (;;) {
		snprintf(req, sizeof req, "qXfer:features:read:%s:%zx,%x", annex, len, chunk);
		if (gdb_request(g, req, REQ_TIMEOUT_MS) < 0) break;
		char kind = g->dec.pkt[0];
		if (kind != 'm' && kind != 'l') {
			ERR_SET(g, ERR_PROTO, "qXfer %s: %.20s", annex, g->dec.pkt);
			break;
		}
		if (len + g->dec.len + 1 > cap) {
			cap = (len + g->dec.len + 1) * 2;
			char *n = realloc(out, cap);
			if (!n) break;
			out = n;
		}
		memcpy(out + len, g->dec.pkt + 1, g->dec.len - 1);
		len += g->dec.len - 1;
		out[len] = 0;
		if (kind == 'l') return out;
		if (g->dec.len <= 1) return out;
	}
	free(out);
	return NULL;
}

/* target.xml with every <xi:include href="..."/> replaced by that annex's text (one level deep
 * per call, recursing for nested includes). */
static char *read_features(struct gdb *g, const char *annex, int depth)
{
	char *xml = read_annex(g, annex);
	if (!xml || depth > 3) return xml;
	char *inc;
	while ((inc = strstr(xml, "<xi:include"))) {
		char href[64] = "";
		char *h = strstr(inc, "href=\""), *end = strstr(inc, "/>");
		if (!h || !end) break;
		h += 6;
		char *he = strchr(h, '"');
		if (!he || (size_t)(he - h) >= sizeof href) break;
		memcpy(href, h, (size_t)(he - h));
		char *sub = read_features(g, href, depth + 1);
		if (!sub) {
			free(xml);
			return NULL;
		}
		size_t pre = (size_t)(inc - xml), post = strlen(end + 2);
		char *joined = malloc(pre + strlen(sub) + post + 1);
		if (!joined) {
			free(sub);
			free(xml);
			return NULL;
		}
		memcpy(joined, xml, pre);
		strcpy(joined + pre, sub);
		strcat(joined, end + 2);
		free(sub);
		free(xml);
		xml = joined;
	}
	return xml;
}

static int learn_layout(struct gdb *g, int has_xfer)
{
	if (!has_xfer) return arch_layout_default(&g->layout, arch_find("x86_64"));
	char *xml = read_features(g, "target.xml", 0);
	if (!xml) {
		ERR_SET(g, ERR_PROTO, "cannot read target.xml");
		return -1;
	}
	int rc = arch_layout_xml(&g->layout, xml);
	free(xml);
	if (rc < 0) ERR_SET(g, ERR_PROTO, "%s", g->layout.errstr);
	return rc;
}

int gdb_connect(struct gdb *g, const char *host, int port, const char *path)
{
	memset(g, 0, sizeof *g);
	rsp_dec_init(&g->dec);
	if (conn_open(&g->conn, host, port, path) < 0) {
		take_conn_err(g);
		return -1;
	}
	return 0;
}

int gdb_handshake(struct gdb *g)
{
	/* Connecting stopped the VM (QEMU sent an unsolicited stop reply; gdb_request skips it). */
	if (gdb_request(g, "qSupported:multiprocess+;xmlRegisters=i386;qXfer:features:read+",
			REQ_TIMEOUT_MS) < 0)
		return -1;
	const char *s = g->dec.pkt, *ps = strstr(s, "PacketSize=");
	g->packet_size = ps ? (int)strtol(ps + 11, NULL, 16) : 0;
	g->multiprocess = strstr(s, "multiprocess+") != NULL;
	int has_xfer = strstr(s, "qXfer:features:read+") != NULL;
	int noack = strstr(s, "QStartNoAckMode+") != NULL;
	if (noack && gdb_request(g, "QStartNoAckMode", REQ_TIMEOUT_MS) == 0 && !strcmp(g->dec.pkt, "OK"))
		g->noack = 1;
	/* QEMU greets a new client with a stop reply only if connecting stopped a running VM. */
	g->was_paused = g->st.stray_stops == 0;
	if (gdb_request(g, "?", REQ_TIMEOUT_MS) < 0) return -1;
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
			return gdb_request(g, "?", REQ_TIMEOUT_MS);
		case GDB_EV_ERROR:
			return -1;
		}
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
		enum gdb_ev ev = gdb_next(g, REQ_TIMEOUT_MS);
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
	if (gdb_request(g, "D;1", REQ_TIMEOUT_MS) < 0) return -1;
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
	if (gdb_request(g, hg, REQ_TIMEOUT_MS) < 0) return -1;
	if (strcmp(g->dec.pkt, "OK")) {
		ERR_SET(g, ERR_PROTO, "%s refused: %.20s", hg, g->dec.pkt);
		return -1;
	}
	return 0;
}

int gdb_regs(struct gdb *g, int cpu, uint8_t *regs, int cap)
{
	if (select_cpu(g, cpu) < 0 || gdb_request(g, "g", REQ_TIMEOUT_MS) < 0) return -1;
	int n = (int)g->dec.len / 2;
	if (rsp_is_error(g->dec.pkt, g->dec.len) || n > cap || rsp_unhex(regs, g->dec.pkt, (size_t)n)) {
		ERR_SET(g, ERR_PROTO, "bad g reply: %.20s", g->dec.pkt);
		return -1;
	}
	return n;
}

int gdb_mem(struct gdb *g, int cpu, uint64_t addr, uint8_t *out, int len)
{
	char req[64];
	if (len > GDB_MEM_MAX) len = GDB_MEM_MAX;
	if (cpu >= 0 && select_cpu(g, cpu) < 0) return -1;
	snprintf(req, sizeof req, "m%llx,%x", (unsigned long long)addr, len);
	if (gdb_request(g, req, REQ_TIMEOUT_MS) < 0) return -1;
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
			enum gdb_ev ev = gdb_next(g, REQ_TIMEOUT_MS);
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
