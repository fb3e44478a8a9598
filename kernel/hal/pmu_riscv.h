/* SPDX-License-Identifier: MIT */
/* hal/pmu_riscv.h: what the RISC-V PMU logic touches (SBI PMU calls, counter CSRs), replaceable by a host test. */
#ifndef HAL_PMU_RISCV_H
#define HAL_PMU_RISCV_H
#include <stdint.h>

/* Backend: kernel/arch/riscv64/pmu_hal.c in the kernel; a simulated hart in tests/kernel/. */
struct hal_sbiret {
	long error;			/* 0 or a negative SBI error */
	unsigned long value;
};
int hal_rv_pmu_present(void);		/* SBI BASE probe_extension("PMU") */
struct hal_sbiret hal_rv_pmu(unsigned long fid, unsigned long a0, unsigned long a1, unsigned long a2,
			     unsigned long a3, unsigned long a4);	/* an SBI PMU call (EID "PMU") */
uint64_t hal_rv_counter_read(uint32_t csr);	/* a user counter CSR, 0xc00-0xc1f (0 if not one) */
int hal_rv_lcof_pending(void);		/* sip.LCOFIP: a counter overflowed (Sscofpmf) */
void hal_rv_lcof_clear(void);
void hal_pmu_irq(int on);		/* sie.LCOFIE: this hart's overflow interrupt */
uint64_t hal_cycles(void);		/* the time CSR */
uint64_t hal_cycles_hz(void);
uint64_t hal_irq_save(void);
void hal_irq_restore(uint64_t flags);
#endif
