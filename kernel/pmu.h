/* SPDX-License-Identifier: MIT */
/* pmu.h: deciding whether a performance counter really counts, and driving it for sampling. */
#ifndef PMU_H
#define PMU_H
#include <stdint.h>

enum pmu_kind {
	PMU_NONE,		/* tick only */
	PMU_INTEL_FIXED1,	/* Intel arch perfmon v2+, fixed counter 1 (unhalted core cycles) */
	PMU_AMD_CORE,		/* AMD PerfCtrExtCore counter 0, event 0x76, sign-bit overflow */
	PMU_AMD_V2,		/* AMD PerfMonV2: the same counter with global control/status */
	PMU_ARMV8_CYCLES,	/* Armv8 PMUv3 cycle counter, its overflow a pseudo-NMI (GICv3 priority) */
	PMU_RISCV_SBI_CYCLES,	/* RISC-V SBI PMU cycles on an hpmcounter, its Sscofpmf overflow interrupt */
};

struct pmu_decision {
	enum pmu_kind kind;		/* what `profile` uses */
	char claimed[112];		/* what CPUID claims, in words */
	const char *reason;		/* tick only: "no PMU claimed", "counter did not count", "unsupported version" */
	char detail[80];		/* more about the reason, or about the probe that passed */
	uint64_t probe_ns;		/* how long the counting probe took (0 if none ran) */
	uint32_t width;			/* counter width in bits */
	uint64_t counter_hz;		/* aarch64, riscv64: cycle-counter rate measured against CNTVCT / time */
	const char *blind;		/* what the chosen source cannot see, if anything (lscpu says) */
};

#define PMU_PROBE_NS 10000		/* a claimed counter must move within ~10 us */
#define PMU_MAX_CPUS 8

/* pmu.c: the published decision and each CPU's state, shared by the architectures' files. */
extern struct pmu_decision pmu_decision;	/* valid once pmu_install ran */
struct pmu_cpu {
	volatile int armed;	/* set before the counter is enabled, cleared after it is disabled */
	volatile int running;	/* counter enabled (between arm and disarm) */
};
extern struct pmu_cpu pmu_cpu[PMU_MAX_CPUS];

void pmu_probe(struct pmu_decision *d);	/* runs CPUID checks and the counting probe, interrupts off */
void pmu_install(const struct pmu_decision *d);	/* publish a decision for pmu_arm & co */
const struct pmu_decision *pmu_decide(void);	/* probes once, then returns the cached decision */
const char *pmu_source_name(enum pmu_kind k);	/* e.g. "pmu/nmi intel fixed-ctr1" */
/* pmu_x86.c on x86_64, pmu_armv8.c on aarch64, pmu_riscv.c on riscv64: one decision logic per architecture. */

/* Per CPU, called on that CPU with interrupts off. */
void pmu_arm(int cpu, uint64_t period);	/* overflow (an NMI) every `period` events */
void pmu_disarm(int cpu);
int pmu_armed(int cpu);
int pmu_nmi(int cpu);			/* 1 if this NMI (aarch64: PMU pseudo-NMI) is our overflow (re-armed) */
uint64_t pmu_period(void);		/* the period that gives about one overflow per ms */
#endif
