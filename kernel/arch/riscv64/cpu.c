/* SPDX-License-Identifier: MIT */
/* cpu.c (riscv64): the per-CPU structs, tp and the trap vector for the calling hart. */
#include "cpu.h"
#include "rv.h"

struct cpu cpus[MAX_CPUS];
int ncpu = 1;
extern char trap_entry[];		/* entry.S */

/* tp holds this hart's struct cpu for good: C code never uses it (no thread-local storage). */
void cpu_init(struct cpu *c)
{
	c->self = c;
	__asm__ volatile("mv tp, %0" :: "r"(c) : "memory");
	write_stvec((uint64_t)trap_entry);	/* direct mode: every trap at trap_entry */
	write_sie(0);				/* each source is enabled by the code that owns it */
}

int cpu_online_count(void)
{
	int n = 0;
	for (int i = 0; i < ncpu; i++)
		n += cpus[i].online != 0;
	return n;
}
