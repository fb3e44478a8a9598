/* SPDX-License-Identifier: MIT */
/* cpu.c (aarch64): the per-CPU structs, TPIDR_EL1 and the vector base for the calling CPU. */
#include "cpu.h"
#include "a64.h"
#include "lib.h"
#include <stddef.h>

_Static_assert(offsetof(struct cpu, pmr) == CPU_PMR, "a64.h's CPU_PMR");

struct cpu cpus[MAX_CPUS];
int ncpu = 1;
extern char vectors[];			/* entry.S */

void cpu_init(struct cpu *c)
{
	c->self = c;
	c->mpidr = read_mpidr() & MPIDR_AFF_MASK;
	c->pmr = read_pmr();		/* the copy starts true */
	write_tpidr_el1((uint64_t)c);
	write_vbar((uint64_t)vectors);
}

int cpu_online_count(void)
{
	int n = 0;
	for (int i = 0; i < ncpu; i++)
		n += cpus[i].online != 0;
	return n;
}
