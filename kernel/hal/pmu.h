/* SPDX-License-Identifier: MIT */
/* hal/pmu.h: the hardware the PMU logic touches, behind functions a host test can replace. */
#ifndef HAL_PMU_H
#define HAL_PMU_H
#include <stdint.h>

/* Backend: kernel/arch/x86_64/pmu_hal.c in the kernel, a simulated CPU in tests/kernel/. */
void hal_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4]);
int hal_rdmsr(uint32_t msr, uint64_t *v);	/* 0, or -1 if the access raised #GP */
int hal_wrmsr(uint32_t msr, uint64_t v);	/* 0, or -1 if the access raised #GP */
uint64_t hal_tsc(void);				/* time-stamp counter, serialised */
uint64_t hal_tsc_hz(void);			/* its calibrated rate */
void hal_lvt_pmi(uint32_t v);			/* this CPU's LAPIC LVT performance-counter entry */
uint64_t hal_irq_save(void);			/* interrupts off; returns the previous state */
void hal_irq_restore(uint64_t flags);
#endif
