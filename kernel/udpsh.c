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

static uint16_t listen_port;
static struct task *runner;
static struct spinlock lock = SPINLOCK_INIT("udpsh");
static struct {
	volatile int busy;		/* a command is queued or running */
	struct udp_peer peer;		/* who asked */
	uint32_t seq;
	char cmd[SHELL_LINE_MAX + 1];
} run;
static struct {
	int valid;			/* out_buf holds this request's complete reply */
	struct udp_peer peer;
	uint32_t seq;
} done;
static char out_buf[OUT_MAX];
static size_t out_len;
static int out_truncated;
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
		if (out_len == OUT_MAX) {
			out_truncated = 1;
			return;
		}
		out_buf[out_len++] = s[i];
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
	if (!run.busy && done.valid && same_peer(&done.peer, from) && done.seq == seq) {
		st.resent++;			/* a retry: same output, command not run again */
		spin_unlock_irqrestore(&lock, f);
		send_chunks(from, seq, out_buf, out_len, out_truncated ? FLAG_TRUNCATED : 0);
		return;
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
	done.valid = 0;
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
		out_len = 0;
		out_truncated = 0;
		shell_exec(run.cmd, &udp_out);
		send_chunks(&run.peer, run.seq, out_buf, out_len, out_truncated ? FLAG_TRUNCATED : 0);
		f = spin_lock_irqsave(&lock);
		done.peer = run.peer;
		done.seq = run.seq;
		done.valid = 1;
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
