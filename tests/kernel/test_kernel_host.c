/* SPDX-License-Identifier: MIT */
/* test_kernel_host.c: host unit tests of kernel logic: stack walks, symbol lookup, printf, parsing. */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "cpu.h"
#include "sched.h"
#include "stacktrace.h"
#include "symtab.h"
#include "txwait.h"

/* The kernel's globals, provided here instead of by the image. */
struct task tasks[MAX_TASKS];
struct cpu cpus[MAX_CPUS];
int ncpu = 1;
/* "Kernel text": 4 KiB with __text_end right after it, as the linker script lays them out. */
__asm__(".data\n.balign 16\n.globl __text_start, __text_end\n"
	"__text_start: .space 4096\n__text_end: .byte 0\n.text");
extern char __text_start[], __text_end[];
#define TEXT ((uint64_t)__text_start)

/* A three-function table: f0 [0,0x100), f1 [0x100,0x180), gap, f2 [0x200,0x300). */
const uint64_t symtab_count = 3;
uint64_t symtab_addr[3];
const uint32_t symtab_size[3] = { 0x100, 0x80, 0x100 };
const uint32_t symtab_name[3] = { 0, 3, 6 };
const char symtab_strings[] = "f0\0f1\0f2";

int check_passed, check_failed; /* check.h's counters */

static uint64_t stack[512] __attribute__((aligned(16)));	/* a task's stack */
static uint64_t ist[IST_STACK_SIZE / 8] __attribute__((aligned(16)));	/* cpu0's NMI stack */

static void setup(void)
{
	memset(tasks, 0, sizeof(tasks));
	memset(cpus, 0, sizeof(cpus));
	memset(stack, 0, sizeof(stack));
	tasks[0].state = TASK_RUNNING;
	tasks[0].stack = (uint8_t *)stack;
	tasks[0].stack_size = sizeof(stack);
	cpus[0].ist_nmi = (uint8_t *)ist;
	for (int i = 0; i < 3; i++)
		symtab_addr[i] = TEXT + (i == 2 ? 0x200 : 0x100 * (uint64_t)i);
}

/* Builds frames at stack[at[i]]: saved rbp -> next frame, return address ret[i]. */
static uint64_t chain(const int *at, const uint64_t *ret, int n)
{
	for (int i = 0; i < n; i++) {
		stack[at[i]] = i + 1 < n ? (uint64_t)&stack[at[i + 1]] : 0;
		stack[at[i] + 1] = ret[i];
	}
	return (uint64_t)&stack[at[0]];
}

static void test_walk_normal(void)
{
	setup();
	int at[] = { 10, 20, 40 };
	uint64_t ret[] = { TEXT + 0x10, TEXT + 0x120, TEXT + 0x210 }, out[8];
	uint64_t fp = chain(at, ret, 3);
	int n = stacktrace_from(fp, (uint64_t)&stack[5], out, 8);
	CHECK(n == 3 && out[0] == ret[0] && out[1] == ret[1] && out[2] == ret[2]);
	CHECK(stacktrace_from(fp, (uint64_t)&stack[5], out, 2) == 2);	/* bounded by max */
}

static void test_walk_stops_on_bad_frames(void)
{
	uint64_t out[8];
	setup();
	int at[] = { 10, 20, 30 };
	uint64_t ret[] = { TEXT + 1, TEXT + 2, TEXT + 3 };
	uint64_t fp = chain(at, ret, 3);
	stack[20] = (uint64_t)&stack[10];		/* loop: points back down */
	CHECK(stacktrace_from(fp, fp, out, 8) == 2);
	setup();
	fp = chain(at, ret, 3);
	stack[20] = (uint64_t)&stack[30] + 4;		/* misaligned */
	CHECK(stacktrace_from(fp, fp, out, 8) == 2);
	setup();
	fp = chain(at, ret, 3);
	stack[20] = 0x1000;				/* outside every known stack: never read */
	CHECK(stacktrace_from(fp, fp, out, 8) == 2);
	setup();
	fp = chain(at, ret, 3);
	stack[21] = 0x1234;				/* return address outside kernel text */
	CHECK(stacktrace_from(fp, fp, out, 8) == 1);
	CHECK(stacktrace_from(0x10, 0x10, out, 8) == 0);	/* unknown stack */
	setup();
	fp = (uint64_t)&stack[510];			/* frame would run past the top */
	stack[510] = 0;
	stack[511] = TEXT + 1;
	CHECK(stacktrace_from(fp + 8, fp, out, 8) == 0);
}

