/* SPDX-License-Identifier: MIT */
/* test_pmu_riscv_host.c: host unit tests of kernel/pmu_riscv.c on a simulated hart behind the SBI PMU. */
#include <stdio.h>
#include <string.h>

#include "hal/pmu_riscv.h"
#include "pmu.h"

static int passed, failed;
#define CHECK(cond) do { if (cond) passed++; else { failed++; \
	fprintf(stderr, "%s:%d: CHECK(%s) failed\n", __FILE__, __LINE__, #cond); } } while (0)

/*
 * The simulated hart and firmware, written from the SBI v1.0 PMU chapter and what OpenSBI 1.1 was
 * seen doing on QEMU 7.2 (docs/riscv64.md): 35 counters; the cycles event matches counter 0
 * (mcycle, always running: start answers ALREADY_STARTED) unless the hart has Sscofpmf, then
 * hpmcounter18. A running counter advances `rate` per hal_cycles() read (one time tick at
 * SIM_HZ); an hpmcounter wrapping past 2^64 on a Sscofpmf hart sets sip.LCOFIP.
 */
#define SIM_HZ 10000000ull
#define HPM 18
#define ERR_NOT_SUPPORTED (-2)
#define ERR_INVALID_PARAM (-3)
#define ERR_ALREADY_STARTED (-7)
static struct {
	int present, sscofpmf, no_match, refuse_high, early_lcof;
	uint64_t rate, now, value[35];
	int running[35], mapped[35], lcof, irq_on, calls;
	unsigned long last_fid;
} sim;

static void sim_reset(int present, int sscofpmf, uint64_t rate)
{
	memset(&sim, 0, sizeof(sim));
	sim.present = present;
	sim.sscofpmf = sscofpmf;
	sim.rate = rate;
	sim.running[0] = 1;		/* mcycle never stops */
}

uint64_t hal_cycles(void)
{
	sim.now++;
	for (int i = 0; i < 35; i++)
		if (sim.running[i]) {
			uint64_t before = sim.value[i];
			sim.value[i] += sim.rate;
			if (i >= 3 && sim.sscofpmf && sim.value[i] < before)
				sim.lcof = 1;
		}
	return sim.now;
}
uint64_t hal_cycles_hz(void) { return SIM_HZ; }
uint64_t hal_irq_save(void) { return 0; }
void hal_irq_restore(uint64_t f) { (void)f; }
void hal_pmu_irq(int on) { sim.irq_on = on; }
int hal_rv_pmu_present(void) { return sim.present; }
int hal_rv_lcof_pending(void) { hal_cycles(); return sim.lcof; }	/* each poll is time passing */
void hal_rv_lcof_clear(void) { sim.lcof = 0; }
uint64_t hal_rv_counter_read(uint32_t csr) { return csr >= 0xc00 && csr < 0xc00 + 19 ? sim.value[csr - 0xc00] : 0; }

struct hal_sbiret hal_rv_pmu(unsigned long fid, unsigned long a0, unsigned long a1, unsigned long a2,
			     unsigned long a3, unsigned long a4)
{
	(void)a4;
	sim.calls++;
	sim.last_fid = fid;
	unsigned long idx = a0;
	switch (fid) {
	case 0: return (struct hal_sbiret){ 0, 35 };
	case 1: return (struct hal_sbiret){ 0, (0xc00 + idx) | (63ul << 12) };
	case 2: {		/* cfg match: a1 = mask from base a0; a3 = event */
		if (sim.no_match || a3 != 1)
			return (struct hal_sbiret){ ERR_NOT_SUPPORTED, 0 };
		unsigned long c = sim.sscofpmf ? HPM : 0;
		if (sim.sscofpmf && !((a1 >> (c - a0)) & 1))
			return (struct hal_sbiret){ ERR_INVALID_PARAM, 0 };
		sim.mapped[c] = 1;
		if (a2 & 2)
			sim.value[c] = 0;
		return (struct hal_sbiret){ 0, c };
	}
	case 3:			/* start: a2 flags, a3 initial value */
		if (sim.running[idx])
			return (struct hal_sbiret){ ERR_ALREADY_STARTED, 0 };
		if (sim.refuse_high && (a2 & 1) && (a3 >> 63))
			return (struct hal_sbiret){ ERR_INVALID_PARAM, 0 };
		if (a2 & 1)
			sim.value[idx] = a3;
		sim.running[idx] = 1;
		if (sim.early_lcof)	/* QEMU 7.2: a pending bit before any wrap */
			sim.lcof = 1;
		return (struct hal_sbiret){ 0, 0 };
	case 4:			/* stop: a2 & 1 resets (releases the mapping); mcycle too (mcountinhibit) */
		sim.running[idx] = 0;
		if (a2 & 1)
			sim.mapped[idx] = 0;
		return (struct hal_sbiret){ 0, 0 };
	}
	return (struct hal_sbiret){ ERR_NOT_SUPPORTED, 0 };
}

static void test_no_extension_or_no_counter_is_no_claim(void)
{
	struct pmu_decision d;
	sim_reset(0, 0, 260);
	pmu_probe(&d);
	CHECK(d.kind == PMU_NONE && d.reason && strcmp(d.reason, "no PMU claimed") == 0);
	CHECK(strcmp(d.claimed, "riscv: no SBI PMU extension") == 0);
	CHECK(sim.calls == 0);
	sim_reset(1, 1, 260);
	sim.no_match = 1;
	pmu_probe(&d);
	CHECK(d.kind == PMU_NONE && strcmp(d.reason, "no PMU claimed") == 0);
	CHECK(strcmp(d.claimed, "riscv sbi pmu: 35 counters, no hpmcounter for cycles (error -2)") == 0);
}

static void test_mcycle_counts_but_never_overflows(void)
{
	struct pmu_decision d;
	sim_reset(1, 0, 260);		/* 2.6 GHz, like the host TSC QEMU reads */
	pmu_probe(&d);
	CHECK(d.kind == PMU_NONE);
	CHECK(d.reason && strcmp(d.reason, "counter did not overflow") == 0);
	CHECK(strcmp(d.claimed, "riscv sbi pmu: 35 counters, cycles on counter 0 (csr 0xc00, 64 bits)") == 0);
	CHECK(strcmp(d.detail, "no overflow (sip.LCOFIP) within 20000 us of a wrap: no Sscofpmf") == 0);
	CHECK(d.counter_hz >= 260 * SIM_HZ && d.counter_hz <= 260 * SIM_HZ + 260 * SIM_HZ / 5000);
	CHECK(d.blind == NULL);
	sim_reset(1, 1, 260);		/* a firmware that refuses an initial value below the wrap */
	sim.refuse_high = 1;
	pmu_probe(&d);
	CHECK(d.kind == PMU_NONE && strcmp(d.reason, "counter did not overflow") == 0);
	CHECK(strcmp(d.detail, "SBI counter_start below the wrap: error -3") == 0);
}

static void test_an_early_pending_bit_is_no_overflow(void)
{
	struct pmu_decision d;
	sim_reset(1, 0, 260);		/* the bit rises at each start, the counter never interrupts */
	sim.early_lcof = 1;
	pmu_probe(&d);
	CHECK(d.kind == PMU_NONE && strcmp(d.reason, "counter did not overflow") == 0);
	CHECK(strcmp(d.detail, "no overflow (sip.LCOFIP) within 20000 us of a wrap, only early ones") == 0);
	sim_reset(1, 1, 260);		/* early bits, then the real one after the wrap */
	sim.early_lcof = 1;
	pmu_probe(&d);
	CHECK(d.kind == PMU_RISCV_SBI_CYCLES && strstr(d.detail, "; overflowed in ") != NULL);
}

static void test_a_counter_that_does_not_count(void)
{
	struct pmu_decision d;
	sim_reset(1, 1, 0);
	pmu_probe(&d);
	CHECK(d.kind == PMU_NONE && strcmp(d.reason, "counter did not count") == 0);
	CHECK(strncmp(d.detail, "csr 0xc12 stayed 0 for ", 23) == 0);
	CHECK(d.probe_ns >= PMU_PROBE_NS);	/* it waited its whole bound */
}

static void test_sscofpmf_counter_is_trusted_and_said_blind_to_irqoff(void)
{
	struct pmu_decision d;
	sim_reset(1, 1, 260);
	pmu_probe(&d);
	CHECK(d.kind == PMU_RISCV_SBI_CYCLES);
	CHECK(strcmp(d.claimed, "riscv sbi pmu: 35 counters, cycles on counter 18 (csr 0xc12, 64 bits)") == 0);
	/* measured over ~1 ms of time ticks: within a tick or two of 2.6 GHz */
	CHECK(d.counter_hz >= 260 * SIM_HZ && d.counter_hz <= 260 * SIM_HZ + 260 * SIM_HZ / 5000);
	CHECK(strstr(d.detail, "; 2600 MHz; overflowed in ") != NULL);
	CHECK(d.blind && strncmp(d.blind, "not an NMI", 10) == 0);
	CHECK(!sim.running[HPM] && !sim.mapped[HPM] && !sim.lcof);	/* the probe leaves it released */
	pmu_install(&d);
	CHECK(pmu_period() == d.counter_hz / 250);	/* ~4 ms of cycles */
	CHECK(strcmp(pmu_source_name(PMU_RISCV_SBI_CYCLES), "pmu/lcofi riscv sbi-pmu cycles") == 0);
}

static void test_arm_overflow_disarm(void)
{
	struct pmu_decision d;
	sim_reset(1, 1, 260);
	pmu_probe(&d);
	pmu_install(&d);
	pmu_arm(1, 1000);
	CHECK(pmu_armed(1) && sim.irq_on == 1);
	CHECK(sim.mapped[HPM] && sim.running[HPM] && sim.value[HPM] == 0 - 1000ull);	/* this hart's own mapping */
	for (int i = 0; i < 4; i++)	/* 4 x 260 counts: past the period */
		hal_cycles();
	CHECK(sim.lcof);
	CHECK(pmu_nmi(1) == 1);
	CHECK(!sim.lcof && sim.running[HPM] && sim.value[HPM] == 0 - 1000ull);	/* restarted one period below */
	pmu_disarm(1);
	CHECK(!pmu_armed(1) && sim.irq_on == 0 && !sim.running[HPM] && !sim.mapped[HPM]);
	sim.lcof = 1;
	CHECK(pmu_nmi(1) == 0);		/* disarmed: never claimed */
}

int main(void)
{
	test_no_extension_or_no_counter_is_no_claim();
	test_mcycle_counts_but_never_overflows();
	test_an_early_pending_bit_is_no_overflow();
	test_a_counter_that_does_not_count();
	test_sscofpmf_counter_is_trusted_and_said_blind_to_irqoff();
	test_arm_overflow_disarm();
	printf("%d passed, %d failed\n", passed, failed);
	return failed != 0;
}
