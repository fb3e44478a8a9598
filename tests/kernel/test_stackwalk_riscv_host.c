/* SPDX-License-Identifier: MIT */
/* test_stackwalk_riscv_host.c: host unit tests of the riscv64 frame walk (arch/riscv64/stackwalk.c) on literal words. */
#include <stdio.h>
#include <string.h>

#include "cpu.h"
#include "sched.h"
#include "stacktrace.h"
#include "symtab.h"

struct task tasks[MAX_TASKS];
struct cpu cpus[MAX_CPUS];
int ncpu = 1;
/* "Kernel text": 4 KiB of RISC-V instruction words, as the linker script lays them out. */
__asm__(".data\n.balign 16\n.globl __text_start, __text_end\n"
	"__text_start: .space 4096\n__text_end: .byte 0\n.text");
extern char __text_start[], __text_end[];
#define TEXT ((uint64_t)__text_start)

/* nonleaf [0, 0x100), leaf [0x100, 0x180), caller [0x200, 0x300). */
const uint64_t symtab_count = 3;
uint64_t symtab_addr[3];
const uint32_t symtab_size[3] = { 0x100, 0x80, 0x100 };
const uint32_t symtab_name[3] = { 0, 8, 13 };
const char symtab_strings[] = "nonleaf\0leaf\0caller";

static int passed, failed;
#define CHECK(cond) do { if (cond) passed++; else { failed++; \
	fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); } } while (0)

/* GCC 12's frames (RV64I encodings, no C extension), as objdump shows them. */
#define ADDI_SP_M16 0xff010113u		/* addi sp, sp, -16 */
#define SD_RA_8 0x00113423u		/* sd ra, 8(sp) */
#define SD_S0_0 0x00813023u		/* sd s0, 0(sp) */
#define SD_S0_8 0x00813423u		/* sd s0, 8(sp): a leaf saves only s0 */
#define ADDI_S0_16 0x01010413u		/* addi s0, sp, 16 */
#define NOP 0x00000013u
#define LD_RA_8 0x00813083u
#define LD_S0_0 0x00013403u
#define LD_S0_8 0x00813403u
#define ADDI_SP_16 0x01010113u
#define RET 0x00008067u

static uint64_t stack[512] __attribute__((aligned(16)));

static void put(uint64_t off, const uint32_t *w, int n)
{
	memcpy(__text_start + off, w, 4 * (size_t)n);
}

static void setup(void)
{
	memset(tasks, 0, sizeof(tasks));
	memset(stack, 0, sizeof(stack));
	tasks[0].state = TASK_RUNNING;
	tasks[0].stack = (uint8_t *)stack;
	tasks[0].stack_size = sizeof(stack);
	for (int i = 0; i < 3; i++)
		symtab_addr[i] = TEXT + (i == 2 ? 0x200 : 0x100 * (uint64_t)i);
	const uint32_t nonleaf[] = { ADDI_SP_M16, SD_RA_8, SD_S0_0, ADDI_S0_16, NOP, NOP, LD_RA_8, LD_S0_0, ADDI_SP_16, RET };
	const uint32_t leaf[] = { ADDI_SP_M16, SD_S0_8, ADDI_S0_16, NOP, NOP, LD_S0_8, ADDI_SP_16, RET };
	put(0, nonleaf, 10);
	put(0x100, leaf, 8);
}

/* A frame whose s0 is &stack[top]: the record {next s0, ra} at s0 - 16. */
static uint64_t record(int top, uint64_t next, uint64_t ra)
{
	stack[top - 2] = next;
	stack[top - 1] = ra;
	return (uint64_t)&stack[top];
}

static void test_prologue_and_epilogue_words(void)
{
	setup();
	CHECK(rv_frame_not_set_up(TEXT, 1));			/* at the entry: nothing saved */
	CHECK(rv_frame_not_set_up(TEXT + 4, 0));		/* at sd ra */
	CHECK(rv_frame_not_set_up(TEXT + 8, 0));		/* at sd s0 */
	CHECK(rv_frame_not_set_up(TEXT + 12, 0));		/* at addi s0: s0 still the caller's */
	CHECK(!rv_frame_not_set_up(TEXT + 16, 0));		/* the body */
	CHECK(!rv_frame_not_set_up(TEXT + 24, 0));		/* at ld ra: s0 still ours */
	CHECK(!rv_frame_not_set_up(TEXT + 28, 0));		/* at ld s0: not executed yet */
	CHECK(rv_frame_not_set_up(TEXT + 32, 0));		/* after ld s0 */
	CHECK(rv_frame_not_set_up(TEXT + 36, 0));		/* at ret */
	CHECK(!rv_frame_not_set_up(TEXT + 18, 0));		/* misaligned: no guess */
	CHECK(!rv_frame_not_set_up((uint64_t)stack, 0));	/* not text: no guess */
}

static void test_walk_from_a_nonleaf_body(void)
{
	setup();
	uint64_t top = record(500, 0, 0);			/* task_entry's: zeros end the chain */
	uint64_t caller = record(480, top, TEXT + 0x220);
	uint64_t fp = record(460, caller, TEXT + 0x210);	/* nonleaf's own record */
	uint64_t out[8];
	int n = stacktrace_interrupted_lr(TEXT + 16, fp, (uint64_t)&stack[450], TEXT + 0x250, out, 8);
	CHECK(n == 2 && out[0] == TEXT + 0x210 && out[1] == TEXT + 0x220);	/* lr is stale here: unused */
}

static void test_walk_from_a_leaf_takes_ra(void)
{
	setup();
	uint64_t top = record(500, 0, 0);
	uint64_t caller = record(480, top, TEXT + 0x220);	/* the leaf's caller's record */
	stack[469] = caller;					/* the leaf's: only s0, at s0 - 8 */
	uint64_t fp = (uint64_t)&stack[470], out[8];
	int n = stacktrace_interrupted_lr(TEXT + 0x10c, fp, (uint64_t)&stack[468], TEXT + 0x210, out, 8);
	CHECK(n == 2 && out[0] == TEXT + 0x210 && out[1] == TEXT + 0x220);
	/* In its prologue (before addi s0) s0 is still the caller's: ra, then the caller's chain. */
	n = stacktrace_interrupted_lr(TEXT + 0x104, caller, (uint64_t)&stack[468], TEXT + 0x210, out, 8);
	CHECK(n == 2 && out[0] == TEXT + 0x210 && out[1] == TEXT + 0x220);
	/* A leaf slot holding a lower address (or a loop) is no frame: nothing from ra. */
	stack[469] = (uint64_t)&stack[400];
	n = stacktrace_interrupted_lr(TEXT + 0x10c, fp, (uint64_t)&stack[468], TEXT + 0x210, out, 8);
	CHECK(n == 0 || out[0] != TEXT + 0x210);
	CHECK(stacktrace_interrupted_lr(TEXT + 0x10c, fp, (uint64_t)&stack[468], TEXT + 0x210, out, 0) == 0);
}

int main(void)
{
	test_prologue_and_epilogue_words();
	test_walk_from_a_nonleaf_body();
	test_walk_from_a_leaf_takes_ra();
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