static void test_walk_from_ist_into_task_stack(void)
{
	uint64_t out[8];
	setup();
	int at[] = { 100, 120 };
	uint64_t ret[] = { TEXT + 0x20, TEXT + 0x220 };
	uint64_t task_fp = chain(at, ret, 2);
	/* An NMI frame pair on the IST stack whose saved RBP is the interrupted task's. */
	uint64_t *pair = &ist[IST_STACK_SIZE / 8 - 16];
	pair[0] = task_fp;
	pair[1] = TEXT + 0x130;				/* interrupted RIP */
	int n = stacktrace_from((uint64_t)pair, (uint64_t)pair, out, 8);
	CHECK(n == 3 && out[0] == TEXT + 0x130 && out[1] == ret[0] && out[2] == ret[1]);
}

static void test_walk_from_a_prologue(void)
{
	uint64_t out[8];
	uint8_t *text = (uint8_t *)__text_start;
	setup();
	int at[] = { 100, 120 };
	uint64_t ret[] = { TEXT + 0x20, TEXT + 0x220 };
	uint64_t caller_fp = chain(at, ret, 2);
	memcpy(text + 0x100, "\x55\x48\x89\xe5", 4);	/* f1: push %rbp; mov %rsp,%rbp */
	stack[50] = TEXT + 0x44;			/* return address pushed by the call */
	stack[49] = caller_fp;				/* ... and rbp, once push %rbp ran */
	/* At entry: [rsp] is the return address, rbp is still the caller's frame. */
	int n = stacktrace_interrupted(TEXT + 0x100, caller_fp, (uint64_t)&stack[50], out, 8);
	CHECK(n == 3 && out[0] == TEXT + 0x44 && out[1] == ret[0] && out[2] == ret[1]);
	/* After push %rbp: [rsp + 8]. */
	n = stacktrace_interrupted(TEXT + 0x101, caller_fp, (uint64_t)&stack[49], out, 8);
	CHECK(n == 3 && out[0] == TEXT + 0x44 && out[1] == ret[0]);
	/* In the body: the ordinary walk (here rbp is the frame pair at stack[49]). */
	n = stacktrace_interrupted(TEXT + 0x104, (uint64_t)&stack[49], (uint64_t)&stack[40], out, 8);
	CHECK(n == 3 && out[0] == TEXT + 0x44);
	/* A "return address" outside text at [rsp] is not trusted: plain walk. */
	stack[50] = 0x1234;
	n = stacktrace_interrupted(TEXT + 0x100, caller_fp, (uint64_t)&stack[50], out, 8);
	CHECK(n == 2 && out[0] == ret[0]);
	memset(text + 0x100, 0, 4);
}

static void test_symtab(void)
{
	uint64_t off = 99;
	setup();
	CHECK(strcmp(symtab_resolve(TEXT + 0x0, &off), "f0") == 0 && off == 0);
	CHECK(strcmp(symtab_resolve(TEXT + 0x17f, &off), "f1") == 0 && off == 0x7f);
	CHECK(symtab_resolve(TEXT + 0x180, &off) == NULL);	/* gap after f1 */
	CHECK(strcmp(symtab_resolve(TEXT + 0x2ff, &off), "f2") == 0 && off == 0xff);
	CHECK(symtab_resolve(TEXT + 0x300, &off) == NULL);
	CHECK(symtab_resolve(TEXT - 1, &off) == NULL);
	CHECK(symtab_lookup("f2") == TEXT + 0x200 && symtab_lookup("nope") == 0);
}

