/* SPDX-License-Identifier: MIT */
/* pmu_hal.c (aarch64): the real backend of hal/pmu_armv8.h: PMU system registers, the PPI. */
#include "hal/pmu_armv8.h"
#include "arch.h"
#include "gic.h"
#include "trap.h"

uint64_t hal_a64_read(enum a64_reg r)
{
	switch (r) {
	case A64_ID_AA64DFR0: return read_id_aa64dfr0();
	case A64_PMCR: return read_pmcr();
	case A64_PMCCNTR: return read_pmccntr();
	case A64_PMCCFILTR: return read_pmccfiltr();
	case A64_PMCNTENSET: case A64_PMCNTENCLR: return read_pmcntenset();
	case A64_PMINTENSET: case A64_PMINTENCLR: return read_pmintenset();
	case A64_PMOVSCLR: return read_pmovsclr();
	}
	return 0;
}

void hal_a64_write(enum a64_reg r, uint64_t v)
{
	switch (r) {
	case A64_ID_AA64DFR0: break;
	case A64_PMCR: write_pmcr(v); break;
	case A64_PMCCNTR: write_pmccntr(v); break;
	case A64_PMCCFILTR: write_pmccfiltr(v); break;
	case A64_PMCNTENSET: write_pmcntenset(v); break;
	case A64_PMCNTENCLR: write_pmcntenclr(v); break;
	case A64_PMINTENSET: write_pmintenset(v); break;
	case A64_PMINTENCLR: write_pmintenclr(v); break;
	case A64_PMOVSCLR: write_pmovsclr(v); break;
	}
}

uint64_t hal_cycles(void) { return cycles(); }
uint64_t hal_cycles_hz(void) { return cycles_hz(); }
uint64_t hal_irq_save(void) { return irq_save(); }
void hal_irq_restore(uint64_t flags) { irq_restore(flags); }

void hal_pmu_irq(int on)
{
	if (on)
		gic_enable(INTID_PMU, PRIO_NMI);
	else
		gic_disable(INTID_PMU);
}
