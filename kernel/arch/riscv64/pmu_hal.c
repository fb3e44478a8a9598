/* SPDX-License-Identifier: MIT */
/* pmu_hal.c (riscv64): the real backend of hal/pmu_riscv.h: SBI PMU ecalls, counter CSRs, sip/sie. */
#include "hal/pmu_riscv.h"
#include "arch.h"
#include "sbi.h"

int hal_rv_pmu_present(void)
{
	return sbi_has(SBI_EXT_PMU);
}

struct hal_sbiret hal_rv_pmu(unsigned long fid, unsigned long a0, unsigned long a1, unsigned long a2,
			     unsigned long a3, unsigned long a4)
{
	struct sbiret r = sbi_call(SBI_EXT_PMU, fid, a0, a1, a2, a3, a4);
	return (struct hal_sbiret){ r.error, r.value };
}

/* csrr takes its CSR number as an immediate: one case per user counter (cycle, time, instret, hpmcounter3..31). */
#define CSR_CASE(n) case 0xc00 + n: __asm__ volatile("csrr %0, %1" : "=r"(v) : "i"(0xc00 + n)); break;
uint64_t hal_rv_counter_read(uint32_t csr)
{
	uint64_t v = 0;
	switch (csr) {
	CSR_CASE(0) CSR_CASE(1) CSR_CASE(2) CSR_CASE(3) CSR_CASE(4) CSR_CASE(5) CSR_CASE(6) CSR_CASE(7)
	CSR_CASE(8) CSR_CASE(9) CSR_CASE(10) CSR_CASE(11) CSR_CASE(12) CSR_CASE(13) CSR_CASE(14) CSR_CASE(15)
	CSR_CASE(16) CSR_CASE(17) CSR_CASE(18) CSR_CASE(19) CSR_CASE(20) CSR_CASE(21) CSR_CASE(22) CSR_CASE(23)
	CSR_CASE(24) CSR_CASE(25) CSR_CASE(26) CSR_CASE(27) CSR_CASE(28) CSR_CASE(29) CSR_CASE(30) CSR_CASE(31)
	}
	return v;
}

int hal_rv_lcof_pending(void) { return (read_sip() >> IRQ_LCOF) & 1; }
void hal_rv_lcof_clear(void) { clear_sip_bits(1ul << IRQ_LCOF); }

void hal_pmu_irq(int on)
{
	if (on)
		set_sie_bits(1ul << IRQ_LCOF);
	else
		clear_sie_bits(1ul << IRQ_LCOF);
}

uint64_t hal_cycles(void) { return cycles(); }
uint64_t hal_cycles_hz(void) { return cycles_hz(); }
uint64_t hal_irq_save(void) { return irq_save(); }
void hal_irq_restore(uint64_t flags) { irq_restore(flags); }
