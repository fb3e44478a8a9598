/* SPDX-License-Identifier: MIT */
/* test_pmu_host.c: host unit tests of kernel/pmu_x86.c (decision, arming, NMI claims) on a simulated CPU. */
#include <stdio.h>
#include <string.h>

#include "../check.h"
#include "pmu.h"
#include "sim_cpu.h"

int check_passed, check_failed; /* check.h's counters */

#define PERIOD 2000000ull		/* pmu_period() at SIM_TSC_HZ: one overflow per ms */
#define ALL 0, 0xffffffffu		/* sim_count over every MSR number / CPUID leaf */

static uint64_t start_value(uint32_t width)	/* -PERIOD in a counter `width` bits wide */
{
	return (0 - PERIOD) & ((1ull << width) - 1);
}

static int streq(const char *a, const char *b)
{
	return a && b && strcmp(a, b) == 0;
}

static int msr_accesses(int from)
{
	return sim_count(from, SIM_RD, ALL) + sim_count(from, SIM_WR, ALL);
}

static int hw_writes(int from)
{
	return sim_count(from, SIM_WR, ALL) + sim_count(from, SIM_LVT, ALL);
}

static int gp_count(int from)
{
	int n = 0;
	for (int i = from; i < sim_nlog; i++)
		n += sim_log[i].gp;
	return n;
}

/* Index of the first write to `msr` at or after `from` with any of `bits` set, or -1. */
static int write_with(int from, uint32_t msr, uint64_t bits)
{
	for (int i = from; i < sim_nlog; i++)
		if (sim_log[i].op == SIM_WR && sim_log[i].msr == msr && (sim_log[i].val & bits))
			return i;
	return -1;
}

/* pmu.c keeps its decision and per-CPU flags across cases: disarm every CPU, then a new machine. */
static void fresh(void)
{
	for (int c = 0; c < SIM_CPUS; c++) {
		sim_set_cpu(c);
		pmu_disarm(c);
	}
	sim_reset();
	CHECK(!pmu_armed(0) && !pmu_armed(1));
}

/* pmu_probe, plus what every probe must honour: interrupts off throughout, restored after. */
static void probe(struct pmu_decision *d)
{
	int from = sim_nlog, on = 0;
	pmu_probe(d);
	for (int i = from; i < sim_nlog; i++)
		on += !sim_log[i].irq_off;
	CHECK(on == 0);
	CHECK(sim_irq_on());
	CHECK(sim_log_lost == 0);
}

/* Whether the CPU was armed when the counter got enabled, seen from inside that MSR write. */
static uint32_t enable_msr;
static uint64_t enable_bit;
static int armed_at_enable;
static void hook_enable(int cpu, uint32_t msr, uint64_t v)
{
	if (msr == enable_msr && (v & enable_bit))
		armed_at_enable = pmu_armed(cpu);
}

static void arm_watched(int cpu, uint32_t msr, uint64_t bit)
{
	enable_msr = msr, enable_bit = bit, armed_at_enable = -1;
	sim_on_wrmsr(hook_enable);
	pmu_arm(cpu, PERIOD);
	sim_on_wrmsr(NULL);
}

/* Case 10, first because only the first pmu_decide() of the process probes. */
static void test_decide_probes_once(void)
{
	fresh();
	sim_intel(2, 3, 48);
	const struct pmu_decision *a = pmu_decide();
	CHECK(a->kind == PMU_INTEL_FIXED1);
	CHECK(sim_count(0, SIM_CPUID, ALL) > 0 && msr_accesses(0) > 0);
	sim_reset();
	sim_vendor("VIA VIA VIA ", 1, 0);	/* another machine now: a second probe would say tick */
	const struct pmu_decision *b = pmu_decide();
	CHECK(b == a && b->kind == PMU_INTEL_FIXED1);
	CHECK(sim_nlog == 0);			/* no CPUID, no MSR: cached */
}

