/* SPDX-License-Identifier: MIT */
/* pmu_x86.c: x86 PMU decision (CPUID claims, then proof that the counter counts) and overflow handling. */
#include "pmu.h"
#include "hal/pmu.h"
#include "lib.h"

/* Intel architectural performance monitoring: SDM vol. 3B ch. 20 and vol. 4 table 2-2. */
#define CPUID_INTEL_PMU 0xa
#define MSR_IA32_DEBUGCTL 0x1d9
#define DEBUGCTL_FREEZE_PERFMON_ON_PMI (1ull << 12)
#define MSR_IA32_FIXED_CTR1 0x30a		/* unhalted core cycles */
#define MSR_IA32_FIXED_CTR_CTRL 0x38d		/* 4 bits per fixed counter, counter 1 at bits 4-7 */
#define FIXED_CTR1_FIELD (0xfull << 4)
#define FIXED_CTR1_OS_USR (0x3ull << 4)		/* bit 0 OS, bit 1 USR of the field */
#define FIXED_CTR1_OS_USR_PMI (0xbull << 4)	/* + bit 3 PMI */
#define MSR_IA32_PERF_GLOBAL_STATUS 0x38e
#define MSR_IA32_PERF_GLOBAL_CTRL 0x38f
#define MSR_IA32_PERF_GLOBAL_OVF_CTRL 0x390
#define GLOBAL_FIXED_CTR1 (1ull << 33)		/* fixed counter i is bit 32 + i */

/* AMD core performance counter extensions: APM vol. 2 13.2, PerfMonV2: PPR, CPUID 0x80000022. */
#define CPUID_AMD_EXT_FEATURES 0x80000001
#define CPUID_AMD_PERFCTR_CORE (1u << 23)	/* ECX */
#define CPUID_AMD_PERFMON 0x80000022
#define CPUID_AMD_PERFMON_V2 (1u << 0)		/* EAX */
#define MSR_AMD_PERF_CTL0 0xc0010200		/* PERF_CTLn = 0xc0010200 + 2n */
#define MSR_AMD_PERF_CTR0 0xc0010201		/* PERF_CTRn = 0xc0010201 + 2n */
#define MSR_AMD_GLOBAL_STATUS 0xc0000300
#define MSR_AMD_GLOBAL_CTL 0xc0000301
#define MSR_AMD_GLOBAL_STATUS_CLR 0xc0000302
#define AMD_EVENT_CYCLES 0x76			/* CPU clocks not halted */
#define AMD_CTL_USR (1ull << 16)
#define AMD_CTL_OS (1ull << 17)
#define AMD_CTL_INT (1ull << 20)
#define AMD_CTL_EN (1ull << 22)
#define AMD_CTR_WIDTH 48
#define AMD_GLOBAL_CTR0 (1ull << 0)

#define LVT_NMI 0x400				/* delivery mode NMI, unmasked */
#define LVT_MASKED 0x10000
#define MAX_PERIOD 0x7fffffffull		/* keep -N well inside any counter width */

static uint64_t period;				/* set by pmu_arm; read by pmu_nmi */

const char *pmu_source_name(enum pmu_kind k)
{
	switch (k) {
	case PMU_INTEL_FIXED1: return "pmu/nmi intel fixed-ctr1";
	case PMU_AMD_CORE: return "pmu/nmi amd pmcx076";
	case PMU_AMD_V2: return "pmu/nmi amd perfmonv2";
	default: return "tick";
	}
}

static uint64_t mask(uint32_t width)
{
	return width >= 64 ? ~0ull : (1ull << width) - 1;
}

static int vendor_is(const char *v)
{
	uint32_t r[4];
	char s[13];
	hal_cpuid(0, 0, r);
	memcpy(s, &r[1], 4);
	memcpy(s + 4, &r[3], 4);
	memcpy(s + 8, &r[2], 4);
	s[12] = 0;
	return strcmp(s, v) == 0;
}

/*
 * The proof: a counter that CPUID claims must move within PMU_PROBE_NS of TSC time.
 * Hypervisors and emulators (QEMU TCG) may claim counters whose MSR writes they swallow.
 */
/* Reads ctr_msr until it is non-zero or `bound` TSC cycles pass; -1 if the read faulted. */
NOINLINE static int read_until_moved(uint32_t ctr_msr, uint64_t bound, uint64_t *v, uint64_t *elapsed, int *reads)
{
	uint64_t t0 = hal_tsc(), t;
	do {
		if (hal_rdmsr(ctr_msr, v) != 0)
			return -1;
		(*reads)++;
		t = hal_tsc();
	} while (*v == 0 && t - t0 < bound);
	*elapsed = t - t0;
	return 0;
}

