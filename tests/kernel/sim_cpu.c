/* SPDX-License-Identifier: MIT */
/* sim_cpu.c: the simulated CPU: implements every function of hal/pmu.h for the host PMU tests. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "hal/pmu.h"
#include "sim_cpu.h"

#define MAX_MSRS 48
#define MAX_LEAVES 16

enum model { NONE, INTEL, AMD };

struct msr {
	uint32_t msr;		/* number */
	uint64_t val;		/* current value */
	int flags;		/* SIM_GP, SIM_RO */
};

static struct {
	uint32_t leaf[MAX_LEAVES], reg[MAX_LEAVES][4];	/* CPUID table */
	int nleaves;
	struct msr msrs[SIM_CPUS][MAX_MSRS];		/* per-CPU MSR files */
	int nmsrs;
	uint32_t lvt[SIM_CPUS];
	int pmis[SIM_CPUS];
	enum model model;	/* which live counter the MSR file holds */
	uint32_t version;	/* Intel perfmon version */
	uint32_t width;		/* live counter width */
	int amd_v2;
	int swallow;
	int cpu;
	int irq_on;
	uint64_t tsc;
	void (*hook)(int cpu, uint32_t msr, uint64_t v);
} S;

struct sim_event sim_log[SIM_LOG_MAX];
int sim_nlog, sim_log_lost;

static void log_event(enum sim_op op, uint32_t msr, uint64_t val, int gp)
{
	if (sim_nlog == SIM_LOG_MAX) {
		sim_log_lost++;
		return;
	}
	sim_log[sim_nlog++] = (struct sim_event){ op, S.cpu, msr, val, gp, !S.irq_on };
}

static struct msr *find(int cpu, uint32_t msr)
{
	for (int i = 0; i < S.nmsrs; i++)
		if (S.msrs[cpu][i].msr == msr)
			return &S.msrs[cpu][i];
	return NULL;
}

static uint64_t *reg(int cpu, uint32_t msr)	/* an MSR the model itself relies on */
{
	struct msr *m = find(cpu, msr);
	if (!m) {
		fprintf(stderr, "sim_cpu: model MSR 0x%x not defined\n", msr);
		abort();
	}
	return &m->val;
}

void sim_reset(void)
{
	memset(&S, 0, sizeof(S));
	S.irq_on = 1;
	S.tsc = 1000000;
	sim_nlog = sim_log_lost = 0;
}

void sim_cpuid(uint32_t leaf, uint32_t a, uint32_t b, uint32_t c, uint32_t d)
{
	int i = 0;
	while (i < S.nleaves && S.leaf[i] != leaf)
		i++;
	if (i == MAX_LEAVES)
		abort();
	if (i == S.nleaves)
		S.nleaves++;
	S.leaf[i] = leaf;
	S.reg[i][0] = a, S.reg[i][1] = b, S.reg[i][2] = c, S.reg[i][3] = d;
}

void sim_vendor(const char *v, uint32_t max_leaf, uint32_t max_ext)
{
	uint32_t w[3];
	memcpy(w, v, 12);	/* EBX, EDX, ECX spell it in that order */
	sim_cpuid(0, max_leaf, w[0], w[2], w[1]);
	sim_cpuid(0x80000000, max_ext, 0, 0, 0);
}

void sim_msr(uint32_t msr, uint64_t val, int flags)
{
	struct msr *m = find(0, msr);
	int i = m ? (int)(m - S.msrs[0]) : S.nmsrs;
	if (i == MAX_MSRS)
		abort();
	if (!m)
		S.nmsrs++;
	for (int c = 0; c < SIM_CPUS; c++)
		S.msrs[c][i] = (struct msr){ msr, val, flags };
}

void sim_intel(uint32_t version, uint32_t nfixed, uint32_t width)
{
	sim_vendor("GenuineIntel", 0x16, 0x80000008);
	/* 0xa: EAX version | 4 gp | 48 bits | EBX length 7; EDX fixed count | width (v2+) */
	sim_cpuid(0xa, version | 4 << 8 | 48 << 16 | 7u << 24, 0, 0, nfixed | width << 5);
	S.model = INTEL;
	S.version = version;
	S.width = width;
	sim_msr(DEBUGCTL, 0, 0);
	sim_msr(FIXED_CTR1, 0, 0);
	sim_msr(FIXED_CTR_CTRL, 0, 0);
	sim_msr(GLOBAL_STATUS, 0, SIM_RO);
	sim_msr(GLOBAL_CTRL, 0, 0);
	sim_msr(GLOBAL_OVF_CTRL, 0, 0);
}

void sim_amd(int core, int v2)
{
	sim_vendor("AuthenticAMD", 0x10, v2 ? 0x80000022 : 0x80000021);
	sim_cpuid(0x80000001, 0, 0, core ? 1u << 23 : 0, 0);
	if (v2)
		sim_cpuid(0x80000022, 1, 0, 0, 0);
	S.model = AMD;
	S.width = 48;
	S.amd_v2 = v2;
	for (uint32_t m = AMD_LEGACY_CTL0; m < AMD_LEGACY_CTL0 + 8; m++)
		sim_msr(m, 0, 0);
	if (core)
		for (uint32_t m = AMD_CTL0; m < AMD_CTL0 + 12; m++)
			sim_msr(m, 0, 0);
	if (v2) {
		sim_msr(AMD_GSTATUS, 0, SIM_RO);
		sim_msr(AMD_GCTL, 0x3f, 0);	/* out of reset every counter is globally enabled */
		sim_msr(AMD_GSTATUS_CLR, 0, 0);
	}
}