static void test_intel_v1_refused(void)
{
	struct pmu_decision d;
	fresh();
	sim_intel(1, 3, 48);		/* EDX is reserved on v1: garbage there must not matter */
	probe(&d);
	CHECK(d.kind == PMU_NONE && streq(d.reason, "unsupported version"));
	CHECK(strstr(d.claimed, "perfmon v1") != NULL && strstr(d.detail, "v2") != NULL);
	CHECK(sim_count(0, SIM_WR, ALL) == 0 && d.probe_ns == 0);	/* refused before touching a counter */

	fresh();
	sim_intel(2, 1, 48);			/* v2, but without fixed counter 1 */
	probe(&d);
	CHECK(d.kind == PMU_NONE && streq(d.reason, "unsupported version"));
	CHECK(sim_count(0, SIM_WR, ALL) == 0);
}

/* Case 2 for one perfmon version and counter width. */
static void intel_live(uint32_t version, uint32_t width)
{
	struct pmu_decision d;
	uint64_t start = start_value(width);
	fresh();
	sim_intel(version, 3, width);
	sim_set(0, FIXED_CTR_CTRL, 0x3);	/* fixed counter 0 is someone else's: left alone */
	probe(&d);
	CHECK(d.kind == PMU_INTEL_FIXED1 && d.reason == NULL && d.width == width);
	CHECK(d.probe_ns > 0 && d.probe_ns < PMU_PROBE_NS);	/* a live counter moves at once */
	CHECK(sim_get(0, FIXED_CTR_CTRL) == 0x3 && sim_get(0, GLOBAL_CTRL) == 0);	/* probe undone */
	CHECK(gp_count(0) == 0);
	pmu_install(&d);
	CHECK(pmu_period() == PERIOD);

	int from = sim_nlog;
	arm_watched(0, GLOBAL_CTRL, FIXED1_BIT);
	int ctr = sim_next(from, SIM_WR, FIXED_CTR1), en = write_with(from, GLOBAL_CTRL, FIXED1_BIT);
	CHECK(pmu_armed(0) && armed_at_enable == 1);	/* armed before the enabling write */
	CHECK(ctr >= 0 && sim_log[ctr].val == start && sim_get(0, FIXED_CTR1) == start);
	CHECK(sim_get(0, FIXED_CTR_CTRL) == (0xb0 | 0x3));	/* field 1 = OS|USR|PMI */
	CHECK(sim_lvt(0) == LVT_NMI && sim_next(from, SIM_LVT, 0) < en);
	CHECK(en > ctr && sim_last_write(from) == en);	/* enabling is the last step */
	CHECK(gp_count(from) == 0);

	sim_advance(PERIOD - 1);		/* one event short of overflowing */
	from = sim_nlog;
	CHECK(pmu_nmi(0) == 0 && hw_writes(from) == 0);
	sim_advance(10);			/* wraps: status bit 33, a PMI, the LVT masked */
	CHECK((sim_get(0, GLOBAL_STATUS) & FIXED1_BIT) && sim_pmis(0) == 1 && (sim_lvt(0) & LVT_MASK));
	from = sim_nlog;
	CHECK(pmu_nmi(0) == 1);
	CHECK(sim_get(0, FIXED_CTR1) == start);	/* reprogrammed */
	CHECK(write_with(from, GLOBAL_OVF_CTRL, FIXED1_BIT) >= 0 && !(sim_get(0, GLOBAL_STATUS) & FIXED1_BIT));
	int last = sim_last_write(from);
	CHECK(last >= 0 && sim_log[last].op == SIM_LVT && sim_log[last].val == LVT_NMI);
	CHECK(sim_lvt(0) == LVT_NMI && gp_count(from) == 0);

	from = sim_nlog;			/* status clear: not ours, the kernel panics */
	CHECK(pmu_nmi(0) == 0 && hw_writes(from) == 0);
	sim_advance(PERIOD + 7);		/* and it keeps sampling */
	CHECK(sim_pmis(0) == 2 && pmu_nmi(0) == 1);

	pmu_disarm(0);
	CHECK(!pmu_armed(0) && !(sim_get(0, GLOBAL_CTRL) & FIXED1_BIT));
	CHECK(sim_get(0, FIXED_CTR_CTRL) == 0x3 && (sim_lvt(0) & LVT_MASK));
	uint64_t c = sim_get(0, FIXED_CTR1);
	sim_advance(3 * PERIOD);
	CHECK(sim_get(0, FIXED_CTR1) == c && sim_pmis(0) == 2);	/* stopped */
}

