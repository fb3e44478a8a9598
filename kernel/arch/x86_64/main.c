/* SPDX-License-Identifier: MIT */
/* main.c: kmain, the boot CPU's path from the PVH entry to a ticking SMP kernel with a shell. */
#include "acpi.h"
#include "apic.h"
#include "boot.h"
#include "console.h"
#include "cpu.h"
#include "lib.h"
#include "mem.h"
#include "net.h"
#include "sched.h"
#include "shell.h"
#include "smp.h"
#include "symtab.h"
#include "trap.h"
#include "layout.h"
#include "x86.h"

extern char boot_stack[];

/* The 8259 PICs: remapped away from the exception vectors, then fully masked. */
static void pic_disable(void)
{
	outb(0x20, 0x11); outb(0xa0, 0x11);	/* ICW1: init, ICW4 follows */
	outb(0x21, 0xf0); outb(0xa1, 0xf8);	/* ICW2: vectors 0xf0.. and 0xf8.. */
	outb(0x21, 0x04); outb(0xa1, 0x02);	/* ICW3: cascade on IRQ2 */
	outb(0x21, 0x01); outb(0xa1, 0x01);	/* ICW4: 8086 mode */
	outb(0x21, 0xff); outb(0xa1, 0xff);	/* mask everything */
}

static void console_irq_route(void)
{
	int level_low;
	uint32_t gsi = acpi_isa_irq_gsi(4, &level_low);	/* COM1 is ISA IRQ 4 */
	ioapic_route(gsi, T_COM1, cpus[0].apic_id, level_low);
}

void kmain(const struct hvm_start_info *si)
{
	console_init();			/* COM1, so everything after can talk */
	boot_info_init(si);		/* memory map, command line, RSDP */
	mem_init();			/* page allocator over usable RAM */
	idt_init();			/* shared IDT, entry stubs from entry.S */
	cpu_init(&cpus[0]);		/* BSP: GDT, TSS + IST stacks, GS base */
	pic_disable();			/* legacy PIC off: the LAPIC and IOAPIC do it all */
	acpi_init();			/* CPUs and IOAPIC from the MADT */
	lapic_init();			/* this CPU's local APIC */
	timer_calibrate();		/* LAPIC timer and TSC against the PIT */
	sched_init_cpu();		/* this flow becomes cpu0's idle task */
	cpus[0].idle->stack = (uint8_t *)boot_stack;
	cpus[0].idle->stack_size = BOOT_STACK_SIZE;
	timer_start();			/* 100 Hz tick on cpu0 */
	cpus[0].online = 1;
	kprintf("gdbsample test kernel: %d cpus, %lu MiB free, tsc %lu MHz, %lu symbols\n",
		ncpu, mem_free_bytes() >> 20, tsc_hz() / 1000000, symtab_count_get());
	smp_boot();			/* the other CPUs, each ends in its idle loop */
	console_irq_route();		/* COM1 input interrupts to cpu0 */
	net_init();			/* virtio-net, if any: the net task and the UDP shell */
	shell_start();			/* the serial shell task on cpu0 */
	idle_loop();			/* interrupts on; the tick schedules from here */
}
