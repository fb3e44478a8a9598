/* SPDX-License-Identifier: MIT */
/* arch.h (riscv64): what shared kernel code needs from the CPU, under names every arch provides. */
#ifndef ARCH_H
#define ARCH_H
#include <stdint.h>
#include "rv.h"

#define ARCH_NAME "riscv64"
#define ARCH_HAS_NET 0			/* no network driver on the virt machine yet */
#define ARCH_HAS_USER 1			/* `work user`: a task in U-mode (user.S) */
#define ARCH_HAS_FIRMWARE 1		/* `work sbi`: a task calling into OpenSBI (sbi.c) */
#define TICK_HZ 100
#define TIMEBASE_HZ 10000000ul		/* QEMU virt's timebase-frequency (its DTB): the time CSR */

struct cpu;
struct out;

/*
 * "Interrupts off" is sstatus.SIE clear, the hart's one supervisor mask (a trap clears it too,
 * saving it in SPIE). No interrupt of S-mode gets through it: the counter-overflow interrupt
 * is masked like the others (RISC-V has no NMI for S-mode), so code with interrupts off is
 * sampled where they come back on, as the tick would.
 */
static inline uint64_t irq_save(void)
{
	uint64_t f;
	__asm__ volatile("csrrci %0, sstatus, 2" : "=r"(f) :: "memory");
	return f & SSTATUS_SIE;
}
static inline void irq_restore(uint64_t f)
{
	if (f & SSTATUS_SIE)
		__asm__ volatile("csrsi sstatus, 2" ::: "memory");
}
static inline void irq_disable(void) { __asm__ volatile("csrci sstatus, 2" ::: "memory"); }
static inline void irq_enable(void) { __asm__ volatile("csrsi sstatus, 2" ::: "memory"); }
static inline int irq_flags_enabled(uint64_t f) { return (f & SSTATUS_SIE) != 0; }

static inline uint64_t read_fp(void) { uint64_t v; __asm__ volatile("mv %0, s0" : "=r"(v)); return v; }
static inline uint64_t read_sp(void) { uint64_t v; __asm__ volatile("mv %0, sp" : "=r"(v)); return v; }
static inline uint64_t cycles(void) { return rdtime(); }	/* the platform timer's count */
static inline uint64_t cycles_hz(void) { return TIMEBASE_HZ; }
#define CYCLES_NAME "time"

uint64_t uptime_ms(void);			/* timer.c: from the time CSR since boot */
void delay_us(uint64_t us);

uint64_t arch_cpu_hwid(const struct cpu *c);	/* the hart id */
void arch_clocks_print(struct out *o);		/* lscpu's clocks line */
void arch_stop_others(void);			/* every other hart stops (an SBI IPI) */
void arch_poweroff(struct out *o) __attribute__((noreturn));	/* SBI SRST shutdown */
/* A real illegal-instruction exception, raised in the caller (the panic report starts there). */
static inline void arch_raise_exception(void) { __asm__ volatile("unimp"); }
void arch_lscpu(struct out *o);			/* SBI implementation, machine ids, PMU extension */
/* The initial stack of a new task, as swtch pops it: returns the saved stack pointer. */
uint64_t arch_task_stack_init(uint8_t *top);
/* user.S: run the calling task in U-mode (user_spin) until *killed; it then ends (trap.c). */
void enter_user(volatile int *killed) __attribute__((noreturn));
void firmware_spin(volatile int *killed);	/* sbi.c: SBI calls until killed */
#endif
