/* SPDX-License-Identifier: MIT */
/* udpsh.c: runs shell commands that arrive as UDP datagrams and sends the output back in
 * numbered chunks; keeps the last reply so a client's retry is answered without rerunning. */
#include "udpsh.h"
#include "sched.h"
#include "shell.h"
#include "spinlock.h"
#include "x86.h"

#define REQ_MAGIC "GSQ1"
#define REPLY_MAGIC "GSR1"
#define REQ_HDR 8			/* magic, sequence number */
#define REPLY_HDR 12			/* magic, sequence, chunk index, flags */
#define CHUNK 1024
#define OUT_MAX 65536
#define FLAG_LAST 1
#define FLAG_BUSY 2
#define FLAG_TRUNCATED 4
#define CLIENTS 4			/* clients whose last reply is kept for retries */

static uint16_t listen_port;
static struct task *runner;
static struct spinlock lock = SPINLOCK_INIT("udpsh");
static struct {
	volatile int busy;		/* a command is queued or running */
	struct udp_peer peer;		/* who asked */
	uint32_t seq;
	char cmd[SHELL_LINE_MAX + 1];
} run;
/* The last reply sent to each of a few clients, so a retry is answered without rerunning. */
static struct reply {
	int valid;			/* buf holds the complete reply to (peer, seq) */
	struct udp_peer peer;
	uint32_t seq;
	uint64_t used;			/* when it was last written, for replacement */
	size_t len;
	int truncated;			/* output beyond OUT_MAX was cut */
	char buf[OUT_MAX];
} replies[CLIENTS];
static struct reply *out;		/* the slot the running command writes */
static uint64_t clock;
static struct {
	uint64_t requests, chunks_sent, resent, busy, dup_running;
	uint64_t drop_short, drop_magic, drop_oversized, send_failed;
} st;

static uint32_t le32(const uint8_t *p) { return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24; }

static int same_peer(const struct udp_peer *a, const struct udp_peer *b)
{
	return a->ip == b->ip && a->port == b->port;
}

static void sink_write(struct out *o, const char *s, size_t n)
{
	(void)o;
	for (size_t i = 0; i < n; i++) {
		if (out->len == OUT_MAX) {
			out->truncated = 1;
			return;
		}
		out->buf[out->len++] = s[i];
	}
}

static struct out udp_out = { sink_write, 0 };

/* Sends text as chunks; retries a chunk briefly while the transmit ring is full. */
static void send_chunks(const struct udp_peer *to, uint32_t seq, const char *text, size_t len, uint16_t flags)
{
	uint8_t pkt[REPLY_HDR + CHUNK];
	uint16_t index = 0;
	size_t off = 0;
	do {
		size_t n = len - off > CHUNK ? CHUNK : len - off;
		uint16_t f = flags | (off + n == len ? FLAG_LAST : 0);
		memcpy(pkt, REPLY_MAGIC, 4);
		for (int i = 0; i < 4; i++)
			pkt[4 + i] = (uint8_t)(seq >> (8 * i));
		pkt[8] = (uint8_t)index, pkt[9] = (uint8_t)(index >> 8);
		pkt[10] = (uint8_t)f, pkt[11] = (uint8_t)(f >> 8);
		memcpy(pkt + REPLY_HDR, text + off, n);
		int tries = 0;
		while (udp_send(listen_port, to, pkt, REPLY_HDR + n) != 0 && ++tries < 100)
			task_yield();
		if (tries == 100)
			st.send_failed++;
		else
			st.chunks_sent++;
		off += n;
		index++;
	} while (off < len);
}