static void test_intel_live_counter(void)
{
	intel_live(2, 48);
	intel_live(4, 48);
	intel_live(5, 40);
}

/* Case 3: a hypervisor (or QEMU TCG) claims v2 and drops every write. */
static void test_swallowed_writes(void)
{
	struct pmu_decision d;
	/* The loop reads the counter until ~PMU_PROBE_NS of TSC time passed; the simulated clock
	 * moves SIM_TSC_STEP ticks (18.5 ns) per hal_tsc(), so it may overshoot by a step: allow 2x. */
	const uint64_t max_reads = 2 * PMU_PROBE_NS * (SIM_TSC_HZ / 1000000000ull) / SIM_TSC_STEP + 1;
	for (int amd = 0; amd < 2; amd++) {
		fresh();
		if (amd)
			sim_amd(1, 0);
		else
			sim_intel(2, 3, 48);
		sim_swallow(1);
		probe(&d);
		uint32_t ctr = amd ? AMD_CTR0 : FIXED_CTR1;
		int reads = sim_count(0, SIM_RD, ctr, ctr);
		CHECK(d.kind == PMU_NONE && streq(d.reason, "counter did not count"));
		CHECK(d.probe_ns >= PMU_PROBE_NS && d.probe_ns <= 2 * PMU_PROBE_NS);
		CHECK(reads > 1 && reads <= (int)max_reads);
		CHECK(strstr(d.detail, "stayed 0") != NULL);
	}
}

/* Case 4: firmware left FREEZE_PERFMON_ON_PMI set. */
static void test_freeze_cleared(void)
{
	struct pmu_decision d;
	fresh();
	sim_intel(2, 3, 48);
	sim_set(0, DEBUGCTL, DEBUGCTL_FREEZE | 1);	/* and LBR (bit 0), which must survive */
	probe(&d);
	int w = sim_next(0, SIM_WR, DEBUGCTL);
	CHECK(d.kind == PMU_INTEL_FIXED1 && sim_get(0, DEBUGCTL) == 1);
	CHECK(sim_count(0, SIM_WR, DEBUGCTL, DEBUGCTL) == 1);
	CHECK(w >= 0 && w < write_with(0, GLOBAL_CTRL, FIXED1_BIT));	/* before the counter runs */

	fresh();
	sim_intel(2, 3, 48);
	sim_set(0, DEBUGCTL, 1);
	probe(&d);
	CHECK(d.kind == PMU_INTEL_FIXED1 && sim_get(0, DEBUGCTL) == 1);
	CHECK(sim_count(0, SIM_WR, DEBUGCTL, DEBUGCTL) == 0);	/* already clear: not written */

	/* DEBUGCTL is per CPU: the probe ran on CPU 0, CPU 1 must clear its own when it arms. On v4+
	 * a PMI under the freeze latches CTR_Frz in GLOBAL_STATUS and the counter stops for good. */
	fresh();
	sim_intel(4, 3, 48);
	sim_set(0, DEBUGCTL, DEBUGCTL_FREEZE);
	sim_set(1, DEBUGCTL, DEBUGCTL_FREEZE);
	probe(&d);
	pmu_install(&d);
	CHECK(d.kind == PMU_INTEL_FIXED1 && (sim_get(1, DEBUGCTL) & DEBUGCTL_FREEZE));
	sim_set_cpu(1);
	int from = sim_nlog;
	pmu_arm(1, PERIOD);
	w = sim_next(from, SIM_WR, DEBUGCTL);
	CHECK(sim_get(1, DEBUGCTL) == 0);
	CHECK(w >= 0 && w < write_with(from, GLOBAL_CTRL, FIXED1_BIT));
	sim_advance(PERIOD + 1);
	CHECK(pmu_nmi(1) == 1);
	uint64_t c = sim_get(1, FIXED_CTR1);
	sim_advance(1000);
	CHECK(sim_get(1, FIXED_CTR1) == c + 1000);	/* still counting after its first PMI */
	pmu_disarm(1);
	sim_set_cpu(0);
}

