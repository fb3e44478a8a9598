/* SPDX-License-Identifier: MIT */
/* fuzz_knet.c: libFuzzer harness -- the kernel's Ethernet/ARP/IPv4/UDP input (kernel/net.c) and
 * UDP shell (kernel/udpsh.c) compiled for the host, with small shims for the NIC, the locks and
 * the scheduler; every frame the kernel sends back is checked. */
#include <setjmp.h>
#include <stdint.h>
#include <stdlib.h>

/* x86.h's privileged instructions would fault in user mode: stand-ins (its guard keeps it out). */
#define X86_H
#define RFLAGS_IF (1u << 9)
static inline uint64_t read_rflags(void) { return RFLAGS_IF; }
static inline void cli(void) {}
static inline void sti(void) {}

#include "../kernel/net.c"
#include "../kernel/udpsh.c"

/* ---- shims: what the rest of the kernel provides ---- */

struct boot_info boot_info;
uint8_t virtio_net_mac[6] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
uint16_t virtio_net_iobase;
uint8_t virtio_net_irq_line;
uint64_t virtio_net_bad_frames;
static int ring_full;            /* virtio_net_send fails (transmit ring full) */
static uint64_t frames_sent;
static struct task the_task;     /* the one task: udpsh's runner */
static jmp_buf task_idle;        /* where the runner goes when it would block */

int virtio_net_init(void) { return 0; }
int virtio_net_poll(void (*deliver)(const uint8_t *frame, size_t len)) { (void)deliver; return 0; }
void virtio_net_wait(void) {}

/* Every frame the kernel sends must be well formed: a checked copy of what a NIC would put out. */
int virtio_net_send(const uint8_t *f, size_t len)
{
	if (len < ETH_HLEN || len > ETH_FRAME_MAX) abort();
	if (get16(f + 12) == ETH_P_IP) {
		const uint8_t *ip = f + ETH_HLEN;
		if (len < ETH_HLEN + IP_HLEN + UDP_HLEN || checksum(ip, IP_HLEN, 0) != 0 ||
		    get16(ip + 2) != len - ETH_HLEN)
			abort();
		const uint8_t *u = ip + IP_HLEN;
		uint16_t ulen = get16(u + 4);
		if (ulen != len - ETH_HLEN - IP_HLEN ||
		    checksum(u, ulen, udp_pseudo_sum(get32(ip + 12), get32(ip + 16), ulen)) != 0)
			abort();
	}
	if (ring_full) return -1;
	frames_sent++;
	return 0;
}

uint64_t spin_lock_irqsave(struct spinlock *l)
{
	if (l->locked) abort(); /* taken twice: on one CPU a deadlock */
	l->locked = 1;
	return RFLAGS_IF;
}
void spin_unlock_irqrestore(struct spinlock *l, uint64_t f)
{
	(void)f;
	if (!l->locked) abort();
	l->locked = 0;
}

struct task *task_create(const char *name, enum task_kind kind, void (*fn)(void *), void *arg,
			 const uint64_t args[4], int cpu)
{
	(void)name, (void)kind, (void)fn, (void)arg, (void)args, (void)cpu;
	return &the_task;
}
void task_block_timeout(uint64_t ms) { (void)ms; longjmp(task_idle, 1); }
void task_wake(struct task *t) { (void)t; }
void task_yield(void) {}
struct task *current_task(void) { return &the_task; }
int sched_pick_cpu(void) { return 0; }
void kprintf(const char *fmt, ...) { (void)fmt; }
void out_vprintf(struct out *o, const char *fmt, va_list ap)
{
	char b[512];
	int n = vsnprintf(b, sizeof b, fmt, ap);
	if (n > 0) o->write(o, b, (size_t)n < sizeof b ? (size_t)n : sizeof b - 1);
}
void out_printf(struct out *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	out_vprintf(o, fmt, ap);
	va_end(ap);
}
void out_puts(struct out *o, const char *s) { o->write(o, s, strlen(s)); }
int parse_u64(const char *s, uint64_t *v) { (void)s; *v = 0; return -1; }

/* The shell: echoes the line as many times as its first byte says (up to 16 KiB; a line starting
 * with '~' 70 KiB, past the reply buffer, so truncation is reached too); `net` prints the counters. */
void shell_exec(const char *line, struct out *o)
{
	if (!strcmp(line, "net")) {
		net_print(o);
		return;
	}
	size_t n = strlen(line), times = line[0] == '~' ? 70000 / (n ? n : 1) + 1 : (unsigned char)line[0] / 8u;
	for (size_t i = 0; i < times && n; i++) o->write(o, line, n);
}

/* The runner task until it would block (the scheduler's part, in place of a context switch). */
static void run_task(void)
{
	if (!setjmp(task_idle)) udpsh_task(NULL);
}

static void null_write(struct out *o, const char *s, size_t n) { (void)o, (void)s, (void)n; }

/* Input: records [u16 length][u8 flags][frame]: flags bit 0 runs the shell task after the frame,
 * bit 1 makes the transmit ring full, bit 2 fixes the frame's IPv4 header checksum and clears its
 * UDP checksum (so the fuzzer reaches the shell), bit 3 sends it to the UDP shell's port. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int started;
	static uint8_t frame[2048];
	if (!started) {
		udpsh_start(UDPSH_PORT);
		started = 1;
	}
	size_t off = 0;
	while (size - off >= 3) {
		size_t len = (size_t)(data[off] | data[off + 1] << 8) % sizeof frame, flags = data[off + 2];
		off += 3;
		if (len > size - off) len = size - off;
		memcpy(frame, data + off, len);
		off += len;
		if ((flags & 4) && len >= ETH_HLEN + IP_HLEN) {
			uint8_t *ip = frame + ETH_HLEN;
			size_t ihl = (size_t)(ip[0] & 0xf) * 4;
			if (flags & 8) {
				memcpy(frame, virtio_net_mac, 6);
				put16(frame + 12, ETH_P_IP);
				ip[0] = 0x45, ihl = IP_HLEN;
				put16(ip + 2, (uint16_t)(len - ETH_HLEN));
				put16(ip + 6, 0);
				ip[9] = IP_PROTO_UDP;
				put32(ip + 16, net_ip);
				if (len >= ETH_HLEN + IP_HLEN + UDP_HLEN) {
					put16(ip + IP_HLEN + 2, UDPSH_PORT);
					put16(ip + IP_HLEN + 4, (uint16_t)(len - ETH_HLEN - IP_HLEN));
				}
			}
			if (ihl >= IP_HLEN && len >= ETH_HLEN + ihl) {
				put16(ip + 10, 0);
				put16(ip + 10, checksum(ip, ihl, 0));
				if (len >= ETH_HLEN + ihl + UDP_HLEN) put16(ip + ihl + 6, 0);
			}
		}
		ring_full = (flags & 2) != 0;
		uint8_t *copy = malloc(len ? len : 1); /* exact size: ASan sees any read past the frame */
		if (!copy) return 0;
		memcpy(copy, frame, len);
		net_input(copy, len);
		free(copy);
		if (flags & 1) run_task();
		if (lock.locked || arp_lock.locked) abort(); /* a path left a lock held */
	}
	run_task(); /* finish what is queued, so each input starts from an idle shell */
	struct out o = { null_write, 0 };
	net_print(&o);
	return 0;
}
