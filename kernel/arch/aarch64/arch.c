/* SPDX-License-Identifier: MIT */
/* arch.c (aarch64): the shell's CPU-specific pieces: MPIDR, clocks, lscpu, poweroff, udf. */
#include "arch.h"
#include "cpu.h"
#include "gic.h"
#include "lib.h"
#include "psci.h"
#include "trap.h"

uint64_t arch_cpu_hwid(const struct cpu *c)
{
	return c->mpidr;
}

void arch_clocks_print(struct out *o)
{
	out_printf(o, "clocks:      cntvct %lu kHz (CNTFRQ_EL0), tick on the EL1 virtual timer\n", cycles_hz() / 1000);
}

/* MIDR_EL1 and the debug feature register that says which PMU architecture the part claims. */
void arch_lscpu(struct out *o)
{
	uint64_t midr = read_midr(), dfr0 = read_id_aa64dfr0();
	out_printf(o, "vendor:      implementer 0x%02lx (%s)\n", (midr >> 24) & 0xff,
		   ((midr >> 24) & 0xff) == 0x41 ? "Arm" : "other");
	out_printf(o, "model:       part 0x%03lx variant %lu revision %lu (MIDR_EL1 0x%08lx)\n", (midr >> 4) & 0xfff,
		   (midr >> 20) & 0xf, midr & 0xf, midr);
	out_printf(o, "debug:       ID_AA64DFR0_EL1 0x%016lx (PMUVer %lu)\n", dfr0, (dfr0 >> 8) & 0xf);
}

void arch_stop_others(void)
{
	gic_sgi_others(INTID_STOP);	/* at PRIO_NMI: gets through "interrupts off" */
}

void arch_poweroff(struct out *o)
{
	psci_call(PSCI_SYSTEM_OFF, 0, 0, 0);	/* QEMU exits here (status 0) */
	out_puts(o, "poweroff: PSCI SYSTEM_OFF returned; halting all cpus\n");
	arch_stop_others();
	halt_forever();
}

void task_start(void);		/* switch.S */

/* swtch's saved area (switch.S): x29 = 0, x30 = task_start, x19..x28 = 0; 16-byte aligned. */
uint64_t arch_task_stack_init(uint8_t *top)
{
	uint64_t *sp = (uint64_t *)((uint64_t)top & ~15ull) - 12;
	for (int i = 0; i < 12; i++)
		sp[i] = 0;
	sp[1] = (uint64_t)task_start;
	return (uint64_t)sp;
}