/* Case 5: AMD PerfCtrExtCore without PerfMonV2: sign-bit overflow. */
static void test_amd_core(void)
{
	struct pmu_decision d;
	uint64_t start = start_value(48);
	fresh();
	sim_amd(1, 0);
	probe(&d);
	CHECK(d.kind == PMU_AMD_CORE && d.reason == NULL && d.width == 48);
	CHECK(sim_get(0, AMD_CTL0) == 0 && gp_count(0) == 0);
	pmu_install(&d);

	int from = sim_nlog;
	arm_watched(0, AMD_CTL0, AMD_EN);
	int ctr = sim_next(from, SIM_WR, AMD_CTR0), last = sim_last_write(from);
	CHECK(pmu_armed(0) && armed_at_enable == 1);
	CHECK(ctr >= 0 && sim_log[ctr].val == start);
	CHECK(last > ctr && sim_log[last].msr == AMD_CTL0 && sim_log[last].val == AMD_CTL_CYCLES);
	CHECK(sim_lvt(0) == LVT_NMI && gp_count(from) == 0);

	sim_advance(PERIOD - 1);		/* bit 47 still set: not ours */
	from = sim_nlog;
	CHECK(pmu_nmi(0) == 0 && hw_writes(from) == 0);
	sim_advance(5);				/* crossed zero: bit 47 clear */
	CHECK(!(sim_get(0, AMD_CTR0) & (1ull << 47)) && sim_pmis(0) == 1);
	CHECK(pmu_nmi(0) == 1);
	CHECK(sim_get(0, AMD_CTR0) == start && sim_get(0, AMD_CTL0) == AMD_CTL_CYCLES);	/* re-armed */
	from = sim_nlog;
	CHECK(pmu_nmi(0) == 0 && hw_writes(from) == 0);	/* the same overflow is not claimed twice */
	pmu_disarm(0);
	CHECK(!pmu_armed(0) && !(sim_get(0, AMD_CTL0) & AMD_EN));
}

/* Case 5, in-flight: the overflow NMI lands inside pmu_disarm, just after CTL0 is disabled. */
static int inflight_ret, inflight_en;
static void hook_inflight(int cpu, uint32_t msr, uint64_t v)
{
	if (msr == AMD_CTL0 && !(v & AMD_EN) && inflight_ret < 0) {
		inflight_ret = pmu_nmi(cpu);
		inflight_en = (sim_get(cpu, AMD_CTL0) & AMD_EN) != 0;
	}
}

static void test_amd_inflight_overflow(void)
{
	struct pmu_decision d;
	fresh();
	sim_amd(1, 0);
	probe(&d);
	pmu_install(&d);
	pmu_arm(0, PERIOD);
	sim_advance(PERIOD + 100);		/* overflowed; its NMI has not arrived yet */
	int from = sim_nlog;
	inflight_ret = inflight_en = -1;
	sim_on_wrmsr(hook_inflight);
	pmu_disarm(0);
	sim_on_wrmsr(NULL);
	CHECK(inflight_ret == 1);		/* still ours: armed is cleared after the disable */
	CHECK(inflight_en == 0 && write_with(from, AMD_CTL0, AMD_EN) < 0);	/* not re-enabled */
	CHECK(!pmu_armed(0) && (sim_lvt(0) & LVT_MASK));
	for (int i = from; i < sim_nlog; i++)
		CHECK(!(sim_log[i].op == SIM_LVT && sim_log[i].val == LVT_NMI));

	sim_set(0, AMD_CTR0, 5);		/* looks overflowed, but nothing is armed any more */
	from = sim_nlog;
	CHECK(pmu_nmi(0) == 0 && hw_writes(from) == 0);	/* not swallowed: the kernel panics */
	sim_advance(1000);
	CHECK(sim_get(0, AMD_CTR0) == 5);	/* and the counter stays off */
}

