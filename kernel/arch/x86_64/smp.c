/* SPDX-License-Identifier: MIT */
/* smp.c: starts the application processors with INIT-SIPI-SIPI through a low trampoline. */
#include "apic.h"
#include "console.h"
#include "cpu.h"
#include "layout.h"
#include "lib.h"
#include "mem.h"
#include "panic.h"
#include "sched.h"
#include "smp.h"
#include "x86.h"

#define AP_STACK_SIZE 16384

extern char trampoline_start[], trampoline_end[], tr_cr3[], tr_stack[], tr_entry[];
extern char boot_pml4[];

static struct cpu *volatile ap_booting;
static uint8_t *ap_stack[MAX_CPUS];	/* each AP's boot stack, later its idle task's */

static void *tr_field(char *sym)
{
	return (uint8_t *)P2V(AP_TRAMPOLINE_PA) + (sym - trampoline_start);
}

/* First C code on an AP, on the stack smp_boot gave it; becomes the AP's idle task. */
static void ap_main(void)
{
	struct cpu *c = ap_booting;
	cpu_init(c);
	lapic_init();
	sched_init_cpu();
	c->idle->stack = ap_stack[c->id];
	c->idle->stack_size = AP_STACK_SIZE;
	timer_start();
	WRITE_ONCE(c->online, 1);	/* the BSP waits for this before starting the next AP */
	idle_loop();
}

void smp_boot(void)
{
	memcpy(P2V(AP_TRAMPOLINE_PA), trampoline_start, (size_t)(trampoline_end - trampoline_start));
	*(uint32_t *)tr_field(tr_cr3) = (uint32_t)KV2P(boot_pml4);
	*(uint64_t *)tr_field(tr_entry) = (uint64_t)ap_main;
	for (int i = 1; i < ncpu; i++) {
		struct cpu *c = &cpus[i];
		c->id = i;
		uint8_t *stack = kzalloc(AP_STACK_SIZE);
		if (!stack)
			panic("smp: no memory for cpu%d's stack", i);
		ap_stack[i] = stack;
		*(uint64_t *)tr_field(tr_stack) = (uint64_t)(stack + AP_STACK_SIZE);
		ap_booting = c;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);	/* parameters visible before the SIPI */
		/* Intel MP spec B.4: INIT, 10 ms, SIPI, 200 us, SIPI. */
		lapic_send_init(c->apic_id);
		delay_us(10000);
		lapic_send_sipi(c->apic_id, AP_TRAMPOLINE_PA >> 12);
		delay_us(200);
		lapic_send_sipi(c->apic_id, AP_TRAMPOLINE_PA >> 12);
		uint64_t deadline = uptime_ms() + 2000;
		while (!READ_ONCE(c->online) && uptime_ms() < deadline)
			cpu_relax();
		if (!c->online)
			kprintf("smp: cpu%d (apic %u) did not start\n", i, c->apic_id);
	}
}

void idle_loop(void)
{
	for (;;) {
		/* sti takes effect after the next instruction, so no interrupt slips in before hlt. */
		__asm__ volatile("sti; hlt" ::: "memory");
	}
}
