/* SPDX-License-Identifier: MIT */
/* pmu_armv8.c: Armv8 PMU decision (ID_AA64DFR0 claims, then proof that the cycle counter counts)
 * and overflow handling for the pseudo-NMI sampling source. */
#include "pmu.h"
#include "hal/pmu_armv8.h"
#include "lib.h"

/* Arm ARM D13 (PMUv3): register fields. */
#define DFR0_PMUVER(v) (((v) >> 8) & 0xf)
#define PMUVER_NONE 0x0
#define PMUVER_IMPDEF 0xf			/* an IMPLEMENTATION DEFINED PMU: not PMUv3 */
#define PMCR_E (1u << 0)			/* enable */
#define PMCR_C (1u << 2)			/* reset the cycle counter */
#define PMCR_LC (1u << 6)			/* the cycle counter overflows at 64 bits */
#define PMCR_N(v) (((v) >> 11) & 0x1f)
#define CYCLE_BIT (1ull << 31)			/* PMCNTEN/PMINTEN/PMOVS bit of the cycle counter */
#define CALIBRATE_US 1000			/* cycle-counter rate measured over ~1 ms of CNTVCT */

static uint64_t period;

const char *pmu_source_name(enum pmu_kind k)
{
	return k == PMU_ARMV8_CYCLES ? "pmu/pnmi armv8 cycle-counter" : "tick";
}

static const char *pmuver_name(uint32_t v)
{
	switch (v) {
	case 0x1: return "PMUv3";
	case 0x4: return "PMUv3 v8.1";
	case 0x5: return "PMUv3 v8.4";
	case 0x6: return "PMUv3 v8.5";
	case 0x7: return "PMUv3 v8.7";
	case 0x8: return "PMUv3 v8.8";
	case 0x9: return "PMUv3 v8.9";
	default: return "PMUv3 (unknown version)";
	}
}

/* Reads the cycle counter until it is non-zero or `bound` CNTVCT ticks pass. */
NOINLINE static uint64_t read_until_moved(uint64_t bound, uint64_t *elapsed, int *reads)
{
	uint64_t t0 = hal_cycles(), t, v;
	do {
		v = hal_a64_read(A64_PMCCNTR);
		(*reads)++;
		t = hal_cycles();
	} while (v == 0 && t - t0 < bound);
	*elapsed = t - t0;
	return v;
}

/* The proof: with the counter reset and enabled, it must move within PMU_PROBE_NS. */
static int prove_counts(struct pmu_decision *d)
{
	uint64_t hz = hal_cycles_hz(), bound = hz / (1000000000ull / PMU_PROBE_NS), elapsed = 0;
	int reads = 0;
	hal_a64_write(A64_PMCNTENCLR, CYCLE_BIT);
	hal_a64_write(A64_PMINTENCLR, CYCLE_BIT);
	hal_a64_write(A64_PMCCFILTR, 0);
	hal_a64_write(A64_PMCR, PMCR_LC | PMCR_C);		/* counter 0, off */
	hal_a64_write(A64_PMCNTENSET, CYCLE_BIT);
	hal_a64_write(A64_PMCR, PMCR_LC | PMCR_E);
	/* An untimed pass first: under TCG the first run of this code is spent translating it. */
	uint64_t v = read_until_moved(0, &elapsed, &reads);
	if (v == 0)
		v = read_until_moved(bound, &elapsed, &reads);
	d->probe_ns = hz ? elapsed * 1000000000ull / hz : 0;
	int ok = v != 0;
	if (ok) {	/* its rate, so a period means the same time on any part */
		uint64_t c0 = hal_a64_read(A64_PMCCNTR), t0 = hal_cycles(), t1;
		do
			t1 = hal_cycles();
		while (t1 - t0 < hz / (1000000 / CALIBRATE_US));
		uint64_t c1 = hal_a64_read(A64_PMCCNTR);
		d->counter_hz = (c1 - c0) * hz / (t1 - t0);
		snprintf(d->detail, sizeof(d->detail), "counted %lu cycles in %lu ns; %lu MHz", v, d->probe_ns,
			 d->counter_hz / 1000000);
	} else {
		snprintf(d->detail, sizeof(d->detail), "PMCCNTR_EL0 stayed 0 for %lu ns (%d reads)", d->probe_ns, reads);
	}
	hal_a64_write(A64_PMCNTENCLR, CYCLE_BIT);
	hal_a64_write(A64_PMCR, PMCR_LC | PMCR_C);
	return ok && d->counter_hz != 0;
}

