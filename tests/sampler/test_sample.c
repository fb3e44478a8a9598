/* SPDX-License-Identifier: MIT */
/* test_sample.c: the one-round-trip sample against a scripted fake gdbstub on a socketpair. */
#include "check.h"
#include "../../sampler/pace.h"
#include "../../sampler/sampler.h"
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#define K 0xffffffff80000000ull
#define STACK0 0xffff800000010000ull /* vCPU 0's stack pages */
#define STACK1 0xffff800000020000ull /* vCPU 1's */
#define STACKLEN 0x2000

static uint8_t mem[2][STACKLEN];
static int stub_cross; /* 1: `m` may cross a page of the stack (QEMU); 0: E14 (a stricter stub) */
static uint64_t stub_sp = 0xf70; /* the stack pointer `g` reports, from the vCPU's stack base */
static uint64_t hole_lo, hole_hi; /* [lo, hi) from the stack base reads E14 (a freed stack) */
static int switch_after;          /* the stub calls task_switch() at its switch_after-th `c` */

/* In the stub: each vCPU now runs a task whose chain is in the stack area's first page, and the
 * old task's page (the second) is gone. */
static void task_switch(void);

static void put64(int cpu, uint64_t addr, uint64_t v)
{
	uint64_t base = cpu ? STACK1 : STACK0;
	for (int i = 0; i < 8; i++) mem[cpu][addr - base + (uint64_t)i] = (uint8_t)(v >> (8 * i));
}

/* On each vCPU's stack, a chain of three frames from off (from the stack base): fp -> off + 0x20
 * -> off + 0x60 -> 0, return addresses K + 0x1044 (+ cpu), K + 0x2088, K + 0x30cc. */
static void chain_at(uint64_t off)
{
	for (int c = 0; c < 2; c++) {
		uint64_t b = c ? STACK1 : STACK0;
		put64(c, b + off, b + off + 0x20); put64(c, b + off + 8, K + 0x1044 + (uint64_t)c);
		put64(c, b + off + 0x20, b + off + 0x60); put64(c, b + off + 0x28, K + 0x2088);
		put64(c, b + off + 0x60, 0);              put64(c, b + off + 0x68, K + 0x30cc);
	}
}

/* vCPU c: sp near the top of its first page, so the chain crosses into the second page. */
static void build(void)
{
	for (int c = 0; c < 2; c++) {
		uint64_t b = c ? STACK1 : STACK0;
		put64(c, b + 0xf80, b + 0xfa0); put64(c, b + 0xf88, K + 0x1044 + (uint64_t)c);
		put64(c, b + 0xfa0, b + 0x1010); put64(c, b + 0xfa8, K + 0x2088);
		put64(c, b + 0x1010, 0);         put64(c, b + 0x1018, K + 0x30cc);
	}
}

/* The fake stub: answers like QEMU 7.2 (ack before each reply, Hg reset to the stop vCPU after
 * a stop) and logs every request payload, one per line, to logfd. */
