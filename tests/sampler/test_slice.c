/* SPDX-License-Identifier: MIT */
/* test_slice.c: reads in slices -- no stop reads more than SLICE_BYTES, the VM runs between
 * slices, a vCPU in user mode is skipped, errors come back as they are (a fake transport). */
#include "check.h"
#include "../../sampler/slice.h"
#include <stdlib.h>

/* The fake VM: a clock that each read advances, a stopped flag, bytes read per stop. */
struct fake {
	int stopped;
	int64_t now;
	int64_t ns_per_read;   /* how long a read takes */
	uint64_t stop_bytes, max_stop_bytes;
	int stops, conts, reads_running; /* reads while running would be a bug */
	int user_stops;        /* the next stops find every vCPU in user mode */
	int fail_at;           /* read number that fails (-1 unmapped), 0 none */
	int reads, last_cpu;
	/* the pause watchdog resuming the VM under us (-3: the VM runs on after it) */
	int rescue_read_at;    /* read number that is rescued */
	int rescue_stops;      /* the next stops are rescued */
	int rescue_kcpus;      /* the next kernel_cpu looks are rescued */
	int rescue_conts;      /* the next resumes find it resumed already */
	int conts_running, stops_stopped; /* resuming a running VM, stopping a stopped one: bugs */
};

static int f_read(void *arg, int cpu, uint64_t addr, void *buf, size_t len)
{
	struct fake *f = arg;
	f->reads++;
	if (!f->stopped) f->reads_running++;
	f->last_cpu = cpu;
	f->now += f->ns_per_read;
	if (f->fail_at && f->reads == f->fail_at) return -2;
	if (f->rescue_read_at && f->reads == f->rescue_read_at) {
		f->stopped = 0;
		return -3;
	}
	for (size_t i = 0; i < len; i++) ((uint8_t *)buf)[i] = (uint8_t)(addr + i);
	f->stop_bytes += len;
	if (f->stop_bytes > f->max_stop_bytes) f->max_stop_bytes = f->stop_bytes;
	return 0;
}

static int f_cont(void *arg)
{
	struct fake *f = arg;
	if (!f->stopped) f->conts_running++;
	f->stopped = 0;
	f->conts++;
	f->now += 1000000;
	if (f->rescue_conts > 0) {
		f->rescue_conts--;
		return -3;
	}
	return 0;
}

static int f_stop(void *arg)
{
	struct fake *f = arg;
	if (f->stopped) f->stops_stopped++;
	f->stops++;
	if (f->rescue_stops > 0) { /* refused: the watchdog had resumed it */
		f->rescue_stops--;
		f->stopped = 0;
		return -3;
	}
	f->stopped = 1;
	f->stop_bytes = 0;
	return 0;
}

static int f_kcpu(void *arg)
{
	struct fake *f = arg;
	if (f->rescue_kcpus > 0) {
		f->rescue_kcpus--;
		f->stopped = 0;
		return -3;
	}
	if (f->user_stops > 0) {
		f->user_stops--;
		return -1;
	}
	return 1;
}

static int64_t f_now(void *arg)
{
	return ((struct fake *)arg)->now;
}

static void setup(struct slice_reader *r, struct slice_stats *st, struct fake *f, int may_run)
{
	memset(st, 0, sizeof *st);
	*r = (struct slice_reader){ .io = { f_read, f_cont, f_stop, f_kcpu, f_now, f }, .may_run = may_run, .st = st };
	f->stopped = 1;
	slice_begin(r, f->now, 0);
}

static void test_take(void)
{
	CHECK(slice_take(0, 0, 100) == 100);
	CHECK(slice_take(0, 0, 1 << 20) == SLICE_CHUNK);
	CHECK(slice_take(SLICE_BYTES - 10, 0, 100) == 10);
	CHECK(slice_take(SLICE_BYTES, 0, 100) == 0);
	CHECK(slice_take(1, SLICE_NS, 100) == 0);  /* over time, once something was read */
	CHECK(slice_take(0, SLICE_NS * 2, 100) == 100); /* a stop always reads something */
}