/* Case 6: AMD PerfMonV2: global control and status. */
static void test_amd_v2(void)
{
	struct pmu_decision d;
	uint64_t start = start_value(48);
	fresh();
	sim_amd(1, 1);
	probe(&d);
	CHECK(d.kind == PMU_AMD_V2 && d.reason == NULL && d.width == 48);
	CHECK(!(sim_get(0, AMD_GCTL) & 1) && (sim_get(0, AMD_GCTL) & 0x3e) == 0x3e);	/* others kept */
	pmu_install(&d);

	int from = sim_nlog;
	arm_watched(0, AMD_CTL0, AMD_EN);
	int g = write_with(from, AMD_GCTL, 1), last = sim_last_write(from);
	CHECK(pmu_armed(0) && armed_at_enable == 1);
	CHECK(g >= 0 && (sim_get(0, AMD_GCTL) & 1));
	CHECK(write_with(from, AMD_GSTATUS_CLR, 1) >= 0);
	CHECK(sim_get(0, AMD_CTR0) == start);
	CHECK(last > g && sim_log[last].msr == AMD_CTL0 && sim_log[last].val == AMD_CTL_CYCLES);

	sim_set(0, AMD_CTR0, 5);		/* sign bit clear but status clear: not ours on v2 */
	from = sim_nlog;
	CHECK(pmu_nmi(0) == 0 && hw_writes(from) == 0);
	sim_set(0, AMD_CTR0, start);
	sim_advance(PERIOD + 3);
	CHECK((sim_get(0, AMD_GSTATUS) & 1) && sim_pmis(0) == 1);
	from = sim_nlog;
	CHECK(pmu_nmi(0) == 1);
	CHECK(sim_get(0, AMD_CTR0) == start);
	CHECK(write_with(from, AMD_GSTATUS_CLR, 1) >= 0 && !(sim_get(0, AMD_GSTATUS) & 1));
	CHECK(gp_count(from) == 0);		/* never wrote the read-only status */
	from = sim_nlog;
	CHECK(pmu_nmi(0) == 0 && hw_writes(from) == 0);
	pmu_disarm(0);
	CHECK(!pmu_armed(0) && !(sim_get(0, AMD_GCTL) & 1) && !(sim_get(0, AMD_CTL0) & AMD_EN));
}

/* Case 7: AMD without PerfCtrExtCore: tick, and the legacy counters are never touched. */
static void test_amd_no_core(void)
{
	struct pmu_decision d;
	for (int v = 0; v < 3; v++) {
		fresh();
		if (v < 2)
			sim_amd(0, v);		/* v == 1: PerfMonV2 claimed without the core extension */
		else
			sim_vendor("AuthenticAMD", 0x10, 0x80000000);	/* no leaf 0x80000001 at all */
		probe(&d);
		CHECK(d.kind == PMU_NONE && streq(d.reason, "no PMU claimed"));
		CHECK(sim_count(0, SIM_RD, 0xc0010000, 0xc0010007) + sim_count(0, SIM_WR, 0xc0010000, 0xc0010007) == 0);
		CHECK(sim_count(0, SIM_RD, 0xc0010200, 0xc00102ff) + sim_count(0, SIM_WR, 0xc0010200, 0xc00102ff) == 0);
		CHECK(msr_accesses(0) == 0);
		pmu_install(&d);
		int from = sim_nlog;
		pmu_arm(0, PERIOD);			/* tick only: arming is a no-op */
		CHECK(!pmu_armed(0) && sim_nlog == from && pmu_nmi(0) == 0);
	}
	fresh();
	sim_amd(1, 0);
	sim_vendor("HygonGenuine", 0x10, 0x80000021);	/* Hygon is AMD's core */
	probe(&d);
	CHECK(d.kind == PMU_AMD_CORE);
	CHECK(sim_count(0, SIM_RD, 0xc0010000, 0xc0010007) + sim_count(0, SIM_WR, 0xc0010000, 0xc0010007) == 0);
}