static void stub(int fd, int logfd, int stop_thread, int running)
{
	struct rsp_dec d;
	uint8_t in[8192];
	char out[16384], hex[8192];
	int sel = 0;
	rsp_dec_init(&d);
	for (;;) {
		ssize_t n = read(fd, in, sizeof in);
		if (n <= 0) _exit(0);
		size_t off = 0, used;
		while (off < (size_t)n) {
			if (in[off] == 0x03 && d.state == 0) {
				if (write(logfd, "^C\n", 3) < 0) _exit(1);
				if (running) {
					running = 0;
					sel = stop_thread - 1;
					char p[64];
					snprintf(p, sizeof p, "T02thread:p01.%02x;", stop_thread);
					int k = rsp_encode(out, sizeof out, p, strlen(p));
					if (write(fd, out, (size_t)k) < 0) _exit(1);
				}
				off++;
				continue;
			}
			enum rsp_event ev = rsp_feed(&d, in + off, (size_t)n - off, &used);
			off += used;
			if (ev != RSP_PACKET) continue;
			if (write(logfd, d.pkt, d.len) < 0 || write(logfd, "\n", 1) < 0) _exit(1);
			const char *r = "";
			unsigned long long a;
			unsigned len;
			if (!strncmp(d.pkt, "Hgp1.", 5)) {
				sel = (int)strtol(d.pkt + 5, NULL, 16) - 1;
				r = "OK";
			} else if (!strcmp(d.pkt, "g")) {
				uint8_t g[148] = { 0 };
				uint64_t b = sel ? STACK1 : STACK0;
				uint64_t rip = K + 0x1a, rsp = b + stub_sp, rbp = b + stub_sp + 0x10;
				for (int i = 0; i < 8; i++) {
					g[48 + i] = (uint8_t)(rbp >> (8 * i));
					g[56 + i] = (uint8_t)(rsp >> (8 * i));
					g[128 + i] = (uint8_t)(rip >> (8 * i));
				}
				g[137] = 0x02; /* IF */
				g[140] = 0x08; /* cs: ring 0 */
				rsp_hex(hex, g, sizeof g);
				r = hex;
			} else if (sscanf(d.pkt, "m%llx,%x", &a, &len) == 2) {
				uint64_t b = sel ? STACK1 : STACK0;
				int in_hole = a - b < hole_hi && a + len > b + hole_lo;
				if (a >= b && a + len <= b + STACKLEN && len <= 2048 && !in_hole &&
				    (stub_cross || (a & ~4095ull) == ((a + len - 1) & ~4095ull))) {
					rsp_hex(hex, mem[sel] + (a - b), len);
					r = hex;
				} else {
					r = "E14";
				}
			} else if (!strcmp(d.pkt, "c")) {
				running = 1;
				if (switch_after && --switch_after == 0) task_switch();
				continue; /* no reply */
			}
			out[0] = '+';
			int k = rsp_encode(out + 1, sizeof out - 1, r, strlen(r));
			if (write(fd, out, (size_t)k + 1) < 0) _exit(1);
		}
	}
}

struct fake {
	pid_t pid;        /* the stub process */
	int logr;         /* read end of its request log */
	struct gdb *g;    /* client connected to it */
};

static void fake_start(struct fake *f, int stop_thread, int running)
{
	int sv[2], lp[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0 && pipe(lp) == 0);
	f->pid = fork();
	if (f->pid == 0) {
		close(sv[0]);
		close(lp[0]);
		stub(sv[1], lp[1], stop_thread, running);
	}
	close(sv[1]);
	close(lp[1]);
	f->logr = lp[0];
	f->g = calloc(1, sizeof *f->g);
	rsp_dec_init(&f->g->dec);
	f->g->conn.fd = sv[0];
	strcpy(f->g->conn.where, "fake");
	arch_layout_default(&f->g->layout, arch_find("x86_64"));
	f->g->ncpu = 2;
	f->g->tids[0] = 1;
	f->g->tids[1] = 2;
	f->g->pids[0] = f->g->pids[1] = 1;
	f->g->multiprocess = 1;
}

/* Stop the stub and return its request log ("^C" for each interrupt byte). */
static char *fake_stop(struct fake *f)
{
	static char log[16384];
	close(f->g->conn.fd);
	waitpid(f->pid, NULL, 0);
	ssize_t n = read(f->logr, log, sizeof log - 1);
	log[n > 0 ? n : 0] = 0;
	close(f->logr);
	free(f->g);
	return log;
}

static void check_chain_flags(const struct sample *s, int cpu, int flags)
{
	CHECK(s->cpu == cpu && s->n == 4 && s->flags == flags);
	CHECK(s->frames[0] == K + 0x1a && s->frames[1] == K + 0x1044 + (uint64_t)cpu);
	CHECK(s->frames[2] == K + 0x2088 && s->frames[3] == K + 0x30cc);
}

static void check_chain(const struct sample *s, int cpu)
{
	check_chain_flags(s, cpu, 0);
}