static void test_printf_and_parse(void)
{
	char b[64];
	uint64_t v;
	k_snprintf(b, sizeof(b), "%d|%5d|%-4d|%05d|%x|%lx|%s|%c|%%", -12, 34, 5, -7, 255u,
		   0xffffffff80000000ul, "hi", 'z');
	CHECK(strcmp(b, "-12|   34|5   |-0007|ff|ffffffff80000000|hi|z|%") == 0);
	CHECK(k_snprintf(b, 4, "abcdef") == 6 && strcmp(b, "abc") == 0);	/* truncates, counts all */
	CHECK(parse_u64("0", &v) == 0 && v == 0);
	CHECK(parse_u64("18446744073709551615", &v) == 0 && v == UINT64_MAX);
	CHECK(parse_u64("18446744073709551616", &v) == -1);	/* overflow */
	CHECK(parse_u64("", &v) == -1 && parse_u64("12a", &v) == -1 && parse_u64("-1", &v) == -1);
}

static uint64_t frozen_ms(void) { return 0; }

/* A simulated UART and clock for txwait: busy for `busy` polls, each poll 1 us of guest time. */
static uint64_t sim_us, sim_polls, sim_busy;
static int sim_ready(void)
{
	sim_polls++;
	return sim_polls > sim_busy;
}
static uint64_t sim_ms(void) { return sim_us / 1000; }
static void sim_relax(void) { sim_us++; }
static void sim_reset(uint64_t busy)
{
	sim_polls = 0;
	sim_busy = busy;
}

/* A host late by 200 ms (200000 polls: twice what the old 100000-poll bound allowed) loses no
 * byte; a console nobody drains loses the byte after TXWAIT_MS, then waits briefly per byte
 * until the UART takes one again; every loss counted. */
static void test_txwait(void)
{
	struct txwait w = { 0, 0 };
	sim_reset(200000);
	CHECK(txwait(&w, sim_ready, sim_ms, sim_relax) == 1);
	CHECK(w.dropped == 0 && !w.stalled);

	sim_reset(UINT64_MAX);
	uint64_t t0 = sim_us;
	CHECK(txwait(&w, sim_ready, sim_ms, sim_relax) == 0);
	CHECK(w.dropped == 1 && w.stalled);
	CHECK(sim_us - t0 >= TXWAIT_MS * 1000ULL && sim_us - t0 <= TXWAIT_MS * 1000ULL + 1000);
	t0 = sim_us;
	for (int i = 0; i < 10; i++)
		CHECK(txwait(&w, sim_ready, sim_ms, sim_relax) == 0);
	CHECK(w.dropped == 11);
	CHECK(sim_us - t0 == 10 * TXWAIT_STALLED_POLLS);	/* stalled: 100 polls a byte, not two seconds */

	sim_reset(5);	/* drained again: bytes go out, and the next stall waits the full bound */
	CHECK(txwait(&w, sim_ready, sim_ms, sim_relax) == 1);
	CHECK(!w.stalled && w.dropped == 11);
	sim_reset(200000);
	CHECK(txwait(&w, sim_ready, sim_ms, sim_relax) == 1);

	struct txwait early = { 0, 0 };	/* a clock that does not run: the poll bound ends the wait */
	sim_reset(UINT64_MAX);
	sim_polls = 0;
	CHECK(txwait(&early, sim_ready, frozen_ms, sim_relax) == 0);
	CHECK(sim_polls == TXWAIT_POLLS + 1 && early.dropped == 1);
}

int main(void)
{
	test_walk_normal();
	test_walk_stops_on_bad_frames();
	test_walk_from_ist_into_task_stack();
	test_walk_from_a_prologue();
	test_symtab();
	test_printf_and_parse();
	test_txwait();
	return check_summary();
}
