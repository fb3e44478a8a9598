/* SPDX-License-Identifier: MIT */
/* test_pmu_armv8_host.c: host unit tests of kernel/pmu_armv8.c on a simulated Armv8 PMU. */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "hal/pmu_armv8.h"
#include "pmu.h"

int check_passed, check_failed; /* check.h's counters */

/*
 * The simulated part, written from the Arm ARM's PMUv3 description: PMCCNTR counts while
 * PMCR_EL0.E and PMCNTENSET bit 31 are set, `rate` cycles per generic-timer tick (a part whose
 * writes are swallowed has rate 0); an overflow past 2^64 sets PMOVS bit 31. Each hal_cycles()
 * read is one timer tick at SIM_HZ.
 */
#define SIM_HZ 62500000ull
#define CYC (1ull << 31)
static struct {
	uint64_t dfr0, pmcr, ccntr, cntenset, intenset, ovs, filt;
	uint64_t rate, now;
	int irq_on, irq_calls, writes;
} sim;

static void sim_reset(uint32_t pmuver, uint64_t rate)
{
	memset(&sim, 0, sizeof(sim));
	sim.dfr0 = (uint64_t)pmuver << 8;
	sim.pmcr = 6u << 11;		/* N = 6, as QEMU reads even with pmu=off */
	sim.rate = rate;
}

uint64_t hal_cycles(void)
{
	sim.now++;
	if ((sim.pmcr & 1) && (sim.cntenset & CYC)) {
		uint64_t before = sim.ccntr;
		sim.ccntr += sim.rate;
		if (sim.ccntr < before)
			sim.ovs |= CYC;
	}
	return sim.now;
}

uint64_t hal_cycles_hz(void) { return SIM_HZ; }
uint64_t hal_irq_save(void) { return 0; }
void hal_irq_restore(uint64_t f) { (void)f; }
void hal_pmu_irq(int on) { sim.irq_on = on; sim.irq_calls++; }

uint64_t hal_a64_read(enum a64_reg r)
{
	switch (r) {
	case A64_ID_AA64DFR0: return sim.dfr0;
	case A64_PMCR: return sim.pmcr;
	case A64_PMCCNTR: return sim.ccntr;
	case A64_PMCCFILTR: return sim.filt;
	case A64_PMCNTENSET: case A64_PMCNTENCLR: return sim.cntenset;
	case A64_PMINTENSET: case A64_PMINTENCLR: return sim.intenset;
	case A64_PMOVSCLR: return sim.ovs;
	}
	return 0;
}

void hal_a64_write(enum a64_reg r, uint64_t v)
{
	sim.writes++;
	switch (r) {
	case A64_ID_AA64DFR0: break;
	case A64_PMCR:
		if (v & 4)
			sim.ccntr = 0;	/* C: reset the cycle counter */
		sim.pmcr = (sim.pmcr & ~0x7full) | (v & 0x7b);
		break;
	case A64_PMCCNTR: sim.ccntr = v; break;
	case A64_PMCCFILTR: sim.filt = v; break;
	case A64_PMCNTENSET: sim.cntenset |= v; break;
	case A64_PMCNTENCLR: sim.cntenset &= ~v; break;
	case A64_PMINTENSET: sim.intenset |= v; break;
	case A64_PMINTENCLR: sim.intenset &= ~v; break;
	case A64_PMOVSCLR: sim.ovs &= ~v; break;
	}
}

static void test_no_pmuver_is_not_trusted_on_n_alone(void)
{
	struct pmu_decision d;
	sim_reset(0, 16);
	pmu_probe(&d);
	CHECK(d.kind == PMU_NONE);
	CHECK(d.reason && strcmp(d.reason, "no PMU claimed") == 0);
	CHECK(strcmp(d.claimed, "armv8 PMUVer 0: no PMUv3 (PMCR_EL0.N reads 6)") == 0);
	CHECK(sim.writes == 0);		/* nothing claimed: nothing touched */
	sim_reset(0xf, 16);		/* an IMPLEMENTATION DEFINED PMU is not PMUv3 either */
	pmu_probe(&d);
	CHECK(d.kind == PMU_NONE && sim.writes == 0);
}

static void test_claimed_but_swallowed(void)
{
	struct pmu_decision d;
	sim_reset(1, 0);
	pmu_probe(&d);
	CHECK(d.kind == PMU_NONE);
	CHECK(d.reason && strcmp(d.reason, "counter did not count") == 0);
	CHECK(strncmp(d.detail, "PMCCNTR_EL0 stayed 0 for ", 25) == 0);
	CHECK(d.probe_ns >= PMU_PROBE_NS);	/* it waited its whole bound */
	CHECK(strcmp(d.claimed, "armv8 PMUv3 (PMUVer 1), 6 event counters + cycle counter") == 0);
	CHECK(!(sim.pmcr & 1) && !(sim.cntenset & CYC));	/* left off */
}

static void test_counting_part_is_trusted_and_its_rate_measured(void)
{
	struct pmu_decision d;
	sim_reset(6, 16);		/* 16 cycles per tick of a 62.5 MHz timer: 1 GHz */
	pmu_probe(&d);
	CHECK(d.kind == PMU_ARMV8_CYCLES);
	/* measured over ~1 ms of timer ticks: within one tick (16 cycles) of 62500 */
	CHECK(d.counter_hz >= 16 * SIM_HZ && d.counter_hz <= 16 * SIM_HZ + 16 * SIM_HZ / 60000);
	CHECK(strstr(d.claimed, "PMUv3 v8.5 (PMUVer 6)") != NULL);
	CHECK(strstr(d.detail, "; 1000 MHz") != NULL);
	CHECK(!(sim.pmcr & 1) && !(sim.cntenset & CYC));	/* the probe leaves the counter off */
	pmu_install(&d);
	CHECK(pmu_period() >= 4000000 && pmu_period() <= 4000080);	/* ~4 ms of cycles */
	CHECK(strcmp(pmu_source_name(PMU_ARMV8_CYCLES), "pmu/pnmi armv8 cycle-counter") == 0);
}

static void test_arm_overflow_disarm(void)
{
	struct pmu_decision d;
	sim_reset(6, 16);
	pmu_probe(&d);
	pmu_install(&d);
	pmu_arm(0, 1000);
	CHECK(pmu_armed(0));
	CHECK(sim.ccntr == 0 - 1000ull && (sim.intenset & CYC) && (sim.cntenset & CYC) && (sim.pmcr & 1));
	CHECK((sim.pmcr & 0x40) != 0);		/* LC: a 64-bit counter */
	CHECK(sim.irq_on == 1);
	for (int i = 0; i < 63; i++)		/* 63 ticks x 16 = 1008 cycles: past the period */
		hal_cycles();
	CHECK(sim.ovs & CYC);
	int writes = sim.writes;
	CHECK(pmu_nmi(0) == 1);
	CHECK(!(sim.ovs & CYC));		/* acknowledged: the level drops */
	CHECK(sim.writes - writes == 2);	/* the counter and the status: nothing else */
	CHECK(sim.ccntr == 0 - 1000ull);	/* re-armed one period on */
	pmu_disarm(0);
	CHECK(!pmu_armed(0) && sim.irq_on == 0 && !(sim.intenset & CYC) && !(sim.cntenset & CYC));
	sim.ovs |= CYC;
	CHECK(pmu_nmi(0) == 0);			/* disarmed: never claimed */
}

int main(void)
{
	test_no_pmuver_is_not_trusted_on_n_alone();
	test_claimed_but_swallowed();
	test_counting_part_is_trusted_and_its_rate_measured();
	test_arm_overflow_disarm();
	return check_summary();
}