static void test_bytes_bound(void)
{
	struct fake f = { 0 };
	struct slice_reader r;
	struct slice_stats st;
	size_t len = (4u << 20) + 123; /* a map-only ORC table's size */
	uint8_t *buf = malloc(len);
	setup(&r, &st, &f, 1);
	CHECK(slice_read(&r, 0x1000, buf, len) == 0);
	slice_end(&r);
	CHECK(f.reads_running == 0);
	CHECK(f.max_stop_bytes <= SLICE_BYTES);
	CHECK(st.most_bytes <= SLICE_BYTES && st.most_bytes == SLICE_BYTES);
	CHECK(st.bytes == len);
	CHECK(st.stops == (len + SLICE_BYTES - 1) / SLICE_BYTES);
	CHECK(f.conts == f.stops && f.stops == (int)st.stops - 1);
	CHECK(buf[0] == 0x00 && buf[len - 1] == (uint8_t)(0x1000 + len - 1));
	free(buf);
}

static void test_time_bound(void)
{
	struct fake f = { .ns_per_read = SLICE_NS / 2 }; /* a slow host: two reads and the time is up */
	struct slice_reader r;
	struct slice_stats st;
	uint8_t buf[6 * SLICE_CHUNK];
	setup(&r, &st, &f, 1);
	CHECK(slice_read(&r, 0, buf, sizeof buf) == 0);
	slice_end(&r);
	CHECK(st.stops == 3 && st.most_bytes == 2 * SLICE_CHUNK);
	CHECK(st.longest_ns == SLICE_NS && st.first_ns == SLICE_NS);
}

static void test_user_mode_and_errors(void)
{
	struct fake f = { .user_stops = 2 };
	struct slice_reader r;
	struct slice_stats st;
	size_t len = SLICE_BYTES + 8;
	uint8_t *buf = malloc(len);
	setup(&r, &st, &f, 1);
	CHECK(slice_read(&r, 0, buf, len) == 0);
	CHECK(f.stops == 3 && f.last_cpu == 1); /* two stops with every vCPU in user mode skipped */
	setup(&r, &st, &f, 1);
	f.fail_at = f.reads + 2;
	CHECK(slice_read(&r, 0, buf, len) == -1); /* unmapped */
	free(buf);
}

static void test_not_ours(void)
{
	struct fake f = { 0 };
	struct slice_reader r;
	struct slice_stats st;
	size_t len = 3 * SLICE_BYTES;
	uint8_t *buf = malloc(len);
	setup(&r, &st, &f, 0); /* paused before we came: never resumed, read in the one stop */
	CHECK(slice_read(&r, 0, buf, len) == 0);
	CHECK(f.conts == 0 && f.stops == 0 && f.reads_running == 0);
	free(buf);
}

/* Held up, the watchdog resumed the VM: wherever it lands -- a read, a stop, a look for a
 * kernel-mode vCPU, a resume -- the reader stops the VM again (never resumes a running one, never
 * stops a stopped one, never reads a running one) and reads every byte. */
static void test_rescued(void)
{
	static const struct { int read_at, stops, kcpus, conts; } c[] = {
		{ 1, 0, 0, 0 }, { 3, 0, 0, 0 }, { 2, 2, 0, 0 }, { 2, 0, 2, 0 }, { 0, 0, 0, 1 }, { 10, 1, 1, 1 },
	};
	size_t len = 2 * SLICE_BYTES + 100;
	uint8_t *buf = malloc(len);
	for (size_t k = 0; k < sizeof c / sizeof c[0]; k++) {
		struct fake f = { .rescue_read_at = c[k].read_at, .rescue_conts = c[k].conts };
		struct slice_reader r;
		struct slice_stats st;
		setup(&r, &st, &f, 1);
		f.rescue_stops = c[k].stops; /* from the reader's first stop of its own */
		f.rescue_kcpus = c[k].kcpus;
		memset(buf, 0xee, len);
		CHECK(slice_read(&r, 0x2000, buf, len) == 0);
		CHECK(f.stopped == 1);
		CHECK(f.reads_running == 0 && f.conts_running == 0 && f.stops_stopped == 0);
		CHECK(buf[0] == 0x00 && buf[len - 1] == (uint8_t)(0x2000 + len - 1) && buf[SLICE_BYTES] == 0x00);
		CHECK(f.rescue_stops == 0 && f.rescue_kcpus == 0 && f.rescue_conts == 0);
		if (c[k].read_at) CHECK(f.reads == (int)((len + SLICE_CHUNK - 1) / SLICE_CHUNK) + 1); /* one read again */
	}
	free(buf);
}

void test_slice(void)
{
	test_rescued();
	test_take();
	test_bytes_bound();
	test_time_bound();
	test_user_mode_and_errors();
	test_not_ours();
}
