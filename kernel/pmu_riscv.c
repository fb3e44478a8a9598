/* SPDX-License-Identifier: MIT */
/* pmu_riscv.c: RISC-V PMU decision (the SBI PMU extension's claims, then proof that a cycles counter
 * counts and overflows) and overflow handling for the Sscofpmf interrupt sampling source. */
#include "pmu.h"
#include "hal/pmu_riscv.h"
#include "lib.h"

/* SBI spec v1.0.0 chapter 11 (PMU extension): function ids, flags, the event. */
#define PMU_NUM_COUNTERS 0
#define PMU_COUNTER_GET_INFO 1		/* counter idx -> csr [11:0], width - 1 [17:12], firmware [63] */
#define PMU_CFG_MATCH 2			/* base, mask, flags, event idx, event data -> counter idx */
#define PMU_START 3			/* base, mask, flags, initial value */
#define PMU_STOP 4			/* base, mask, flags */
#define CFG_CLEAR_VALUE (1ul << 1)
#define START_SET_INIT_VALUE (1ul << 0)
#define ERR_ALREADY_STARTED (-7)	/* OpenSBI 1.1 on the fixed mcycle: it never stops counting */
#define STOP_RESET (1ul << 0)		/* and release the counter's event mapping */
#define EVENT_HW_CPU_CYCLES 0x00001	/* event type 0 (hardware general), code 1 */
#define INFO_CSR(i) ((uint32_t)((i) & 0xfff))
#define INFO_WIDTH(i) ((uint32_t)(((i) >> 12) & 0x3f) + 1)
#define INFO_FIRMWARE(i) (((i) >> 63) & 1)
/*
 * Counters 0-2 are cycle, time and instret: Sscofpmf gives only the programmable ones (3-31,
 * whose mhpmevent has the OF bit) an overflow interrupt, so the match is asked among those.
 */
#define FIRST_HPM 3
#define CALIBRATE_US 1000		/* the counter's rate measured over ~1 ms of the time CSR */
#define OVERFLOW_AFTER_US 10		/* the overflow probe starts this much counting below the wrap */
#define OVERFLOW_BOUND_US 20000		/* ... and must see sip.LCOFIP within this */

static unsigned long ctr_idx;		/* the matched counter (valid when the decision is ours) */
static uint64_t period;

const char *pmu_source_name(enum pmu_kind k)
{
	return k == PMU_RISCV_SBI_CYCLES ? "pmu/lcofi riscv sbi-pmu cycles" : "tick";
}

static struct hal_sbiret pmu_call(unsigned long fid, unsigned long a0, unsigned long a1, unsigned long a2,
				  unsigned long a3)
{
	return hal_rv_pmu(fid, a0, a1, a2, a3, 0);
}

/* Reads the counter until it is non-zero or `bound` time ticks pass. */
NOINLINE static uint64_t read_until_moved(uint32_t csr, uint64_t bound, uint64_t *elapsed, int *reads)
{
	uint64_t t0 = hal_cycles(), t, v;
	do {
		v = hal_rv_counter_read(csr);
		(*reads)++;
		t = hal_cycles();
	} while (v == 0 && t - t0 < bound);
	*elapsed = t - t0;
	return v;
}

/*
 * Polls sip.LCOFIP until it is set with the counter past the wrap (below `start` again), or `bound`
 * time ticks pass. A pending bit while the counter has not wrapped is no overflow (QEMU 7.2 raises
 * such early ones: docs/riscv64.md): it is counted in *early, cleared, and the wait goes on.
 */
NOINLINE static int wait_overflow(uint32_t csr, uint64_t start, uint64_t bound, uint64_t *elapsed, int *early)
{
	uint64_t t0 = hal_cycles(), t;
	int seen = 0;
	do {
		if (hal_rv_lcof_pending()) {
			if (hal_rv_counter_read(csr) < start)
				seen = 1;
			else {
				(*early)++;
				hal_rv_lcof_clear();
			}
		}
		t = hal_cycles();
	} while (!seen && t - t0 < bound);
	*elapsed = t - t0;
	return seen;
}

