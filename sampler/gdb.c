/* SPDX-License-Identifier: MIT */
/* gdb.c: gdbstub request stream -- packets out, replies in, pipelined batches, stop/continue/detach. */
#include "gdb.h"
#include "clock.h"
#include "err.h"
#include "qmp.h"
#include "wirelog.h"
#include <sys/socket.h>

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
			return gdb_request(g, "?", gdb_req_ms(g));
		case GDB_EV_ERROR:
			return -1;
		}
	}
}

int gdb_cont_until_stop(struct gdb *g, int timeout_ms, volatile sig_atomic_t *intr, int *code)
{
	if (gdb_cont(g) < 0) return -1;
	/* gdb_next's timeout counts from the `c`: wait in growing steps, looking at *intr between. */
	for (int t = 100;; t = t + 100 < timeout_ms ? t + 100 : timeout_ms) {
		g->late_read = 0;
		switch (gdb_next(g, t)) {
		case GDB_EV_PACKET: {
			struct gdb_stopinfo si;
			if (gdb_parse_stop(g->dec.pkt, g->dec.len, &si) < 0) continue; /* a late reply */
			g->running = 0;
			if (si.kind == 'W' || si.kind == 'X') {
				*code = si.sig;
				return 1;
			}
			return 0;
		}
		case GDB_EV_NAK:
		case GDB_EV_BAD:
			continue;
		case GDB_EV_ERROR:
			return -1;
		case GDB_EV_TIMEOUT:
			if (intr && *intr) return gdb_stop(g) < 0 ? -1 : 2;
			if (t < timeout_ms) continue;
			ERR_SET(g, ERR_TIMEOUT, "%s did not stop within %d s of `c`", g->conn.where, timeout_ms / 1000);
			gdb_stop(g);
			return -1;
		}
	}
}

int gdb_wait_stop(struct gdb *g, int timeout_ms, struct gdb_stopinfo *si)
{
	for (;;) {
		switch (gdb_next(g, timeout_ms)) {
		case GDB_EV_PACKET:
			if (gdb_parse_stop(g->dec.pkt, g->dec.len, si) < 0) continue; /* a late reply */
			g->running = 0;
			return 0;
		case GDB_EV_NAK:
		case GDB_EV_BAD:
			continue;
		case GDB_EV_ERROR:
			return -1;
		case GDB_EV_TIMEOUT:
			return 1;
		}
	}
}