void sim_swallow(int on) { S.swallow = on; }
void sim_set_cpu(int cpu) { S.cpu = cpu; }
void sim_on_wrmsr(void (*fn)(int, uint32_t, uint64_t)) { S.hook = fn; }
uint64_t sim_get(int cpu, uint32_t msr) { return *reg(cpu, msr); }
void sim_set(int cpu, uint32_t msr, uint64_t v) { *reg(cpu, msr) = v; }
uint32_t sim_lvt(int cpu) { return S.lvt[cpu]; }
int sim_pmis(int cpu) { return S.pmis[cpu]; }
int sim_irq_on(void) { return S.irq_on; }

/* Counts `ticks` core cycles (one per TSC tick) on every CPU's live counter that is enabled. */
static void count(uint64_t ticks)
{
	uint64_t m = S.width >= 64 ? ~0ull : (1ull << S.width) - 1;
	for (int c = 0; c < SIM_CPUS && !S.swallow; c++) {
		uint64_t *ctr, *status = NULL, bit = 0;
		int pmi;
		if (S.model == INTEL) {
			uint64_t ctl = *reg(c, FIXED_CTR_CTRL);
			status = reg(c, GLOBAL_STATUS);
			if (!(ctl & (3ull << 4)) || !(*reg(c, GLOBAL_CTRL) & FIXED1_BIT) || (*status & STATUS_CTR_FRZ))
				continue;
			ctr = reg(c, FIXED_CTR1);
			bit = FIXED1_BIT;
			pmi = (ctl >> 7) & 1;
		} else if (S.model == AMD && find(c, AMD_CTL0)) {
			uint64_t ctl = *reg(c, AMD_CTL0);
			if (!(ctl & AMD_EN) || (S.amd_v2 && !(*reg(c, AMD_GCTL) & 1)))
				continue;
			ctr = reg(c, AMD_CTR0);
			if (S.amd_v2)
				status = reg(c, AMD_GSTATUS), bit = 1;
			pmi = (ctl & AMD_INT) != 0;
		} else
			continue;
		uint64_t old = *ctr & m;
		*ctr = (old + ticks) & m;
		if (*ctr >= old)
			continue;	/* no wrap, no overflow */
		if (status)
			*status |= bit;
		if (!pmi)
			continue;
		S.pmis[c]++;
		if (S.model != INTEL)
			continue;
		S.lvt[c] |= LVT_MASK;	/* Intel masks the LVT entry on every PMI */
		if (*reg(c, DEBUGCTL) & DEBUGCTL_FREEZE) {
			if (S.version >= 4)
				*status |= STATUS_CTR_FRZ;	/* frozen until software clears it */
			else
				*reg(c, GLOBAL_CTRL) = 0;	/* legacy freeze */
		}
	}
}

void sim_advance(uint64_t ticks)
{
	S.tsc += ticks;
	count(ticks);
}

static int next_from(int from, enum sim_op op, uint32_t lo, uint32_t hi, int *n)
{
	int first = -1;
	*n = 0;
	for (int i = from; i < sim_nlog; i++)
		if (sim_log[i].op == op && sim_log[i].msr >= lo && sim_log[i].msr <= hi) {
			if (first < 0)
				first = i;
			++*n;
		}
	return first;
}

int sim_count(int from, enum sim_op op, uint32_t lo, uint32_t hi)
{
	int n;
	next_from(from, op, lo, hi, &n);
	return n;
}

int sim_next(int from, enum sim_op op, uint32_t msr)
{
	int n;
	return next_from(from, op, msr, msr, &n);
}

int sim_last_write(int from)
{
	int last = -1;
	for (int i = from; i < sim_nlog; i++)
		if (sim_log[i].op == SIM_WR || sim_log[i].op == SIM_LVT)
			last = i;
	return last;
}

/* hal/pmu.h */

void hal_cpuid(uint32_t leaf, uint32_t sub, uint32_t r[4])
{
	(void)sub;
	log_event(SIM_CPUID, leaf, 0, 0);
	memset(r, 0, 4 * sizeof(r[0]));
	for (int i = 0; i < S.nleaves; i++)
		if (S.leaf[i] == leaf)
			memcpy(r, S.reg[i], 4 * sizeof(r[0]));
}

int hal_rdmsr(uint32_t msr, uint64_t *v)
{
	struct msr *m = find(S.cpu, msr);
	int gp = !S.swallow && (!m || (m->flags & SIM_GP));
	*v = gp || S.swallow ? 0 : m->val;
	log_event(SIM_RD, msr, *v, gp);
	return gp ? -1 : 0;
}

int hal_wrmsr(uint32_t msr, uint64_t v)
{
	struct msr *m = find(S.cpu, msr);
	int gp = !S.swallow && (!m || (m->flags & (SIM_GP | SIM_RO)));
	log_event(SIM_WR, msr, v, gp);
	if (gp)
		return -1;
	if (!S.swallow) {
		if (msr == GLOBAL_OVF_CTRL && S.model == INTEL)
			*reg(S.cpu, GLOBAL_STATUS) &= ~v;	/* write 1s to clear */
		else if (msr == AMD_GSTATUS_CLR && S.model == AMD)
			*reg(S.cpu, AMD_GSTATUS) &= ~v;
		else
			m->val = v;
	}
	if (S.hook)
		S.hook(S.cpu, msr, v);
	return 0;
}

uint64_t hal_tsc(void)
{
	sim_advance(SIM_TSC_STEP);
	return S.tsc;
}

uint64_t hal_tsc_hz(void) { return SIM_TSC_HZ; }

void hal_lvt_pmi(uint32_t v)
{
	log_event(SIM_LVT, 0, v, 0);
	S.lvt[S.cpu] = v;
}

uint64_t hal_irq_save(void)
{
	uint64_t f = S.irq_on;
	S.irq_on = 0;
	return f;
}

void hal_irq_restore(uint64_t flags) { S.irq_on = flags != 0; }