/* Net task: one request datagram. */
static void udpsh_input(const struct udp_peer *from, uint16_t port, const uint8_t *data, size_t len)
{
	(void)port;
	if (len <= REQ_HDR) {
		st.drop_short++;
		return;
	}
	if (memcmp(data, REQ_MAGIC, 4) != 0) {
		st.drop_magic++;
		return;
	}
	if (len > REQ_HDR + SHELL_LINE_MAX) {
		st.drop_oversized++;
		return;
	}
	uint32_t seq = le32(data + 4);
	uint64_t f = spin_lock_irqsave(&lock);
	if (run.busy && same_peer(&run.peer, from) && run.seq == seq) {
		st.dup_running++;		/* its reply is on the way */
		spin_unlock_irqrestore(&lock, f);
		return;
	}
	for (int i = 0; i < CLIENTS; i++) {
		struct reply *r = &replies[i];
		if (r->valid && same_peer(&r->peer, from) && r->seq == seq) {
			st.resent++;		/* a retry: same output, command not run again */
			spin_unlock_irqrestore(&lock, f);
			send_chunks(from, seq, r->buf, r->len, r->truncated ? FLAG_TRUNCATED : 0);
			return;			/* net task only: the slot can't be reused meanwhile */
		}
	}
	if (run.busy) {
		char msg[64 + SHELL_LINE_MAX];
		int n = snprintf(msg, sizeof(msg), "udpsh: busy running '%s'\n", run.cmd);
		st.busy++;
		spin_unlock_irqrestore(&lock, f);
		send_chunks(from, seq, msg, (size_t)n < sizeof(msg) ? (size_t)n : sizeof(msg) - 1, FLAG_BUSY);
		return;
	}
	st.requests++;
	run.peer = *from;
	run.seq = seq;
	size_t n = len - REQ_HDR;
	for (size_t i = 0; i < n; i++) {	/* control bytes become spaces, as the serial shell ignores them */
		char c = (char)data[REQ_HDR + i];
		run.cmd[i] = (c < 0x20 || c > 0x7e) ? ' ' : c;
	}
	run.cmd[n] = 0;
	/* This client's slot if it has one, else the least recently written. */
	struct reply *slot = &replies[0];
	for (int i = 0; i < CLIENTS; i++) {
		if (replies[i].valid && same_peer(&replies[i].peer, from)) {
			slot = &replies[i];
			break;
		}
		if (replies[i].used < slot->used)
			slot = &replies[i];
	}
	slot->valid = 0;
	slot->len = 0;
	slot->truncated = 0;
	out = slot;
	run.busy = 1;
	spin_unlock_irqrestore(&lock, f);
	task_wake(runner);
}

static void udpsh_task(void *arg)
{
	(void)arg;
	for (;;) {
		uint64_t f = read_rflags();
		cli();
		if (!run.busy)
			task_block_timeout(10);	/* woken by udpsh_input; the timeout covers a race */
		if (f & RFLAGS_IF)
			sti();
		if (!run.busy)
			continue;
		shell_exec(run.cmd, &udp_out);
		send_chunks(&run.peer, run.seq, out->buf, out->len, out->truncated ? FLAG_TRUNCATED : 0);
		f = spin_lock_irqsave(&lock);
		out->peer = run.peer;
		out->seq = run.seq;
		out->used = ++clock;
		out->valid = 1;
		run.busy = 0;
		spin_unlock_irqrestore(&lock, f);
	}
}

void udpsh_start(uint16_t port)
{
	listen_port = port;
	runner = task_create("udpsh", KIND_SYSTEM, udpsh_task, 0, 0, 0);
	if (runner)
		net_listen(port, udpsh_input);
}

int udpsh_peer(struct udp_peer *p, uint16_t *port)
{
	if (!runner || current_task() != runner || !run.busy)
		return 0;
	*p = run.peer;
	*port = listen_port;
	return 1;
}

void udpsh_print(struct out *o)
{
	out_printf(o, "udp shell port %u: %lu commands, %lu chunks sent, %lu resent, %lu busy, %lu duplicates; "
		   "drops: short %lu, magic %lu, oversized %lu, send-failed %lu\n",
		   listen_port, st.requests, st.chunks_sent, st.resent, st.busy, st.dup_running,
		   st.drop_short, st.drop_magic, st.drop_oversized, st.send_failed);
}