static int wait_for_count(uint32_t ctr_msr, struct pmu_decision *d)
{
	uint64_t hz = hal_tsc_hz(), bound = hz / (1000000000ull / PMU_PROBE_NS), v = 0, elapsed = 0;
	int reads = 0;
	/* One untimed pass first: under an emulator (QEMU TCG) the first run of this code is
	 * spent translating it, which would otherwise eat the whole bound before the first read. */
	int rc = read_until_moved(ctr_msr, 0, &v, &elapsed, &reads);
	if (rc == 0 && v == 0)
		rc = read_until_moved(ctr_msr, bound, &v, &elapsed, &reads);
	if (rc != 0) {
		snprintf(d->detail, sizeof(d->detail), "reading MSR 0x%x faulted", ctr_msr);
		return 0;
	}
	d->probe_ns = hz ? elapsed * 1000000000ull / hz : 0;
	if (v == 0) {
		snprintf(d->detail, sizeof(d->detail), "MSR 0x%x stayed 0 for %lu ns (%d reads)",
			 ctr_msr, d->probe_ns, reads);
		return 0;
	}
	snprintf(d->detail, sizeof(d->detail), "counted %lu events in %lu ns", v, d->probe_ns);
	return 1;
}

static int wr_all(const uint32_t *msr, const uint64_t *val, int n, struct pmu_decision *d)
{
	for (int i = 0; i < n; i++)
		if (hal_wrmsr(msr[i], val[i]) != 0) {
			snprintf(d->detail, sizeof(d->detail), "writing MSR 0x%x faulted", msr[i]);
			return 0;
		}
	return 1;
}

/*
 * A PMI with FREEZE_PERFMON_ON_PMI set would stop the counters for good (v4+ latches the freeze
 * in GLOBAL_STATUS, which pmu_nmi never acks): clear it, writing only if firmware set it.
 * DEBUGCTL is per logical CPU, so the probe's CPU and every CPU that arms must each do this.
 */
static void intel_unfreeze(void)
{
	uint64_t dbg;
	if (hal_rdmsr(MSR_IA32_DEBUGCTL, &dbg) == 0 && (dbg & DEBUGCTL_FREEZE_PERFMON_ON_PMI))
		hal_wrmsr(MSR_IA32_DEBUGCTL, dbg & ~DEBUGCTL_FREEZE_PERFMON_ON_PMI);
}

static void probe_intel(struct pmu_decision *d)
{
	uint32_t r[4];
	hal_cpuid(0, 0, r);
	if (r[0] < CPUID_INTEL_PMU) {
		strncpy0(d->claimed, "intel: no cpuid leaf 0xa", sizeof(d->claimed));
		d->reason = "no PMU claimed";
		return;
	}
	hal_cpuid(CPUID_INTEL_PMU, 0, r);
	uint32_t version = r[0] & 0xff, fixed = r[3] & 0x1f, width = (r[3] >> 5) & 0xff;
	snprintf(d->claimed, sizeof(d->claimed), "intel perfmon v%u, %u gp x %u bits, %u fixed x %u bits",
		 version, (r[0] >> 8) & 0xff, (r[0] >> 16) & 0xff, version >= 2 ? fixed : 0, version >= 2 ? width : 0);
	if (version == 0) {
		d->reason = "no PMU claimed";
		return;
	}
	if (version < 2) {
		d->reason = "unsupported version";
		snprintf(d->detail, sizeof(d->detail), "perfmon v%u: fixed counters need v2", version);
		return;
	}
	if (fixed < 2) {
		d->reason = "unsupported version";
		snprintf(d->detail, sizeof(d->detail), "v%u claims %u fixed counters: no fixed counter 1", version, fixed);
		return;
	}
	d->width = width ? width : 48;
	intel_unfreeze();
	uint64_t ctrl = 0;
	if (hal_rdmsr(MSR_IA32_FIXED_CTR_CTRL, &ctrl) != 0)
		ctrl = 0;
	ctrl &= ~FIXED_CTR1_FIELD;
	const uint32_t on_msr[] = { MSR_IA32_PERF_GLOBAL_CTRL, MSR_IA32_FIXED_CTR1, MSR_IA32_FIXED_CTR_CTRL,
				    MSR_IA32_PERF_GLOBAL_CTRL };
	const uint64_t on_val[] = { 0, 0, ctrl | FIXED_CTR1_OS_USR, GLOBAL_FIXED_CTR1 };	/* no PMI bit */
	int ok = wr_all(on_msr, on_val, 4, d) && wait_for_count(MSR_IA32_FIXED_CTR1, d);
	const uint32_t off_msr[] = { MSR_IA32_PERF_GLOBAL_CTRL, MSR_IA32_FIXED_CTR_CTRL, MSR_IA32_FIXED_CTR1 };
	const uint64_t off_val[] = { 0, ctrl, 0 };
	for (int i = 0; i < 3; i++)
		hal_wrmsr(off_msr[i], off_val[i]);
	if (ok)
		d->kind = PMU_INTEL_FIXED1;
	else
		d->reason = "counter did not count";
}

