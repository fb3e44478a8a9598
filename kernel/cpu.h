/* SPDX-License-Identifier: MIT */
/* cpu.h: per-CPU state (one struct per CPU, found through GS, TPIDR_EL1 or tp) and CPU setup. */
#ifndef CPU_H
#define CPU_H
#include <stdint.h>
#include "spinlock.h"

#define MAX_CPUS 8
#define IST_STACK_SIZE 8192

struct task;

#if defined(__x86_64__)
struct tss {
	uint32_t rsv0;
	uint64_t rsp[3];	/* stacks for privilege changes (unused: no user mode) */
	uint64_t rsv1;
	uint64_t ist[7];	/* IST1 NMI, IST2 #DF, IST3 #MC */
	uint64_t rsv2;
	uint16_t rsv3;
	uint16_t iomap;
} __attribute__((packed));
#endif

struct cpu {
	struct cpu *self;		/* gs:0 on x86_64, so mycpu() is one load; TPIDR_EL1 on aarch64, tp on riscv64 */
	int id;				/* logical index 0..ncpu-1 */
	uint32_t apic_id;		/* x86_64: local APIC id from the MADT */
	uint64_t mpidr;			/* aarch64: MPIDR_EL1 affinity, the PSCI target */
	uint64_t pmr;			/* aarch64: ICC_PMR_EL1 as last written (entry.S: CPU_PMR) */
	uint64_t hartid;		/* riscv64: the hart id, the SBI HSM and IPI target */
	volatile int online;		/* set by the CPU itself once it ticks */
	struct task *current;		/* task running now */
	struct task *idle;		/* this CPU's idle task */
	struct spinlock rq_lock;	/* protects runq and the state of tasks on it */
	struct task *runq;		/* circular list of this CPU's tasks (not idle) */
	struct task *zombie;		/* exited task whose stack is freed after the switch */
	volatile uint64_t ticks;	/* timer interrupts taken */
	int need_resched;		/* an interrupt woke a task here: switch on the way out */
#if defined(__x86_64__)
	uint64_t gdt[5];		/* null, code, data, TSS (two slots) */
	struct tss tss;			/* holds the IST stack pointers */
	uint8_t *ist_nmi, *ist_df, *ist_mc;	/* IST stacks (IST_STACK_SIZE each) */
#endif
};

extern struct cpu cpus[MAX_CPUS];
extern int ncpu;			/* CPUs found in the MADT (<= MAX_CPUS) */

static inline struct cpu *mycpu(void)
{
	struct cpu *c;
#if defined(__aarch64__)
	__asm__ volatile("mrs %0, tpidr_el1" : "=r"(c));
#elif defined(__riscv)
	__asm__ volatile("mv %0, tp" : "=r"(c));
#else
	__asm__ volatile("mov %%gs:0, %0" : "=r"(c));
#endif
	return c;
}

void cpu_init(struct cpu *c);		/* x86_64: GDT, TSS, IDT, GS base; aarch64: vectors, TPIDR_EL1; riscv64: stvec, tp */
void idt_init(void);			/* build the shared IDT once */
int cpu_online_count(void);
#endif
