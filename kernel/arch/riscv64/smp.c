/* SPDX-License-Identifier: MIT */
/* smp.c (riscv64): finds the harts and starts them with SBI HSM hart_start; the idle loop. */
#include "smp.h"
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "mem.h"
#include "panic.h"
#include "plic.h"
#include "sbi.h"
#include "sched.h"
#include "timer.h"

#define AP_STACK_SIZE 16384
#define HSM_STOPPED 1

extern char secondary_entry[];		/* boot.S */
static uint8_t *ap_stack[MAX_CPUS];
uint64_t ap_boot_sp;			/* the stack top of the hart being started, for boot.S's late_secondary */

/*
 * HART_START_AT_ENTRY (the kernel-hartrace build, a test's): start each hart at _start, where a
 * firmware that publishes START_PENDING before the start address may send it (boot.S), so that
 * the test sees that path every boot rather than once in hundreds.
 */
#ifdef HART_START_AT_ENTRY
extern char _start[];
#define HART_ENTRY _start
#else
#define HART_ENTRY secondary_entry
#endif

/*
 * QEMU virt numbers its harts 0, 1, 2, ...: the harts are those HSM hart_get_status knows
 * (an invalid id is an error). OpenSBI's boot hart is any of them (its lottery), so cpu0 is
 * whichever hart entered _start, and the others follow in hart-id order.
 */
void smp_discover(uint64_t boot_hart)
{
	ncpu = 1;
	cpus[0].hartid = boot_hart;
	for (uint64_t h = 0; h < MAX_CPUS && ncpu < MAX_CPUS; h++) {
		if (h == boot_hart)
			continue;
		if (sbi_call(SBI_EXT_HSM, SBI_HSM_HART_GET_STATUS, h, 0, 0, 0, 0).error != SBI_SUCCESS)
			break;
		cpus[ncpu].hartid = h;
		cpus[ncpu].id = ncpu;
		ncpu++;
	}
}

/* First C code on a secondary hart, on the stack smp_boot gave it; becomes its idle task. */
void ap_main(uint64_t hartid);
void ap_main(uint64_t hartid)
{
	struct cpu *c = 0;
	for (int i = 1; i < ncpu; i++)
		if (cpus[i].hartid == hartid)
			c = &cpus[i];
	if (!c)
		halt_forever();
	cpu_init(c);
	set_sie_bits(1ul << IRQ_S_SOFT);	/* the stop IPI */
	plic_hart_init();
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
		ap_boot_sp = (uint64_t)(stack + AP_STACK_SIZE);
		__atomic_thread_fence(__ATOMIC_SEQ_CST);	/* the stack and cpus[] before the hart runs */
		struct sbiret r = sbi_call(SBI_EXT_HSM, SBI_HSM_HART_START, c->hartid, (uint64_t)HART_ENTRY,
					   (uint64_t)(stack + AP_STACK_SIZE), 0, 0);
		if (r.error != SBI_SUCCESS) {
			kprintf("smp: cpu%d (hart %lu): SBI hart_start returned %ld\n", i, c->hartid, r.error);
			continue;
		}
		uint64_t deadline = uptime_ms() + 2000;
		while (!READ_ONCE(c->online) && uptime_ms() < deadline)
			cpu_relax();
		if (!c->online)
			kprintf("smp: cpu%d (hart %lu) did not start\n", i, c->hartid);
	}
}

/* wfi wakes on a pending interrupt even with SIE clear; setting SIE first lets it be taken. */
void idle_loop(void)
{
	for (;;) {
		irq_enable();
		__asm__ volatile("wfi" ::: "memory");
	}
}
