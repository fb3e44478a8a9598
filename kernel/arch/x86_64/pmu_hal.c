/* SPDX-License-Identifier: MIT */
/* pmu_hal.c: the real backend of hal/pmu.h: CPUID, #GP-safe MSRs, TSC, the LAPIC LVT entry. */
#include "hal/pmu.h"
#include "apic.h"
#include "layout.h"
#include "x86.h"

#define LAPIC_PA 0xfee00000
#define LAPIC_LVT_PERF 0x340	/* LVT performance monitoring counters (SDM vol. 3A 11.5.1) */

int msr_read_safe(uint32_t msr, uint64_t *out);	/* msr_safe.S */
int msr_write_safe(uint32_t msr, uint64_t v);

void hal_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]) { cpuid(leaf, sub, r); }
int hal_rdmsr(uint32_t msr, uint64_t *v) { return msr_read_safe(msr, v); }
int hal_wrmsr(uint32_t msr, uint64_t v) { return msr_write_safe(msr, v); }
uint64_t hal_tsc(void) { return rdtsc(); }
uint64_t hal_tsc_hz(void) { return tsc_hz(); }

void hal_lvt_pmi(uint32_t v)
{
	*(volatile uint32_t *)P2V(LAPIC_PA + LAPIC_LVT_PERF) = v;
}

uint64_t hal_irq_save(void)
{
	uint64_t f = read_rflags();
	cli();
	return f;
}

void hal_irq_restore(uint64_t flags)
{
	if (flags & RFLAGS_IF)
		sti();
}
