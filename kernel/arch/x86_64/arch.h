/* SPDX-License-Identifier: MIT */
/* arch.h (x86_64): what shared kernel code needs from the CPU, under names every arch provides. */
#ifndef ARCH_H
#define ARCH_H
#include <stdint.h>
#include "apic.h"
#include "x86.h"

#define ARCH_NAME "x86_64"
#define ARCH_HAS_NET 1			/* virtio-net over PCI, the UDP shell, netload */
#define ARCH_HAS_USER 0			/* no user mode: `work user` is riscv64 only */
#define ARCH_HAS_FIRMWARE 0		/* no firmware calls: `work sbi` is riscv64 only */

struct cpu;
struct out;

/* "Interrupts off" is RFLAGS.IF clear: the NMI is the only thing that still comes in. */
static inline uint64_t irq_save(void) { uint64_t f = read_rflags(); cli(); return f; }
static inline void irq_restore(uint64_t f) { if (f & RFLAGS_IF) sti(); }
static inline void irq_disable(void) { cli(); }
static inline void irq_enable(void) { sti(); }
static inline int irq_flags_enabled(uint64_t f) { return (f & RFLAGS_IF) != 0; }

static inline uint64_t read_fp(void) { return read_rbp(); }
static inline uint64_t read_sp(void) { return read_rsp(); }
static inline uint64_t cycles(void) { return rdtsc(); }		/* a constant-rate counter */
static inline uint64_t cycles_hz(void) { return tsc_hz(); }
#define CYCLES_NAME "tsc"

uint64_t arch_cpu_hwid(const struct cpu *c);	/* the local APIC id */
void arch_clocks_print(struct out *o);		/* lscpu's clocks line */
void arch_stop_others(void);			/* every other CPU stops (NMI), for panic/poweroff */
void arch_poweroff(struct out *o) __attribute__((noreturn));
/* A real invalid-opcode exception, raised in the caller (the panic report starts there). */
static inline void arch_raise_exception(void) { __asm__ volatile("ud2"); }
void arch_lscpu(struct out *o);			/* CPUID: vendor, model, hypervisor, PMU claims */
/* The initial stack of a new task, as swtch pops it: returns the saved stack pointer. */
uint64_t arch_task_stack_init(uint8_t *top);
#endif
