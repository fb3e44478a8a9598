/* SPDX-License-Identifier: MIT */
/* trap.h: the register frame every interrupt and exception entry saves, and vector numbers. */
#ifndef TRAP_H
#define TRAP_H
#include <stdint.h>

#define T_NMI 2
#define T_DF 8
#define T_GP 13
#define T_MC 18
#define T_IRQ0 32			/* first external interrupt vector */
/*
 * The tick has the highest priority class (vector >> 4 = 15): when it and a device interrupt
 * are pending together (QEMU raises both in one main-loop pass), the LAPIC delivers the tick
 * first, so it samples what the CPU was doing (often idle) rather than the task the device
 * interrupt switched to. At 0x20 it lost to the NIC (0x25) and the profile blamed the net task.
 */
#define T_TIMER 0xf0			/* LAPIC timer */
#define T_COM1 36			/* COM1 via the IOAPIC */
#define T_NET 37			/* virtio-net INTx via the IOAPIC */
#define T_SPURIOUS 255			/* LAPIC spurious vector */

/* Saved by entry.S; field order is the push order reversed. */
struct trapframe {
	uint64_t rax, rbx, rcx, rdx, rsi, rdi, rbp;
	uint64_t r8, r9, r10, r11, r12, r13, r14, r15;
	uint64_t vector;		/* pushed by the per-vector stub */
	uint64_t error;			/* hardware error code, or 0 */
	uint64_t rip, cs, rflags, rsp, ss;	/* pushed by the CPU */
};

#define TF_PC(tf) ((tf)->rip)

void trap(struct trapframe *tf);
const char *trap_name(uint64_t vector);
extern uint64_t trap_unexpected;	/* interrupts on vectors nobody handles */
#endif
