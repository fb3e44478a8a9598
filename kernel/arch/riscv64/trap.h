/* SPDX-License-Identifier: MIT */
/* trap.h (riscv64): the frame every trap entry saves (entry.S), and the PLIC's interrupt ids. */
#ifndef TRAP_H
#define TRAP_H
#include <stdint.h>

/* PLIC sources on QEMU virt (hw/riscv/virt.h). */
#define PLIC_IRQ_UART 10

/*
 * Saved by entry.S on the interrupted stack (the kernel runs only in S-mode: a trap stays on
 * it). The last two words are a frame record in the RISC-V layout -- {interrupted s0,
 * interrupted pc} just below the address s0 points at -- so a frame-pointer walk goes from
 * trap() into the interrupted function and on through its callers. That pc is exact, not a
 * return address: walkers must not look it up at pc - 4.
 */
struct trapframe {
	uint64_t x[32];			/* x0 (always 0) .. x31; x[2] is the interrupted sp */
	uint64_t sepc, sstatus;		/* interrupted pc and status (SPIE: its interrupt enable) */
	uint64_t scause, stval;
	uint64_t fr_fp, fr_pc;		/* the frame record */
};
#define TF_SIZE 304
_Static_assert(sizeof(struct trapframe) == TF_SIZE, "entry.S's TF_SIZE");

#define TF_PC(tf) ((tf)->sepc)

void trap(struct trapframe *tf);
extern uint64_t trap_unexpected;	/* interrupts nobody handles */
extern uint64_t pmu_unclaimed;		/* counter-overflow interrupts with no overflow of ours */
#endif
