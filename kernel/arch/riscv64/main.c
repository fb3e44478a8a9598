/* SPDX-License-Identifier: MIT */
/* main.c (riscv64): boot on QEMU virt under OpenSBI: console, memory, harts, PLIC, tick, then a shell. */
#include "arch.h"
#include "boot.h"
#include "console.h"
#include "cpu.h"
#include "layout.h"
#include "lib.h"
#include "mem.h"
#include "plic.h"
#include "sched.h"
#include "shell.h"
#include "smp.h"
#include "symtab.h"
#include "timer.h"
#include "uart.h"

extern char boot_stack[];
struct boot_info boot_info;
void smp_discover(uint64_t boot_hart);

void kmain(uint64_t hartid);
void kmain(uint64_t hartid)
{
	cpu_init(&cpus[0]);		/* tp, stvec */
	console_init();			/* the 16550, so everything after can talk */
	boot_info.nmemmap = 1;		/* QEMU's DTB has the real size; we take a fixed share */
	boot_info.memmap[0] = (struct memmap_entry){ RAM_BASE, (uint64_t)RAM_USED_MB << 20, MEMMAP_RAM, 0 };
	mem_init();
	smp_discover(hartid);		/* harts from SBI HSM hart_get_status */
	set_sie_bits(1ul << IRQ_S_SOFT);	/* the stop IPI */
	plic_hart_init();
	timer_init();
	sched_init_cpu();
	cpus[0].idle->stack = (uint8_t *)boot_stack;
	cpus[0].idle->stack_size = BOOT_STACK_SIZE;
	timer_start();
	cpus[0].online = 1;
	kprintf("gdbsample test kernel: %d cpus, %lu MiB free, time %lu MHz, %lu symbols\n",
		ncpu, mem_free_bytes() >> 20, cycles_hz() / 1000000, symtab_count_get());
	smp_boot();
	uart_irq_route();		/* UART interrupts to cpu0's S-mode context */
	shell_start();
	idle_loop();
}