static void probe_amd(struct pmu_decision *d)
{
	uint32_t r[4];
	hal_cpuid(0x80000000, 0, r);
	uint32_t max_ext = r[0];
	int core = 0, v2 = 0;
	if (max_ext >= CPUID_AMD_EXT_FEATURES) {
		hal_cpuid(CPUID_AMD_EXT_FEATURES, 0, r);
		core = (r[2] & CPUID_AMD_PERFCTR_CORE) != 0;
	}
	if (max_ext >= CPUID_AMD_PERFMON) {
		hal_cpuid(CPUID_AMD_PERFMON, 0, r);
		v2 = (r[0] & CPUID_AMD_PERFMON_V2) != 0;
	}
	snprintf(d->claimed, sizeof(d->claimed), "amd PerfCtrExtCore %s, PerfMonV2 %s",
		 core ? "yes" : "no", v2 ? "yes" : "no");
	if (!core) {	/* the legacy 0xc0010000 counters are never used: no decision to make */
		d->reason = "no PMU claimed";
		return;
	}
	d->width = AMD_CTR_WIDTH;
	const uint64_t ctl = AMD_EVENT_CYCLES | AMD_CTL_OS | AMD_CTL_USR | AMD_CTL_EN;	/* no INT */
	uint64_t gctl = 0;
	if (v2 && hal_rdmsr(MSR_AMD_GLOBAL_CTL, &gctl) != 0)
		gctl = 0;
	int ok = wr_all((const uint32_t[]){ MSR_AMD_PERF_CTL0, MSR_AMD_PERF_CTR0 }, (const uint64_t[]){ 0, 0 }, 2, d) &&
		 (!v2 || wr_all((const uint32_t[]){ MSR_AMD_GLOBAL_CTL }, (const uint64_t[]){ gctl | AMD_GLOBAL_CTR0 }, 1, d)) &&
		 wr_all((const uint32_t[]){ MSR_AMD_PERF_CTL0 }, &ctl, 1, d) &&
		 wait_for_count(MSR_AMD_PERF_CTR0, d);
	hal_wrmsr(MSR_AMD_PERF_CTL0, 0);
	if (v2)
		hal_wrmsr(MSR_AMD_GLOBAL_CTL, gctl & ~AMD_GLOBAL_CTR0);
	hal_wrmsr(MSR_AMD_PERF_CTR0, 0);
	if (ok)
		d->kind = v2 ? PMU_AMD_V2 : PMU_AMD_CORE;
	else
		d->reason = "counter did not count";
}

void pmu_probe(struct pmu_decision *d)
{
	memset(d, 0, sizeof(*d));
	d->kind = PMU_NONE;
	uint64_t f = hal_irq_save();	/* one CPU, nothing else running here while we time it */
	if (vendor_is("GenuineIntel"))
		probe_intel(d);
	else if (vendor_is("AuthenticAMD") || vendor_is("HygonGenuine"))
		probe_amd(d);
	else {
		strncpy0(d->claimed, "unknown vendor: no PMU support here", sizeof(d->claimed));
		d->reason = "no PMU claimed";
	}
	hal_irq_restore(f);
}


uint64_t pmu_period(void)
{
	uint64_t p = hal_tsc_hz() / 1000;	/* core cycles ~ TSC cycles: about 1 ms */
	return p > MAX_PERIOD ? MAX_PERIOD : p ? p : 1;
}

void pmu_arm(int cpu, uint64_t p)
{
	const struct pmu_decision *d = &pmu_decision;
	uint64_t start = (0 - p) & mask(d->width), v = 0;
	period = p;
	switch (d->kind) {
	case PMU_INTEL_FIXED1:
		hal_wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
		intel_unfreeze();	/* this CPU's DEBUGCTL: the probe cleared only its own */
		hal_wrmsr(MSR_IA32_FIXED_CTR1, start);
		hal_wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, GLOBAL_FIXED_CTR1);
		if (hal_rdmsr(MSR_IA32_FIXED_CTR_CTRL, &v) != 0)
			v = 0;
		hal_wrmsr(MSR_IA32_FIXED_CTR_CTRL, (v & ~FIXED_CTR1_FIELD) | FIXED_CTR1_OS_USR_PMI);
		hal_lvt_pmi(LVT_NMI);
		/* Both before enabling: the first overflow must be recognised and fully re-armed. */
		pmu_cpu[cpu].armed = 1;
		pmu_cpu[cpu].running = 1;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		hal_wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, GLOBAL_FIXED_CTR1);
		break;
	case PMU_AMD_CORE:
	case PMU_AMD_V2:
		hal_wrmsr(MSR_AMD_PERF_CTL0, 0);
		hal_wrmsr(MSR_AMD_PERF_CTR0, start);
		if (d->kind == PMU_AMD_V2) {
			hal_wrmsr(MSR_AMD_GLOBAL_STATUS_CLR, AMD_GLOBAL_CTR0);
			if (hal_rdmsr(MSR_AMD_GLOBAL_CTL, &v) != 0)
				v = 0;
			hal_wrmsr(MSR_AMD_GLOBAL_CTL, v | AMD_GLOBAL_CTR0);
		}
		hal_lvt_pmi(LVT_NMI);
		pmu_cpu[cpu].armed = 1;
		pmu_cpu[cpu].running = 1;
		__atomic_thread_fence(__ATOMIC_SEQ_CST);
		hal_wrmsr(MSR_AMD_PERF_CTL0, AMD_EVENT_CYCLES | AMD_CTL_OS | AMD_CTL_USR | AMD_CTL_INT | AMD_CTL_EN);
		break;
	default:
		return;
	}
}