int gdb_step(struct gdb *g, int cpu, struct gdb_stopinfo *si)
{
	char req[48];
	if (g->multiprocess) snprintf(req, sizeof req, "vCont;s:p%x.%x", g->pids[cpu], g->tids[cpu]);
	else snprintf(req, sizeof req, "vCont;s:%x", g->tids[cpu]);
	if (send_packet(g, req) < 0) return -1;
	g->running = 1;
	int r = gdb_wait_stop(g, gdb_req_ms(g), si);
	if (r == 1) {
		ERR_SET(g, ERR_TIMEOUT, "%s did not stop after a single step of vCPU %d", g->conn.where, cpu);
		gdb_stop(g);
		return -1;
	}
	return r;
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
			wirelog(g->conn.where, '<', g->rbuf, (size_t)n);
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
		switch (gdb_next(g, gdb_req_ms(g))) {
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
	if (gdb_request(g, req, gdb_req_ms(g)) < 0) return -1;
	return !strcmp(g->dec.pkt, "OK");
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
		enum gdb_ev ev = gdb_next(g, gdb_req_ms(g));
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
	if (gdb_request(g, "D;1", gdb_req_ms(g)) < 0) return -1;
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
	if (gdb_request(g, hg, gdb_req_ms(g)) < 0) return -1;
	if (strcmp(g->dec.pkt, "OK")) {
		ERR_SET(g, ERR_PROTO, "%s refused: %.20s", hg, g->dec.pkt);
		return -1;
	}
	return 0;
}

int gdb_regs(struct gdb *g, int cpu, uint8_t *regs, int cap)
{
	if (select_cpu(g, cpu) < 0 || gdb_request(g, "g", gdb_req_ms(g)) < 0) return -1;
	int n = gdb_parse_regs(g->dec.pkt, g->dec.len, regs, cap);
	if (n < 0) {
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
	snprintf(req, sizeof req, "p%x", num);
	if (select_cpu(g, cpu) < 0 || gdb_request(g, req, gdb_req_ms(g)) < 0) return -1;
	return gdb_parse_reg(g->dec.pkt, g->dec.len, val) < 0 ? -2 : 0;
}

int gdb_mem(struct gdb *g, int cpu, uint64_t addr, uint8_t *out, int len)
{
	char req[64];
	if (len > GDB_MEM_MAX) len = GDB_MEM_MAX;
	if (cpu >= 0 && select_cpu(g, cpu) < 0) return -1;
	snprintf(req, sizeof req, "m%llx,%x", (unsigned long long)addr, len);
	if (gdb_request(g, req, gdb_req_ms(g)) < 0) return -1;
	return gdb_parse_mem(g->dec.pkt, g->dec.len, out, (size_t)len) < 0 ? -2 : 0;
}

#define BLOCK_BATCH 32 /* `m` requests per write in gdb_read_block (~1 KB of requests) */

/* The next reply that is not a stray stop reply: 0, or -1 (g->err set). */
static int next_reply(struct gdb *g, const char *what)
{
	for (;;) {
		enum gdb_ev ev = gdb_next(g, gdb_req_ms(g));
		if (ev == GDB_EV_ERROR) return -1;
		if (ev == GDB_EV_TIMEOUT) {
			ERR_SET(g, ERR_TIMEOUT, "no reply to %s from %s", what, g->conn.where);
			return -1;
		}
		if (ev == GDB_EV_PACKET && rsp_is_stop(g->dec.pkt, g->dec.len)) {
			g->st.stray_stops++;
			continue;
		}
		return ev == GDB_EV_PACKET ? 0 : 1;
	}
}

/* The vCPU's Hg goes in the first write, before the `m`s: one round trip for a few blocks, not
 * two (a refused Hg still has every reply read, to stay in step, and fails the read). */
int gdb_read_blocks(struct gdb *g, int cpu, struct gdb_block *b, int nb)
{
	char buf[BLOCK_BATCH * 40 + 64], req[64];
	int unmapped = 0, blk = 0, hg = 1, refused = 0;
	size_t off = 0;
	if (nb < 1) return select_cpu(g, cpu) < 0 ? -1 : 0;
	for (int i = 0; i < nb; i++) b[i].ok = 1;
	while (blk < nb) { /* up to BLOCK_BATCH `m`s a write, across the blocks, in order */
		size_t boff = 0, at[BLOCK_BATCH], n[BLOCK_BATCH];
		int which[BLOCK_BATCH], k = 0;
		char hgreq[32];
		if (hg) {
			gdb_hg(g, cpu, hgreq, sizeof hgreq);
			if (rsp_append(buf, sizeof buf, &boff, hgreq) < 0) return -1;
		}
		for (; k < BLOCK_BATCH && blk < nb; k++) {
			n[k] = b[blk].len - off < GDB_MEM_MAX ? b[blk].len - off : GDB_MEM_MAX;
			at[k] = off;
			which[k] = blk;
			snprintf(req, sizeof req, "m%llx,%zx", (unsigned long long)(b[blk].addr + off), n[k]);
			if (rsp_append(buf, sizeof buf, &boff, req) < 0) break;
			off += n[k];
			if (off >= b[blk].len) blk++, off = 0;
		}
		if (gdb_write(g, buf, boff) < 0) return -1;
		if (hg) {
			int rc = next_reply(g, hgreq);
			if (rc < 0) return -1;
			refused = rc > 0 || strcmp(g->dec.pkt, "OK");
			if (refused) ERR_SET(g, ERR_PROTO, "%s refused: %.20s", hgreq, rc > 0 ? "" : g->dec.pkt);
			hg = 0;
		}
		for (int i = 0; i < k; i++) { /* every reply is read, even after an error, to stay in step */
			int rc = next_reply(g, "a memory read");
			if (rc < 0) return -1;
			if (rc > 0 || gdb_parse_mem(g->dec.pkt, g->dec.len, b[which[i]].out + at[i], n[i]) < 0)
				unmapped = 1, b[which[i]].ok = 0;
		}
		if (refused) return -1;
	}
	return unmapped ? -2 : 0;
}

int gdb_read_block(struct gdb *g, int cpu, uint64_t addr, uint8_t *out, size_t len)
{
	struct gdb_block b = { addr, len, out, 0 };
	return len ? gdb_read_blocks(g, cpu, &b, 1) : select_cpu(g, cpu) < 0 ? -1 : 0;
}

void gdb_close(struct gdb *g)
{
	conn_close(&g->conn);
}