/* Four samples of two vCPUs; returns the stub's request log. */
static char *four_samples(struct sampler *s)
{
	struct fake f;
	struct sample out[2];
	int n, cpus[2] = { 0, 1 };
	build();
	fake_start(&f, 1, 0);
	CHECK(sampler_init(s, f.g, &(struct sampler_cfg){ .syms = NULL, .klo = 0xffff800000000000ull, .khi = ~0ull, .max_frames = 64 }, cpus, 2) == 0);
	/* First sample: the VM is stopped (just attached), nothing predicted: registers first, then
	 * the stacks in a second trip, each window within one page. */
	CHECK(sampler_take(s, out, &n) == 0 && n == 2);
	check_chain(&out[0], 0);
	check_chain(&out[1], 1);
	CHECK(s->st.trips == 2 && s->p.st.misses == 2 && s->p.st.hits == 0);
	CHECK(s->stopped_at_ns == 0); /* no stop written, no stop reply: nothing to time */
	CHECK(sampler_resume(s) == 0);
	for (int i = 0; i < 3; i++) {
		int64_t t0 = pace_now();
		CHECK(sampler_take(s, out, &n) == 0 && n == 2);
		/* the stop reply's arrival is timed: the guest's stopped share counts from there */
		CHECK(s->stopped_at_ns >= t0 && s->stopped_at_ns <= pace_now());
		check_chain(&out[0], 0);
		check_chain(&out[1], 1);
		CHECK(sampler_resume(s) == 0);
	}
	/* The first stop reply names the stop vCPU; from the sample after it on, its Hg is left out. */
	CHECK(s->st.hg_elided == 2 && s->st.hg_wrong == 0 && s->p.st.mem_errors == 0);
	sampler_free(s);
	return fake_stop(&f);
}

static void test_round_trips(void)
{
	struct sampler s;
	stub_cross = 1;
	char *log = four_samples(&s);
	/* Sample 1 reads each stack from the frame it needs to the end of its 16 KiB stack area,
	 * at most 4 KiB, in page-sized `m`s (3 per vCPU). Samples 2-4: one trip each -- 0x03, then
	 * vCPU 0 (the stop vCPU) without Hg, and one `m` per vCPU across the page boundary both
	 * sides of which sample 1 read: from 0x...0f70 - 256 to the walk's highest read
	 * (0x...1020; no margin: the walk reached the chain's end). */
	CHECK(s.st.trips == 5 && s.p.st.hits == 6 && s.p.st.misses == 2);
	CHECK(s.p.st.cross_reads == 6 && s.p.st.cross_failed == 0 && s.p.st.mem_reads == 6 + 6);
	const char *last = strstr(log, "c\n^C\ng\nmffff800000010e70,1b0\nHgp1.2\ng\nmffff800000020e70,1b0\nc\n");
	CHECK(last != NULL);
	if (!last) fprintf(stderr, "request log:\n%s\n", log);
}

static void test_refused_crossing_falls_back_to_pages(void)
{
	struct sampler s;
	stub_cross = 0;
	char *log = four_samples(&s);
	/* Sample 2 tries the crossing read, gets E14, re-reads page by page in a second trip (and
	 * the chains are still whole); page-by-page worked, so it never crosses again. */
	CHECK(s.st.trips == 6 && s.p.st.hits == 4 && s.p.st.misses == 4);
	CHECK(s.p.st.cross_reads == 2 && s.p.st.cross_failed == 2 && s.p.cross_off == 1);
	const char *last = strstr(log, "c\n^C\ng\nmffff800000010e70,190\nmffff800000011000,20\n");
	CHECK(last && strstr(last, "Hgp1.2\ng\nmffff800000020e70,190\nmffff800000021000,20\n") != NULL);
	if (!last) fprintf(stderr, "request log:\n%s\n", log);
}

/* The chain ends 16 bytes below the top of the mapped stack (above it: unmapped, like a guard
 * page): the window must stop at the chain's end instead of reading into the next page. */
