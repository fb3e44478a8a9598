/* SPDX-License-Identifier: MIT */
/* stacktrace.c: frame-pointer walks bounded by the known stacks, plus symbolized printing. */
#include "stacktrace.h"
#include "cpu.h"
#include "sched.h"
#include "symtab.h"

#define MAX_STACK_SWITCHES 2	/* IST -> task stack is one; allow a little slack */
/* Where a frame record {caller's fp, return address} sits relative to the frame pointer:
 * at it on x86_64 and aarch64, just below it on RISC-V (s0 is the frame's CFA there). */
#if defined(__riscv) || defined(RISCV_WALK)	/* RISCV_WALK: the riscv64 walk's host test */
#define FRAME_RECORD_BELOW 16
#else
#define FRAME_RECORD_BELOW 0
#endif

static int on_task_stack(const struct task *t, uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	uint64_t b = (uint64_t)t->stack;
	if (t->state == TASK_FREE || !b || addr < b || addr >= b + t->stack_size)
		return 0;
	*lo = b;
	*hi = b + t->stack_size;
	return 1;
}

int stack_bounds(uint64_t addr, uint64_t *lo, uint64_t *hi)
{
	/* The common case first, in O(1): a sample's stack is the running task's (the profiler's
	 * handler runs on every sample, so a scan of every task here was most of its cost). */
#ifndef HOST_TEST	/* host unit tests have no per-CPU register */
	struct cpu *c = mycpu();
	if (c && c->current && on_task_stack(c->current, addr, lo, hi))
		return 1;
#endif
	for (int i = 0; i < MAX_TASKS; i++)
		if (on_task_stack(&tasks[i], addr, lo, hi))
			return 1;
#if defined(__x86_64__)
	for (int i = 0; i < ncpu; i++) {
		uint8_t *ist[3] = { cpus[i].ist_nmi, cpus[i].ist_df, cpus[i].ist_mc };
		for (int k = 0; k < 3; k++) {
			uint64_t b = (uint64_t)ist[k];
			if (b && addr >= b && addr < b + IST_STACK_SIZE) {
				*lo = b;
				*hi = b + IST_STACK_SIZE;
				return 1;
			}
		}
	}
#endif
	return 0;
}

int stacktrace_from(uint64_t fp, uint64_t sp, uint64_t *out, int max)
{
	uint64_t lo, hi;
	int n = 0, switches = 0;
	if (!stack_bounds(sp, &lo, &hi) && !stack_bounds(fp, &lo, &hi))
		return 0;
	while (n < max) {
		if (fp & 7)
			break;				/* misaligned: not a frame pointer */
		if (fp < lo + FRAME_RECORD_BELOW || fp - FRAME_RECORD_BELOW + 16 > hi) {	/* left this stack: another known one? */
			if (switches++ >= MAX_STACK_SWITCHES || /* fp < FRAME_RECORD_BELOW wraps: no stack */
			    !stack_bounds(fp - FRAME_RECORD_BELOW, &lo, &hi) || fp - FRAME_RECORD_BELOW + 16 > hi)
				break;
		}
		const uint64_t *frame = (const uint64_t *)(fp - FRAME_RECORD_BELOW);
		uint64_t next = frame[0], ret = frame[1];
		if (!kernel_text_contains(ret))
			break;				/* end of chain (task_entry's zero) or garbage */
		out[n++] = ret;
		if (next >= lo && next < hi && next <= fp)
			break;				/* must move up the same stack: a loop otherwise */
		fp = next;
	}
	return n;
}

#if defined(__x86_64__) || (!defined(__aarch64__) && !defined(__riscv))	/* host tests run the x86_64 walk */
#define OP_PUSH_RBP 0x55			/* push %rbp */
static const uint8_t mov_rsp_rbp[3] = { 0x48, 0x89, 0xe5 };	/* mov %rsp,%rbp */

int stacktrace_interrupted(uint64_t rip, uint64_t rbp, uint64_t rsp, uint64_t *out, int max)
{
	uint64_t lo, hi;
	int slot = -1;		/* which stack word holds the return address, if in a prologue */
	if (max <= 0)
		return 0;
	if (kernel_text_contains(rip) && kernel_text_contains(rip + 2)) {
		const uint8_t *p = (const uint8_t *)rip;
		if (p[0] == OP_PUSH_RBP)
			slot = 0;			/* at entry: [rsp] is the return address */
		else if (kernel_text_contains(rip - 1) && p[-1] == OP_PUSH_RBP && memcmp(p, mov_rsp_rbp, 3) == 0)
			slot = 1;			/* after push %rbp: [rsp + 8] */
	}
	if (slot >= 0 && !(rsp & 7) && stack_bounds(rsp, &lo, &hi) && rsp + 8 * (uint64_t)slot + 8 <= hi) {
		uint64_t ret = ((const uint64_t *)rsp)[slot];
		if (kernel_text_contains(ret)) {
			out[0] = ret;
			return 1 + stacktrace_from(rbp, rsp, out + 1, max - 1);
		}
	}
	return stacktrace_from(rbp, rsp, out, max);
}
#endif

