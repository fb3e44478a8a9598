/* SPDX-License-Identifier: MIT */
/* stackwalk.c (riscv64): the first frames of an interrupted context, from pc, s0, sp and ra. */
/*
 * GCC's RISC-V frames with -fno-omit-frame-pointer (kernel.mk builds without the C extension,
 * so every instruction is 4 bytes): the prologue is `addi sp, sp, -N`, `sd ra, N-8(sp)`,
 * `sd s0, N-16(sp)`, `addi s0, sp, N`, so s0 is the frame's CFA and the record {caller's s0,
 * ra} sits at s0 - 16; the epilogue `ld ra`, `ld s0`, `addi sp, sp, N`, `ret`. A leaf function
 * saves only s0, at s0 - 8, where a non-leaf keeps ra: a stack address there (rather than a
 * text one) says "leaf", and its caller is in ra. Until `addi s0` ran, and from the `ld s0`
 * on, s0 is the caller's frame and the return address only in ra.
 */
#include "stacktrace.h"
#include "symtab.h"

#define RV_ADDI_S0_SP_MASK 0x000fffffu		/* addi s0, sp, imm */
#define RV_ADDI_S0_SP 0x00010413u
#define RV_SD_SP_MASK 0x01fff07fu		/* sd rs2, imm(sp): rs2, rs1, funct3, opcode */
#define RV_SD_RA_SP 0x00113023u
#define RV_SD_S0_SP 0x00813023u
#define RV_LD_S0_SP_MASK 0x000fffffu		/* ld s0, imm(sp) */
#define RV_LD_S0_SP 0x00013403u
#define RV_RET 0x00008067u			/* jalr zero, 0(ra) */

static int insn_at(uint64_t p, uint32_t *w)
{
	if ((p & 3) || !kernel_text_contains(p) || !kernel_text_contains(p + 3))
		return 0;
	*w = *(const uint32_t *)p;
	return 1;
}

int rv_frame_not_set_up(uint64_t pc, int at_entry)
{
	uint32_t w, prev;
	if (at_entry)
		return 1;
	if (!insn_at(pc, &w))
		return 0;
	if ((w & RV_ADDI_S0_SP_MASK) == RV_ADDI_S0_SP || (w & RV_SD_SP_MASK) == RV_SD_RA_SP ||
	    (w & RV_SD_SP_MASK) == RV_SD_S0_SP || w == RV_RET)
		return 1;
	return insn_at(pc - 4, &prev) && (prev & RV_LD_S0_SP_MASK) == RV_LD_S0_SP;
}

int stacktrace_interrupted_lr(uint64_t pc, uint64_t fp, uint64_t sp, uint64_t lr, uint64_t *out, int max)
{
	uint64_t off = 1, lo, hi;
	if (max <= 0)
		return 0;
	if (kernel_text_contains(pc) && symtab_resolve(pc, &off) == 0)
		off = 1;
	if (!kernel_text_contains(lr))
		return stacktrace_from(fp, sp, out, max);
	if (rv_frame_not_set_up(pc, off == 0)) {
		out[0] = lr;
		return 1 + stacktrace_from(fp, sp, out + 1, max - 1);
	}
	/* A leaf's record: [s0 - 8] is the caller's s0, further up the same stack. */
	if (!(fp & 7) && stack_bounds(sp, &lo, &hi) && fp >= lo + 8 && fp <= hi) {
		uint64_t up = ((const uint64_t *)fp)[-1];
		if (!kernel_text_contains(up) && up > fp && up <= hi) {
			out[0] = lr;
			return 1 + stacktrace_from(up, sp, out + 1, max - 1);
		}
	}
	return stacktrace_from(fp, sp, out, max);
}