static void test_no_read_past_the_chains_end(void)
{
	struct fake f;
	struct sampler s;
	struct sample out[2];
	int n, cpus[2] = { 0, 1 };
	memset(mem, 0, sizeof mem);
	chain_at(0x1f80);
	stub_cross = 1;
	stub_sp = 0x1f70;
	fake_start(&f, 1, 0);
	CHECK(sampler_init(&s, f.g, &(struct sampler_cfg){ .syms = NULL, .klo = 0xffff800000000000ull, .khi = ~0ull, .max_frames = 64 }, cpus, 2) == 0);
	/* Sample 1 knows nothing yet: its read-ahead from the frame it needs runs into the
	 * unmapped page (two page-split E14s per vCPU, counted as speculative). From then on the
	 * windows end at the chain's end. */
	for (int i = 0; i < 4; i++) {
		CHECK(sampler_take(&s, out, &n) == 0 && n == 2);
		check_chain(&out[0], 0);
		check_chain(&out[1], 1);
		CHECK(sampler_resume(&s) == 0);
		/* speculative (read ahead of what the walk needed), so no memory error */
		CHECK(s.p.st.stale_windows == 4 && s.p.st.mem_errors == 0);
	}
	CHECK(s.st.trips == 5 && s.p.st.cross_reads == 0);
	sampler_free(&s);
	char *log = fake_stop(&f);
	CHECK(strstr(log, "c\n^C\ng\nmffff800000011e70,180\nHgp1.2\ng\nmffff800000021e70,180\nc\n") != NULL);
	stub_sp = 0xf70;
}

/* A task switch between two samples: the stack the previous sample predicted has been freed
 * (unmapped). The predicted read fails -- a stale window, a miss, not a memory error -- and the
 * new stack is read in a second trip. */
static void test_stale_window_after_a_task_switch(void)
{
	struct fake f;
	struct sampler s;
	struct sample out[2];
	int n, cpus[2] = { 0, 1 };
	stub_cross = 1;
	memset(mem, 0, sizeof mem); /* the old task: its chain in the stack area's second page */
	chain_at(0x1f80);
	stub_sp = 0x1f70;
	switch_after = 2;
	fake_start(&f, 1, 0);
	switch_after = 0;
	stub_sp = 0xf70;
	CHECK(sampler_init(&s, f.g, &(struct sampler_cfg){ .syms = NULL, .klo = 0xffff800000000000ull, .khi = ~0ull, .max_frames = 64 }, cpus, 2) == 0);
	for (int i = 0; i < 2; i++) {
		CHECK(sampler_take(&s, out, &n) == 0 && n == 2);
		check_chain(&out[0], 0);
		CHECK(sampler_resume(&s) == 0);
	}
	uint64_t misses = s.p.st.misses, stale = s.p.st.stale_windows;
	CHECK(sampler_take(&s, out, &n) == 0 && n == 2); /* after the stub's task_switch() */
	check_chain(&out[0], 0);
	check_chain(&out[1], 1);
	CHECK(sampler_resume(&s) == 0);
	/* per vCPU: the predicted window, and the read-ahead into the freed page -- speculative
	 * both, so no memory error; a miss each */
	CHECK(s.p.st.stale_windows == stale + 4 && s.p.st.mem_errors == 0 && s.p.st.misses == misses + 2);
	sampler_free(&s);
	fake_stop(&f);
}

static void task_switch(void)
{
	memset(mem, 0, sizeof mem);
	chain_at(0x180);
	stub_sp = 0x170;
	hole_lo = 0x1000; /* the old task's page is gone */
	hole_hi = 0x2000;
}

static void test_wrong_stop_vcpu(void)
{
	struct fake f;
	struct sampler s;
	struct sample out[2];
	int n, cpus[2] = { 0, 1 };
	build();
	stub_cross = 0;
	fake_start(&f, 2, 1); /* running; it will report vCPU 2 as the stop vCPU */
	CHECK(sampler_init(&s, f.g, &(struct sampler_cfg){ .syms = NULL, .klo = 0xffff800000000000ull, .khi = ~0ull, .max_frames = 64 }, cpus, 2) == 0);
	s.stop_tid = 1; /* we predict vCPU 1 (as QEMU usually reports) */
	f.g->running = 1;
	CHECK(sampler_take(&s, out, &n) == 0 && n == 2);
	/* g and m were answered for vCPU 2 while we thought vCPU 1: detected and redone. */
	CHECK(s.st.hg_wrong == 1);
	check_chain(&out[0], 0);
	check_chain(&out[1], 1);
	CHECK(s.stop_tid == 2);
	sampler_free(&s);
	fake_stop(&f);
}

