/* SPDX-License-Identifier: MIT */
/* pmu.c: the PMU decision every CPU reads (probed once, then published) and each CPU's arming state;
 * the decision itself and the counters are each architecture's (pmu_x86.c, pmu_armv8.c). */
#include "pmu.h"

struct pmu_decision pmu_decision;
struct pmu_cpu pmu_cpu[PMU_MAX_CPUS];
static volatile int decision_ready;

void pmu_install(const struct pmu_decision *d)
{
	pmu_decision = *d;
	/* Other CPUs arm only after seeing decision_ready: the decision must be visible first. */
	__atomic_store_n(&decision_ready, 1, __ATOMIC_RELEASE);
}

const struct pmu_decision *pmu_decide(void)
{
	if (!__atomic_load_n(&decision_ready, __ATOMIC_ACQUIRE)) {
		struct pmu_decision d;
		pmu_probe(&d);
		pmu_install(&d);
	}
	return &pmu_decision;
}

int pmu_armed(int cpu)
{
	return pmu_cpu[cpu].armed;
}