/* The first proof: started from 0, the counter must move within PMU_PROBE_NS; then its rate. */
static int prove_counts(struct pmu_decision *d, uint32_t csr)
{
	uint64_t hz = hal_cycles_hz(), bound = hz / (1000000000ull / PMU_PROBE_NS), elapsed = 0;
	int reads = 0;
	long err = pmu_call(PMU_START, ctr_idx, 1, START_SET_INIT_VALUE, 0).error;
	if (err && err != ERR_ALREADY_STARTED) {
		snprintf(d->detail, sizeof(d->detail), "SBI counter_start of counter %lu: error %ld", ctr_idx, err);
		return 0;
	}
	/* An untimed pass first: under TCG the first run of this code is spent translating it. */
	uint64_t v = read_until_moved(csr, 0, &elapsed, &reads);
	if (v == 0)
		v = read_until_moved(csr, bound, &elapsed, &reads);
	d->probe_ns = hz ? elapsed * 1000000000ull / hz : 0;
	if (v == 0) {
		snprintf(d->detail, sizeof(d->detail), "csr 0x%x stayed 0 for %lu ns (%d reads)", csr, d->probe_ns, reads);
		return 0;
	}
	uint64_t c0 = hal_rv_counter_read(csr), t0 = hal_cycles(), t1;
	do
		t1 = hal_cycles();
	while (t1 - t0 < hz / (1000000 / CALIBRATE_US));
	uint64_t c1 = hal_rv_counter_read(csr);
	d->counter_hz = (c1 - c0) * hz / (t1 - t0);
	snprintf(d->detail, sizeof(d->detail), "counted %lu cycles in %lu ns; %lu MHz", v, d->probe_ns,
		 d->counter_hz / 1000000);
	return d->counter_hz != 0;
}

/*
 * The second: started OVERFLOW_AFTER_US of counting below the wrap, it must raise sip.LCOFIP once
 * it wrapped. With 10 us of counting and a 20 ms bound both what QEMU 7.2's source predicts (the
 * interrupt 100 ns of guest time per count after the start: 2.6 ms here) and what it was seen doing
 * fit (docs/riscv64.md).
 */
static int prove_overflows(struct pmu_decision *d, uint32_t csr)
{
	uint64_t hz = hal_cycles_hz(), elapsed = 0, below = d->counter_hz / (1000000 / OVERFLOW_AFTER_US);
	uint64_t start = 0 - (below ? below : 1);
	int early = 0;
	pmu_call(PMU_STOP, ctr_idx, 1, 0, 0);
	hal_rv_lcof_clear();
	long err = pmu_call(PMU_START, ctr_idx, 1, START_SET_INIT_VALUE, start).error;
	if (err) {
		snprintf(d->detail, sizeof(d->detail), "SBI counter_start below the wrap: error %ld", err);
		return 0;
	}
	int seen = wait_overflow(csr, start, hz / (1000000 / OVERFLOW_BOUND_US), &elapsed, &early);
	pmu_call(PMU_STOP, ctr_idx, 1, 0, 0);
	hal_rv_lcof_clear();
	size_t n = strlen(d->detail);
	if (seen)
		snprintf(d->detail + n, sizeof(d->detail) - n, early ? "; overflowed in %lu us (%d early)" :
			 "; overflowed in %lu us", elapsed * 1000000 / hz, early);
	else
		snprintf(d->detail, sizeof(d->detail), "no overflow (sip.LCOFIP) within %d us of a wrap%s",
			 OVERFLOW_BOUND_US, early ? ", only early ones" : ": no Sscofpmf");
	return seen;
}