static void test_idle_not_reread(void)
{
	static uint8_t text[0x40];
	struct textsec sec = { K, sizeof text, text };
	struct symtab t = { 0 };
	struct fake f;
	struct sampler s;
	struct sample out[2];
	int n, cpus[2] = { 0, 1 };
	text[0x19] = 0xf4; /* hlt just before the pc both vCPUs report: they are idle */
	syms_add(&t, K, 0x40, "idle_loop");
	syms_finish(&t);
	t.is_elf = 1;
	t.secs = &sec;
	t.nsecs = 1;
	build();
	fake_start(&f, 1, 0);
	CHECK(sampler_init(&s, f.g, &(struct sampler_cfg){ .syms = &t, .klo = 0xffff800000000000ull, .khi = ~0ull, .max_frames = 64 }, cpus, 2) == 0);
	CHECK(sampler_take(&s, out, &n) == 0 && n == 2);
	CHECK(out[0].flags == SF_IDLE && out[1].flags == SF_IDLE);
	CHECK(sampler_resume(&s) == 0);
	CHECK(sampler_take(&s, out, &n) == 0 && n == 2);
	/* Unchanged registers: the previous walk is reused, no stack read, still one trip. */
	check_chain_flags(&out[0], 0, SF_IDLE);
	check_chain_flags(&out[1], 1, SF_IDLE);
	CHECK(s.p.st.idle_reused == 2 && s.st.trips == 3);
	sampler_free(&s);
	char *log = fake_stop(&f);
	CHECK(strstr(log, "c\n^C\nHgp1.1\ng\nHgp1.2\ng\n") != NULL);
	t.secs = NULL;
	t.nsecs = 0;
	syms_free(&t);
}

/* The caller's own reads (record --off-cpu's, predicted before the stop) ride in the stop's
 * write behind the vCPUs' requests: an Hg to their vCPU, an `m` per GDB_MEM_MAX bytes, no trip of
 * their own; a block the fake gdbstub refuses (E14) comes back not ok, the others filled. */
static void test_extra_reads_ride_in_the_stops_write(void)
{
	struct fake f;
	struct sampler s;
	struct sample out[2];
	uint8_t a[16], b[3000], c[8];
	int n, cpus[2] = { 0, 1 };
	stub_cross = 1;
	build();
	fake_start(&f, 1, 1);
	CHECK(sampler_init(&s, f.g, &(struct sampler_cfg){ .syms = NULL, .klo = 0xffff800000000000ull, .khi = ~0ull, .max_frames = 64 }, cpus, 2) == 0);
	struct gdb_block x[3] = { { STACK1 + 0x100, sizeof a, a, 0 }, { STACK1 + 0x200, sizeof b, b, 0 },
				  { STACK1 + STACKLEN, sizeof c, c, 0 } }; /* the last past the stack: E14 */
	s.xb = x;
	s.nxb = 3;
	s.xcpu = 1;
	s.g->running = 1;
	CHECK(sampler_take(&s, out, &n) == 0 && n == 2 && s.x_sent == 1);
	CHECK(x[0].ok && x[1].ok && !x[2].ok);
	CHECK(!memcmp(a, mem[1] + 0x100, sizeof a) && !memcmp(b, mem[1] + 0x200, sizeof b));
	uint64_t trips = s.st.trips;
	s.nxb = 0;
	CHECK(sampler_resume(&s) == 0 && sampler_take(&s, out, &n) == 0 && s.x_sent == 0);
	CHECK(s.st.trips - trips == 1); /* predicted windows: one trip, none added by the reads before */
	sampler_free(&s);
	char *log = fake_stop(&f);
	char want[256];
	snprintf(want, sizeof want, "Hgp1.2\nm%llx,10\nm%llx,800\nm%llx,3b8\nm%llx,8\n",
		 (unsigned long long)(STACK1 + 0x100), (unsigned long long)(STACK1 + 0x200),
		 (unsigned long long)(STACK1 + 0xa00), (unsigned long long)(STACK1 + STACKLEN));
	CHECK(strstr(log, want) != NULL);
	if (!strstr(log, want)) fprintf(stderr, "request log:\n%s\nwanted:\n%s\n", log, want);
}

void test_sample(void)
{
	signal(SIGPIPE, SIG_IGN);
	test_round_trips();
	test_refused_crossing_falls_back_to_pages();
	test_no_read_past_the_chains_end();
	test_stale_window_after_a_task_switch();
	test_wrong_stop_vcpu();
	test_idle_not_reread();
	test_extra_reads_ride_in_the_stops_write();
}