void pmu_disarm(int cpu)
{
	uint64_t v = 0;
	if (!pmu_cpu[cpu].armed)
		return;
	pmu_cpu[cpu].running = 0;	/* an NMI from here on must not re-enable anything */
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	switch (pmu_decision.kind) {
	case PMU_INTEL_FIXED1:
		hal_wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, 0);
		if (hal_rdmsr(MSR_IA32_FIXED_CTR_CTRL, &v) == 0)
			hal_wrmsr(MSR_IA32_FIXED_CTR_CTRL, v & ~FIXED_CTR1_FIELD);
		break;
	case PMU_AMD_CORE:
	case PMU_AMD_V2:
		hal_wrmsr(MSR_AMD_PERF_CTL0, 0);
		if (pmu_decision.kind == PMU_AMD_V2 && hal_rdmsr(MSR_AMD_GLOBAL_CTL, &v) == 0)
			hal_wrmsr(MSR_AMD_GLOBAL_CTL, v & ~AMD_GLOBAL_CTR0);
		break;
	default:
		break;
	}
	__atomic_thread_fence(__ATOMIC_SEQ_CST);
	/* Only now: an overflow NMI already in flight is still recognised as ours. */
	pmu_cpu[cpu].armed = 0;
	hal_lvt_pmi(LVT_MASKED);
}

int pmu_nmi(int cpu)
{
	uint64_t v = 0, start = (0 - period) & mask(pmu_decision.width);
	if (!pmu_cpu[cpu].armed)
		return 0;
	int running = pmu_cpu[cpu].running;
	switch (pmu_decision.kind) {
	case PMU_INTEL_FIXED1:
		if (hal_rdmsr(MSR_IA32_PERF_GLOBAL_STATUS, &v) != 0 || !(v & GLOBAL_FIXED_CTR1))
			return 0;
		hal_wrmsr(MSR_IA32_FIXED_CTR1, start);
		hal_wrmsr(MSR_IA32_PERF_GLOBAL_OVF_CTRL, GLOBAL_FIXED_CTR1);
		if (running && hal_rdmsr(MSR_IA32_PERF_GLOBAL_CTRL, &v) == 0 && !(v & GLOBAL_FIXED_CTR1))
			hal_wrmsr(MSR_IA32_PERF_GLOBAL_CTRL, v | GLOBAL_FIXED_CTR1);
		break;
	case PMU_AMD_CORE:
		/* No status register before PerfMonV2: armed at -N, the counter overflowed iff its
		 * top bit (47) has cleared. */
		if (hal_rdmsr(MSR_AMD_PERF_CTR0, &v) != 0 || (v & (1ull << (AMD_CTR_WIDTH - 1))))
			return 0;
		hal_wrmsr(MSR_AMD_PERF_CTR0, start);
		break;
	case PMU_AMD_V2:
		if (hal_rdmsr(MSR_AMD_GLOBAL_STATUS, &v) != 0 || !(v & AMD_GLOBAL_CTR0))
			return 0;
		hal_wrmsr(MSR_AMD_PERF_CTR0, start);
		hal_wrmsr(MSR_AMD_GLOBAL_STATUS_CLR, AMD_GLOBAL_CTR0);
		if (running && hal_rdmsr(MSR_AMD_GLOBAL_CTL, &v) == 0 && !(v & AMD_GLOBAL_CTR0))
			hal_wrmsr(MSR_AMD_GLOBAL_CTL, v | AMD_GLOBAL_CTR0);
		break;
	default:
		return 0;
	}
	if (running)
		hal_lvt_pmi(LVT_NMI);	/* last: Intel masks the LVT entry on every PMI */
	return 1;
}
