/* SPDX-License-Identifier: MIT */
/* main.c (aarch64): kmain, the boot CPU's path from boot.S to a ticking SMP kernel with a shell. */
#include "arch.h"
#include "boot.h"
#include "console.h"
#include "cpu.h"
#include "gic.h"
#include "layout.h"
#include "lib.h"
#include "mem.h"
#include "panic.h"
#include "sched.h"
#include "shell.h"
#include "smp.h"
#include "symtab.h"
#include "timer.h"
#include "trap.h"
#include "uart.h"

extern char boot_stack[];
struct boot_info boot_info;
void smp_discover(void);

void kmain(void);
void kmain(void)
{
	cpu_init(&cpus[0]);		/* TPIDR_EL1, the vector table */
	console_init();			/* the PL011, so everything after can talk */
	boot_info.nmemmap = 1;		/* QEMU's DTB has the real size; we take a fixed share */
	boot_info.memmap[0] = (struct memmap_entry){ RAM_BASE, (uint64_t)RAM_USED_MB << 20, MEMMAP_RAM, 0 };
	mem_init();
	smp_discover();			/* CPUs from PSCI AFFINITY_INFO */
	gic_init();
	if (gic_cpu_init() != 0)
		panic("gic: no redistributor for mpidr 0x%lx", cpus[0].mpidr);
	gic_enable(INTID_STOP, PRIO_NMI);
	timer_init();
	sched_init_cpu();
	cpus[0].idle->stack = (uint8_t *)boot_stack;
	cpus[0].idle->stack_size = BOOT_STACK_SIZE;
	timer_start();
	cpus[0].online = 1;
	kprintf("gdbsample test kernel: %d cpus, %lu MiB free, cntvct %lu MHz, %lu symbols\n",
		ncpu, mem_free_bytes() >> 20, cycles_hz() / 1000000, symtab_count_get());
	smp_boot();
	uart_irq_route();		/* PL011 input interrupts to cpu0 */
	shell_start();
	idle_loop();
}
