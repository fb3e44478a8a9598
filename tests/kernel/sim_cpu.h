/* SPDX-License-Identifier: MIT */
/* sim_cpu.h: a simulated x86 CPU (CPUID, per-CPU MSR files, TSC, LVT) behind hal/pmu.h for host tests. */
#ifndef SIM_CPU_H
#define SIM_CPU_H
#include <stdint.h>

#define SIM_CPUS 2			/* simulated logical CPUs, each with its own MSR file and LVT */
#define SIM_TSC_HZ 2000000000ull	/* what hal_tsc_hz() reports */
#define SIM_TSC_STEP 37			/* TSC ticks that pass on every hal_tsc() call */
#define SIM_LOG_MAX 16384

/* The hardware being simulated, written down independently of kernel/pmu_x86.c (SDM vol. 3B ch. 20,
 * APM vol. 2 13.2) so that a wrong constant there shows up as a failed test here. */
#define DEBUGCTL 0x1d9
#define DEBUGCTL_FREEZE (1ull << 12)		/* FREEZE_PERFMON_ON_PMI */
#define FIXED_CTR1 0x30a
#define FIXED_CTR_CTRL 0x38d
#define GLOBAL_STATUS 0x38e
#define GLOBAL_CTRL 0x38f
#define GLOBAL_OVF_CTRL 0x390			/* GLOBAL_STATUS_RESET from v4: write 1s to clear */
#define FIXED1_BIT (1ull << 33)
#define STATUS_CTR_FRZ (1ull << 59)		/* v4+: counters frozen by FREEZE_PERFMON_ON_PMI */
#define AMD_LEGACY_CTL0 0xc0010000		/* 0xc0010000-7: defined (they read 0 under KVM) */
#define AMD_CTL0 0xc0010200
#define AMD_CTR0 0xc0010201
#define AMD_GSTATUS 0xc0000300
#define AMD_GCTL 0xc0000301
#define AMD_GSTATUS_CLR 0xc0000302
#define AMD_EN (1ull << 22)
#define AMD_INT (1ull << 20)
#define AMD_CTL_CYCLES 0x530076ull		/* event 0x76, USR, OS, INT, EN */
#define LVT_NMI 0x400u				/* NMI delivery, unmasked */
#define LVT_MASK (1u << 16)

/* MSR behaviour flags for sim_msr(). */
#define SIM_GP 1			/* every access raises #GP (hal_rdmsr/hal_wrmsr return -1) */
#define SIM_RO 2			/* writes raise #GP (status registers) */

enum sim_op { SIM_CPUID, SIM_RD, SIM_WR, SIM_LVT };

struct sim_event {
	enum sim_op op;
	int cpu;		/* the simulated CPU that made the access */
	uint32_t msr;		/* MSR number, or the CPUID leaf; 0 for SIM_LVT */
	uint64_t val;		/* value written, value read (0 on #GP), or the LVT entry */
	int gp;			/* the access raised #GP */
	int irq_off;		/* interrupts were off when it happened */
};

extern struct sim_event sim_log[SIM_LOG_MAX];	/* every CPUID, MSR read/write and LVT write, in order */
extern int sim_nlog;				/* entries in sim_log */
extern int sim_log_lost;			/* entries that did not fit */

void sim_reset(void);	/* no CPUID leaves, no MSRs, empty log, CPU 0, interrupts on, no hook */
void sim_vendor(const char *vendor12, uint32_t max_leaf, uint32_t max_ext);	/* leaves 0 and 0x80000000 */
void sim_cpuid(uint32_t leaf, uint32_t a, uint32_t b, uint32_t c, uint32_t d);
void sim_msr(uint32_t msr, uint64_t val, int flags);	/* defines an MSR on every CPU */
void sim_intel(uint32_t version, uint32_t nfixed, uint32_t width);	/* GenuineIntel, arch perfmon, live fixed ctr 1 */
void sim_amd(int core, int v2);		/* AuthenticAMD with/without PerfCtrExtCore and PerfMonV2 */
void sim_swallow(int on);		/* QEMU TCG: every read returns 0, every write is dropped, no #GP */
void sim_set_cpu(int cpu);		/* the CPU that the following hal_* calls run on */
void sim_advance(uint64_t ticks);	/* lets TSC time pass without a hal_tsc() call */
void sim_on_wrmsr(void (*fn)(int cpu, uint32_t msr, uint64_t v));	/* called after each MSR write */

uint64_t sim_get(int cpu, uint32_t msr);	/* an MSR's value, unlogged */
void sim_set(int cpu, uint32_t msr, uint64_t v);	/* sets it, unlogged */
uint32_t sim_lvt(int cpu);		/* the LVT performance-counter entry (Intel sets bit 16 on a PMI) */
int sim_pmis(int cpu);			/* PMIs the counters raised so far */
int sim_irq_on(void);			/* interrupts currently enabled */

/* Log queries, over entries [from, sim_nlog). */
int sim_count(int from, enum sim_op op, uint32_t lo, uint32_t hi);	/* entries with msr in [lo, hi] */
int sim_next(int from, enum sim_op op, uint32_t msr);	/* index of the first such entry, or -1 */
int sim_last_write(int from);				/* index of the last SIM_WR or SIM_LVT, or -1 */
#endif