void pmu_probe(struct pmu_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->kind = PMU_NONE;
	uint64_t f = hal_irq_save();
	if (!hal_rv_pmu_present()) {
		snprintf(d->claimed, sizeof(d->claimed), "riscv: no SBI PMU extension");
		d->reason = "no PMU claimed";
		hal_irq_restore(f);
		return;
	}
	unsigned long n = pmu_call(PMU_NUM_COUNTERS, 0, 0, 0, 0).value;
	unsigned long mask = n > FIRST_HPM ? ((n >= 64 ? ~0ul : (1ul << n) - 1) & ~((1ul << FIRST_HPM) - 1)) : 0;
	struct hal_sbiret m = mask ? pmu_call(PMU_CFG_MATCH, 0, mask, CFG_CLEAR_VALUE, EVENT_HW_CPU_CYCLES)
				   : (struct hal_sbiret){ -2, 0 };
	if (m.error) {
		snprintf(d->claimed, sizeof(d->claimed), "riscv sbi pmu: %lu counters, no hpmcounter for cycles (error %ld)",
			 n, m.error);
		d->reason = "no PMU claimed";
		hal_irq_restore(f);
		return;
	}
	ctr_idx = m.value;
	unsigned long info = pmu_call(PMU_COUNTER_GET_INFO, ctr_idx, 0, 0, 0).value;
	d->width = INFO_WIDTH(info);
	snprintf(d->claimed, sizeof(d->claimed), "riscv sbi pmu: %lu counters, cycles on counter %lu (csr 0x%x, %u bits)",
		 n, ctr_idx, INFO_CSR(info), d->width);
	if (INFO_FIRMWARE(info) || !prove_counts(d, INFO_CSR(info)))
		d->reason = "counter did not count";
	else if (!prove_overflows(d, INFO_CSR(info)))
		d->reason = "counter did not overflow";
	else {
		d->kind = PMU_RISCV_SBI_CYCLES;
		d->blind = "not an NMI: masked with interrupts off (sstatus.SIE), so irq-off code is sampled "
			   "where interrupts come back on";
	}
	pmu_call(PMU_STOP, ctr_idx, 1, STOP_RESET, 0);
	hal_irq_restore(f);
}

/*
 * 4 ms of cycles, 250 samples a second per hart, as on aarch64: each sample costs two SBI calls
 * (stop, start with the next initial value: OpenSBI clears the overflow bit only there).
 */
#define SAMPLE_HZ 250
uint64_t pmu_period(void)
{
	uint64_t p = pmu_decision.counter_hz / SAMPLE_HZ;
	return p ? p : 1;
}

/* Counters are per hart: each hart maps the event to the same counter for itself. */
void pmu_arm(int cpu, uint64_t p)
{
	if (pmu_decision.kind != PMU_RISCV_SBI_CYCLES)
		return;
	period = p;
	if (pmu_call(PMU_CFG_MATCH, ctr_idx, 1, CFG_CLEAR_VALUE, EVENT_HW_CPU_CYCLES).error)
		return;
	hal_rv_lcof_clear();
	hal_pmu_irq(1);
	pmu_cpu[cpu].armed = 1;	/* before starting: the first overflow must be recognised */
	pmu_cpu[cpu].running = 1;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	pmu_call(PMU_START, ctr_idx, 1, START_SET_INIT_VALUE, 0 - p);
}

void pmu_disarm(int cpu)
{
	if (!pmu_cpu[cpu].armed)
		return;
	pmu_cpu[cpu].running = 0;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	pmu_call(PMU_STOP, ctr_idx, 1, STOP_RESET, 0);
	hal_pmu_irq(0);
	hal_rv_lcof_clear();
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	pmu_cpu[cpu].armed = 0;
}

/* The overflow interrupt (LCOFI, cause 13): ours while armed; restarted one period below the wrap. */
int pmu_nmi(int cpu)
{
	if (!pmu_cpu[cpu].armed)
		return 0;
	pmu_call(PMU_STOP, ctr_idx, 1, 0, 0);
	hal_rv_lcof_clear();		/* the pending bit is S-mode's to clear (Sscofpmf) */
	pmu_call(PMU_START, ctr_idx, 1, START_SET_INIT_VALUE, 0 - period);
	return 1;
}
