/* SPDX-License-Identifier: MIT */
/* trap.h (aarch64): the frame every exception entry saves (entry.S), and the interrupt ids. */
#ifndef TRAP_H
#define TRAP_H
#include <stdint.h>

/* Which of the vector table's 16 entries was taken (entry.S passes it). */
#define K_SYNC_SP0 0
#define K_SYNC 4			/* current EL, SP_EL1: the kernel's own exceptions */
#define K_IRQ 5
#define K_FIQ 6
#define K_SERROR 7

/* GICv3 interrupt ids on QEMU's virt machine. */
#define INTID_STOP 1			/* SGI: stop (panic, poweroff), at PRIO_NMI */
#define INTID_PMU 23			/* PPI 7: PMUv3 overflow, at PRIO_NMI */
#define INTID_VTIMER 27			/* PPI 11: EL1 virtual timer, the tick */
#define INTID_UART 33			/* SPI 1: PL011 */
#define INTID_SPURIOUS 1023

/*
 * Saved by entry.S. The last two words are a frame record {interrupted x29, interrupted pc}
 * that x29 points at while trap() runs, so a frame-pointer walk goes from trap() into the
 * interrupted function and on through its callers (as x86_64's trap_common does).
 */
struct trapframe {
	uint64_t x[31];			/* x0..x30 */
	uint64_t sp;			/* interrupted SP (SP_EL1: the same stack, above this frame) */
	uint64_t elr, spsr;		/* interrupted pc and PSTATE */
	uint64_t pmr;			/* interrupted ICC_PMR_EL1: restored on the way out */
	uint64_t kind;			/* K_* */
	uint64_t esr, far;
	uint64_t fr_fp, fr_pc;		/* the frame record */
};
#define TF_SIZE 320
_Static_assert(sizeof(struct trapframe) == TF_SIZE, "entry.S's TF_SIZE");

#define TF_PC(tf) ((tf)->elr)

void trap(struct trapframe *tf);
extern uint64_t trap_unexpected;	/* interrupts nobody handles */
extern uint64_t pmu_unclaimed;		/* PMU interrupts with no overflow of ours */
#endif
