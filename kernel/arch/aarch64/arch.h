/* SPDX-License-Identifier: MIT */
/* arch.h (aarch64): what shared kernel code needs from the CPU, under names every arch provides. */
#ifndef ARCH_H
#define ARCH_H
#include <stdint.h>
#include "a64.h"

#define ARCH_NAME "aarch64"
#define ARCH_HAS_NET 0			/* no network driver on the virt machine yet */
#define ARCH_HAS_USER 0			/* no user mode: `work user` is riscv64 only */
#define ARCH_HAS_FIRMWARE 0		/* no firmware calls: `work sbi` is riscv64 only */
#define TICK_HZ 100

struct cpu;
struct out;

/*
 * "Interrupts off" masks by GICv3 priority, as Linux's arm64 pseudo-NMI does: ICC_PMR_EL1 =
 * PMR_MASKED lets only interrupts of priority PRIO_NMI (the PMU, the stop SGI) through, so the
 * PMU samples code that runs with interrupts off. PSTATE.I is the hardware's own mask (set on
 * exception entry); the saved flags hold both, and "enabled" means PMR open and I clear.
 */
static inline uint64_t irq_save(void)
{
	uint64_t f = (pmr_get() << 8) | (read_daif() & DAIF_I);
	pmr_set(PMR_MASKED);
	return f;
}
static inline void irq_restore(uint64_t f)
{
	pmr_set(f >> 8);
	if (!(f & DAIF_I))
		__asm__ volatile("msr daifclr, #2" ::: "memory");
}
static inline void irq_disable(void) { pmr_set(PMR_MASKED); }
static inline void irq_enable(void)
{
	pmr_set(PMR_OPEN);
	__asm__ volatile("msr daifclr, #2" ::: "memory");
}
static inline int irq_flags_enabled(uint64_t f) { return (f >> 8) == PMR_OPEN && !(f & DAIF_I); }

static inline uint64_t read_fp(void) { uint64_t v; __asm__ volatile("mov %0, x29" : "=r"(v)); return v; }
static inline uint64_t read_sp(void) { uint64_t v; __asm__ volatile("mov %0, sp" : "=r"(v)); return v; }
static inline uint64_t cycles(void)		/* the generic timer's virtual count */
{
	uint64_t v;
	__asm__ volatile("isb; mrs %0, cntvct_el0" : "=r"(v) :: "memory");
	return v;
}
static inline uint64_t cycles_hz(void) { uint64_t v; __asm__ volatile("mrs %0, cntfrq_el0" : "=r"(v)); return v; }
#define CYCLES_NAME "cntvct"

uint64_t uptime_ms(void);			/* timer.c: from CNTVCT since boot */
void delay_us(uint64_t us);

uint64_t arch_cpu_hwid(const struct cpu *c);	/* MPIDR_EL1's affinity fields */
void arch_clocks_print(struct out *o);		/* lscpu's clocks line */
void arch_stop_others(void);			/* every other CPU stops (an SGI above the mask) */
void arch_poweroff(struct out *o) __attribute__((noreturn));	/* PSCI SYSTEM_OFF */
/* A real undefined-instruction exception, raised in the caller (the panic report starts there). */
static inline void arch_raise_exception(void) { __asm__ volatile("udf #0"); }
void arch_lscpu(struct out *o);			/* MIDR, ID_AA64DFR0, PMCR_EL0 */
/* The initial stack of a new task, as swtch pops it: returns the saved stack pointer. */
uint64_t arch_task_stack_init(uint8_t *top);
#endif