/*
 * AArch64 (AAPCS64 frame records: [x29] = caller's x29, [x29 + 8] = return address, as on x86_64).
 * GCC's frame setup is `stp x29, x30, [sp, #-N]!` (or `sub sp` + `stp x29, x30, [sp, #M]`), then
 * `mov x29, sp` (or `add x29, sp, #M`); the epilogue `ldp x29, x30, ...` [`add sp`] `ret`. Until
 * x29 points at the new record, and again from the `ldp` on, the caller's return address is only
 * in LR and x29 is the caller's frame: the first caller is LR.
 */
#define A64_STP_FP_LR_MASK 0xffc07fffu		/* stp x29, x30, [sp, #imm] (pre-index or offset) */
#define A64_STP_FP_LR_PRE 0xa9807bfdu
#define A64_STP_FP_LR_OFF 0xa9007bfdu
#define A64_ADD_FP_SP_MASK 0xffc003ffu		/* add x29, sp, #imm (mov x29, sp is imm 0) */
#define A64_ADD_FP_SP 0x910003fdu
#define A64_LDP_FP_LR_MASK 0xffc07fffu		/* ldp x29, x30, [sp], #imm or [sp, #imm] */
#define A64_LDP_FP_LR_POST 0xa8c07bfdu
#define A64_LDP_FP_LR_OFF 0xa9407bfdu
#define A64_RET 0xd65f03c0u

int a64_frame_not_set_up(uint64_t pc, int at_entry)
{
	if (at_entry)
		return 1;
	if (!kernel_text_contains(pc) || (pc & 3))
		return 0;
	uint32_t w = *(const uint32_t *)pc;
	if ((w & A64_STP_FP_LR_MASK) == A64_STP_FP_LR_PRE || (w & A64_STP_FP_LR_MASK) == A64_STP_FP_LR_OFF ||
	    (w & A64_ADD_FP_SP_MASK) == A64_ADD_FP_SP || w == A64_RET)
		return 1;
	for (int back = 1; back <= 2; back++) {		/* just after the ldp: at `add sp` or `ret` */
		uint64_t p = pc - 4 * (uint64_t)back;
		if (!kernel_text_contains(p))
			break;
		uint32_t v = *(const uint32_t *)p;
		if ((v & A64_LDP_FP_LR_MASK) == A64_LDP_FP_LR_POST || (v & A64_LDP_FP_LR_MASK) == A64_LDP_FP_LR_OFF)
			return 1;
		if (v == A64_RET)
			break;
	}
	return 0;
}

#if !defined(__riscv) && !defined(RISCV_WALK)	/* riscv64's is arch/riscv64/stackwalk.c: its frame records differ */
int stacktrace_interrupted_lr(uint64_t pc, uint64_t fp, uint64_t sp, uint64_t lr, uint64_t *out, int max)
{
	uint64_t off = 1;
	if (max <= 0)
		return 0;
	if (kernel_text_contains(pc) && symtab_resolve(pc, &off) == 0)
		off = 1;
	if (kernel_text_contains(lr) && a64_frame_not_set_up(pc, off == 0)) {
		out[0] = lr;
		return 1 + stacktrace_from(fp, sp, out + 1, max - 1);
	}
	return stacktrace_from(fp, sp, out, max);
}
#endif

static void print_frame(struct out *o, int i, uint64_t addr)
{
	uint64_t off;
	const char *name = symtab_resolve(addr, &off);
	if (name)
		out_printf(o, "  #%d 0x%lx %s+0x%lx\n", i, addr, name, off);
	else
		out_printf(o, "  #%d 0x%lx ?\n", i, addr);
}

static void print_frames(struct out *o, uint64_t pc, const uint64_t *frames, int n)
{
	print_frame(o, 0, pc);
	for (int i = 0; i < n; i++)
		print_frame(o, i + 1, frames[i]);
}

#if defined(__x86_64__) || (!defined(__aarch64__) && !defined(__riscv))
void backtrace_print(struct out *o, uint64_t rip, uint64_t fp, uint64_t sp)
{
	uint64_t frames[32];
	print_frames(o, rip, frames, stacktrace_interrupted(rip, fp, sp, frames, (int)ARRAY_SIZE(frames)));
}
#else
void backtrace_print(struct out *o, uint64_t pc, uint64_t fp, uint64_t sp)
{
	uint64_t frames[32];
	print_frames(o, pc, frames, stacktrace_from(fp, sp, frames, (int)ARRAY_SIZE(frames)));
}
#endif

void backtrace_print_lr(struct out *o, uint64_t pc, uint64_t fp, uint64_t sp, uint64_t lr)
{
	uint64_t frames[32];
	print_frames(o, pc, frames, stacktrace_interrupted_lr(pc, fp, sp, lr, frames, (int)ARRAY_SIZE(frames)));
}
