/* SPDX-License-Identifier: MIT */
/* arch.c (x86_64): the shell's CPU-specific pieces: APIC ids, clocks, lscpu, poweroff, #UD. */
#include "arch.h"
#include "acpi.h"
#include "cpu.h"
#include "cpuinfo.h"
#include "lib.h"

#define DEBUG_EXIT_PORT 0xf4		/* QEMU isa-debug-exit: status = (value << 1) | 1 */
#define DEBUG_EXIT_POWEROFF 0x10	/* -> QEMU exit status 33, documented in the README */
#define ACPI_SLP_EN (1 << 13)		/* PM1 control: sleep enable; SLP_TYP 0 = S5 on QEMU */

uint64_t arch_cpu_hwid(const struct cpu *c)
{
	return c->apic_id;
}

void arch_clocks_print(struct out *o)
{
	out_printf(o, "clocks:      tsc %lu kHz, lapic timer %lu kHz (/16), calibrated on the PIT\n",
		   tsc_hz() / 1000, lapic_timer_hz() / 1000);
}

void arch_lscpu(struct out *o)
{
	struct cpuinfo ci;
	cpuinfo_read(&ci);
	cpuinfo_print(o, &ci);
}

void arch_stop_others(void)
{
	lapic_nmi_others();		/* their NMI handler sees `panicking` or halts */
}

void arch_poweroff(struct out *o)
{
	outb(DEBUG_EXIT_PORT, DEBUG_EXIT_POWEROFF);	/* QEMU with isa-debug-exit ends here */
	uint16_t pm1a = acpi_pm1a_cnt();
	if (pm1a)
		outw(pm1a, ACPI_SLP_EN);		/* ACPI S5 */
	delay_us(100000);
	out_puts(o, "poweroff: no isa-debug-exit or ACPI power-off; halting all cpus\n");
	lapic_nmi_others();
	halt_forever();
}

void task_start(void);		/* switch.S: where a new task's first swtch returns; jumps to task_entry */

/*
 * Initial stack, as swtch will pop it: r15 r14 r13 r12 rbx rbp, then the return address
 * task_start (which jumps to task_entry), then a zero "caller" so a frame-pointer or CFI walk
 * ends there. rbp = 0 too. After swtch's ret, rsp % 16 == 8 as at any function entry.
 */
uint64_t arch_task_stack_init(uint8_t *top)
{
	uint64_t *sp = (uint64_t *)top;
	*--sp = 0;			/* fake return address of task_entry: ends the chain */
	*--sp = (uint64_t)task_start;
	for (int i = 0; i < 6; i++)
		*--sp = 0;
	return (uint64_t)sp;
}