/* Case 8: KVM with the vPMU off: the claimed counters' MSRs raise #GP. */
static void test_msrs_gp(void)
{
	struct pmu_decision d;
	fresh();
	sim_intel(2, 3, 48);
	const uint32_t intel[] = { FIXED_CTR1, FIXED_CTR_CTRL, GLOBAL_STATUS, GLOBAL_CTRL, GLOBAL_OVF_CTRL };
	for (int i = 0; i < 5; i++)
		sim_msr(intel[i], 0, SIM_GP);
	probe(&d);
	CHECK(d.kind == PMU_NONE && streq(d.reason, "counter did not count"));
	CHECK(strstr(d.detail, "faulted") != NULL && gp_count(0) > 0);

	fresh();
	sim_amd(1, 0);
	for (uint32_t m = AMD_CTL0; m < AMD_CTL0 + 12; m++)
		sim_msr(m, 0, SIM_GP);
	probe(&d);
	CHECK(d.kind == PMU_NONE && streq(d.reason, "counter did not count"));
	CHECK(strstr(d.detail, "faulted") != NULL && gp_count(0) > 0);

	fresh();
	sim_intel(2, 3, 48);
	sim_msr(FIXED_CTR1, 0, SIM_GP);		/* only the counter itself */
	probe(&d);
	CHECK(d.kind == PMU_NONE && streq(d.reason, "counter did not count"));
	CHECK(sim_get(0, GLOBAL_CTRL) == 0);	/* a failed probe leaves nothing enabled */
}

/* Case 9: vendors with no PMU this code drives, and Intel parts with no perfmon leaf. */
static void test_no_pmu_claimed(void)
{
	struct pmu_decision d;
	static const char *vendors[] = { "VIA VIA VIA ", "KVMKVMKVM\0\0\0", "TCGTCGTCGTCG", "Microsoft Hv",
					 "\0\0\0\0\0\0\0\0\0\0\0\0", "GenuineIntex" };
	for (size_t i = 0; i < sizeof(vendors) / sizeof(vendors[0]); i++) {
		fresh();
		sim_vendor(vendors[i], 0x16, 0x80000022);
		sim_cpuid(0xa, 2 | 4 << 8 | 48 << 16, 0, 0, 3 | 48 << 5);	/* leaves that must be ignored */
		sim_cpuid(0x80000001, 0, 0, 1u << 23, 0);
		probe(&d);
		CHECK(d.kind == PMU_NONE && streq(d.reason, "no PMU claimed") && msr_accesses(0) == 0);
	}
	fresh();
	sim_intel(2, 3, 48);
	sim_vendor("GenuineIntel", 0x7, 0x80000008);	/* max basic leaf below 0xa */
	probe(&d);
	CHECK(d.kind == PMU_NONE && streq(d.reason, "no PMU claimed"));
	CHECK(sim_count(0, SIM_CPUID, 0xa, 0xa) == 0 && msr_accesses(0) == 0);

	fresh();
	sim_intel(0, 0, 0);			/* QEMU TCG: leaf 0xa all zeros */
	probe(&d);
	CHECK(d.kind == PMU_NONE && streq(d.reason, "no PMU claimed") && msr_accesses(0) == 0);
}

/* An NMI that no source claims must come back 0 (the kernel then panics with a backtrace). */
static void test_unclaimed_nmi(void)
{
	struct pmu_decision d;
	fresh();
	sim_intel(2, 3, 48);
	probe(&d);
	pmu_install(&d);
	CHECK(pmu_nmi(0) == 0 && pmu_nmi(1) == 0);	/* nothing armed */
	pmu_arm(0, PERIOD);
	sim_set(1, GLOBAL_STATUS, FIXED1_BIT);	/* CPU 1's status says overflow, but it never armed */
	sim_set_cpu(1);
	int from = sim_nlog;
	CHECK(pmu_nmi(1) == 0 && hw_writes(from) == 0);
	sim_set_cpu(0);
	CHECK(pmu_nmi(0) == 0);			/* armed, status clear */
	pmu_disarm(0);
	sim_advance(3 * PERIOD);
	CHECK(pmu_nmi(0) == 0);
	CHECK(streq(pmu_source_name(PMU_NONE), "tick") && streq(pmu_source_name(PMU_AMD_V2), "pmu/nmi amd perfmonv2"));
}

int main(void)
{
	test_decide_probes_once();	/* must run first: the decision is cached for the process */
	test_intel_v1_refused();
	test_intel_live_counter();
	test_swallowed_writes();
	test_freeze_cleared();
	test_amd_core();
	test_amd_inflight_overflow();
	test_amd_v2();
	test_amd_no_core();
	test_msrs_gp();
	test_no_pmu_claimed();
	test_unclaimed_nmi();
	fresh();
	return check_summary();
}