void pmu_probe(struct pmu_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->kind = PMU_NONE;
	uint64_t f = hal_irq_save();
	uint32_t ver = DFR0_PMUVER(hal_a64_read(A64_ID_AA64DFR0));
	uint32_t n = PMCR_N(hal_a64_read(A64_PMCR));
	if (ver == PMUVER_NONE || ver == PMUVER_IMPDEF) {
		/* PMCR_EL0.N is not trusted alone: QEMU's pmu=off still reads N = 6. */
		snprintf(d->claimed, sizeof(d->claimed), "armv8 PMUVer %u: no PMUv3 (PMCR_EL0.N reads %u)", ver, n);
		d->reason = "no PMU claimed";
	} else {
		snprintf(d->claimed, sizeof(d->claimed), "armv8 %s (PMUVer %u), %u event counters + cycle counter",
			 pmuver_name(ver), ver, n);
		d->width = 64;
		if (prove_counts(d))
			d->kind = PMU_ARMV8_CYCLES;
		else
			d->reason = "counter did not count";
	}
	hal_irq_restore(f);
}


/*
 * 4 ms of cycles: 250 samples a second per CPU, 2.5 times the tick. Each sample costs the guest
 * its interrupt's entry and exit plus four PMU and GIC register accesses (ack, re-arm, clear,
 * EOI), and under TCG every one of those takes QEMU's global lock: about 50 us of guest time a
 * sample, so 1 kHz cost the guest ~5 % of its time (docs/benchmarks.md) where 250 Hz keeps it
 * near 1 %.
 */
#define SAMPLE_HZ 250
uint64_t pmu_period(void)
{
	uint64_t p = pmu_decision.counter_hz / SAMPLE_HZ;
	return p ? p : 1;
}

void pmu_arm(int cpu, uint64_t p)
{
	if (pmu_decision.kind != PMU_ARMV8_CYCLES)
		return;
	period = p;
	hal_a64_write(A64_PMCNTENCLR, CYCLE_BIT);
	hal_a64_write(A64_PMOVSCLR, CYCLE_BIT);
	hal_a64_write(A64_PMCCFILTR, 0);
	hal_a64_write(A64_PMCCNTR, 0 - p);
	hal_a64_write(A64_PMINTENSET, CYCLE_BIT);
	hal_pmu_irq(1);
	pmu_cpu[cpu].armed = 1;	/* before enabling: the first overflow must be recognised */
	pmu_cpu[cpu].running = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	hal_a64_write(A64_PMCR, PMCR_LC | PMCR_E);
	hal_a64_write(A64_PMCNTENSET, CYCLE_BIT);
}

void pmu_disarm(int cpu)
{
	if (!pmu_cpu[cpu].armed)
		return;
	pmu_cpu[cpu].running = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	hal_a64_write(A64_PMCNTENCLR, CYCLE_BIT);
	hal_a64_write(A64_PMINTENCLR, CYCLE_BIT);
	hal_a64_write(A64_PMOVSCLR, CYCLE_BIT);
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	pmu_cpu[cpu].armed = 0;
	hal_pmu_irq(0);
}

/*
 * The PMU interrupt (PPI 23, the PMU's alone): ours while armed; re-armed one period on and the
 * overflow cleared. The status is not read first: under TCG every PMU register access takes
 * QEMU's global lock, and each one costs the guest more than the sample's own code (an early
 * interrupt would only re-arm early).
 */
int pmu_nmi(int cpu)
{
	if (!pmu_cpu[cpu].armed)
		return 0;
	hal_a64_write(A64_PMCCNTR, 0 - period);
	hal_a64_write(A64_PMOVSCLR, CYCLE_BIT);	/* the level drops */
	return 1;
}
