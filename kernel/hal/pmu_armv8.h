/* SPDX-License-Identifier: MIT */
/* hal/pmu_armv8.h: the hardware the Armv8 PMU logic touches, behind functions a host test can replace. */
#ifndef HAL_PMU_ARMV8_H
#define HAL_PMU_ARMV8_H
#include <stdint.h>

/* Backend: kernel/arch/aarch64/pmu_hal.c in the kernel; a simulated PMU in a host test. */
enum a64_reg {
	A64_ID_AA64DFR0,	/* PMUVer [11:8] */
	A64_PMCR,		/* E [0], C [2] (reset cycle counter), LC [6], N [15:11] */
	A64_PMCCNTR,
	A64_PMCCFILTR,		/* 0: count at EL1 and EL0 */
	A64_PMCNTENSET, A64_PMCNTENCLR,	/* bit 31: the cycle counter */
	A64_PMINTENSET, A64_PMINTENCLR,
	A64_PMOVSCLR,		/* read: overflow status; write 1: clear */
};
uint64_t hal_a64_read(enum a64_reg r);
void hal_a64_write(enum a64_reg r, uint64_t v);
uint64_t hal_cycles(void);		/* the generic timer's count */
uint64_t hal_cycles_hz(void);
void hal_pmu_irq(int on);		/* this CPU's PMU interrupt (PPI 23) at the pseudo-NMI priority */
uint64_t hal_irq_save(void);
void hal_irq_restore(uint64_t flags);
#endif
