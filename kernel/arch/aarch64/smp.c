/* SPDX-License-Identifier: MIT */
/* smp.c (aarch64): finds the CPUs and starts them with PSCI CPU_ON; the idle loop. */
#include "smp.h"
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "gic.h"
#include "mem.h"
#include "panic.h"
#include "psci.h"
#include "sched.h"
#include "timer.h"
#include "trap.h"

#define AP_STACK_SIZE 16384

extern char secondary_entry[];		/* boot.S */
static uint8_t *ap_stack[MAX_CPUS];

int64_t psci_call(uint64_t fn, uint64_t a1, uint64_t a2, uint64_t a3)
{
	register uint64_t x0 __asm__("x0") = fn, x1 __asm__("x1") = a1, x2 __asm__("x2") = a2,
			 x3 __asm__("x3") = a3;
	__asm__ volatile("hvc #0" : "+r"(x0), "+r"(x1), "+r"(x2), "+r"(x3) :: "memory");
	return (int64_t)x0;
}

/*
 * QEMU virt numbers the CPUs' MPIDR Aff0 0, 1, 2, ... (16 to a cluster with GICv3): the CPUs
 * are those AFFINITY_INFO knows. Every CPU but the boot one starts powered off.
 */
void smp_discover(void)
{
	uint64_t boot = read_mpidr() & MPIDR_AFF_MASK;
	ncpu = 1;
	for (uint64_t aff0 = 0; aff0 < MAX_CPUS && ncpu < MAX_CPUS; aff0++) {
		if (aff0 == boot)
			continue;
		if (psci_call(PSCI_AFFINITY_INFO, aff0, 0, 0) < 0)
			break;
		cpus[ncpu].mpidr = aff0;
		cpus[ncpu].id = ncpu;
		ncpu++;
	}
}

/* First C code on a secondary CPU, on the stack smp_boot gave it; becomes its idle task. */
void ap_main(void);
void ap_main(void)
{
	struct cpu *c = 0;
	uint64_t me = read_mpidr() & MPIDR_AFF_MASK;
	for (int i = 1; i < ncpu; i++)
		if (cpus[i].mpidr == me)
			c = &cpus[i];
	if (!c)
		halt_forever();
	cpu_init(c);
	gic_cpu_init();
	gic_enable(INTID_STOP, PRIO_NMI);
	sched_init_cpu();
	c->idle->stack = ap_stack[c->id];
	c->idle->stack_size = AP_STACK_SIZE;
	timer_start();
	WRITE_ONCE(c->online, 1);
	idle_loop();
}

void smp_boot(void)
{
	for (int i = 1; i < ncpu; i++) {
		struct cpu *c = &cpus[i];
		uint8_t *stack = kzalloc(AP_STACK_SIZE);
		if (!stack)
			panic("smp: no memory for cpu%d's stack", i);
		ap_stack[i] = stack;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		int64_t rc = psci_call(PSCI_CPU_ON, c->mpidr, (uint64_t)secondary_entry,
				       (uint64_t)(stack + AP_STACK_SIZE));
		if (rc != PSCI_SUCCESS) {
			kprintf("smp: cpu%d (mpidr 0x%lx): PSCI CPU_ON returned %ld\n", i, c->mpidr, rc);
			continue;
		}
		uint64_t deadline = uptime_ms() + 2000;
		while (!READ_ONCE(c->online) && uptime_ms() < deadline)
			cpu_relax();
		if (!c->online)
			kprintf("smp: cpu%d (mpidr 0x%lx) did not start\n", i, c->mpidr);
	}
}

/* wfi wakes on a pending interrupt even when masked; opening the mask first lets it be taken. */
void idle_loop(void)
{
	for (;;) {
		irq_enable();
		__asm__ volatile("wfi" ::: "memory");
	}
}
