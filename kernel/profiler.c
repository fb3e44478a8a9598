/* SPDX-License-Identifier: MIT */
/* profiler.c: per-CPU lock-free sample buffers, start/stop across CPUs, and the `profile` command. */
#include "profiler.h"
#include "arch.h"
#include "cpu.h"
#include "mem.h"
#include "pmu.h"
#include "prof_report.h"
#include "sched.h"
#include "stacktrace.h"
#include "trap.h"

#define STOP_WAIT_MS 200	/* how long stop waits for every CPU to disarm on its tick */

/* Per-CPU sampling state: written only by its own CPU, from its interrupt/NMI, interrupts off. */
struct prof_cpu {
	struct prof_record *buf;	/* PROF_BUF records; allocated once, never freed */
	volatile uint32_t count;	/* records written this run */
	volatile uint64_t taken;	/* samples that arrived this run (= count + dropped) */
	volatile uint64_t dropped;	/* arrived to a full buffer, or after stop */
};

static struct prof_cpu pcpu[MAX_CPUS];
static volatile int prof_active;	/* a run is on: ticks sample or arm, NMIs record */
static volatile int prof_running;	/* between start and the end of stop (no overlapping runs) */
static enum pmu_kind run_kind;		/* the source the current/last run used */
static uint64_t run_period;		/* counter period of the current run */
static int run_cpus;			/* CPUs with buffers in the current/last run */

/* Records one sample from the interrupted context. No locks, no allocation, no symbols. */
static void prof_sample(struct trapframe *tf)
{
	struct cpu *c = mycpu();
	struct prof_cpu *p = &pcpu[c->id];
	p->taken++;
	if (!__atomic_load_n(&prof_active, __ATOMIC_ACQUIRE) || !p->buf || p->count >= PROF_BUF) {
		p->dropped++;
		return;
	}
	struct prof_record *r = &p->buf[p->count];
	struct task *t = c->current;
	r->pid = t ? t->pid : -1;
	r->idle = !t || t->kind == KIND_IDLE;
	r->frames[0] = TF_PC(tf);
	r->n = (uint8_t)(1 + stacktrace_trapframe(tf, r->frames + 1, PROF_FRAMES - 1));
	p->count++;
}

void prof_tick(struct trapframe *tf)
{
	int cpu = mycpu()->id;
	if (__atomic_load_n(&prof_active, __ATOMIC_ACQUIRE)) {
		if (run_kind != PMU_NONE && pcpu[cpu].buf) {
			if (!pmu_armed(cpu))
				pmu_arm(cpu, run_period);	/* from now on this CPU's NMIs sample */
			return;
		}
		if (pcpu[cpu].buf)
			prof_sample(tf);
	} else if (pmu_armed(cpu)) {
		pmu_disarm(cpu);
	}
}

int prof_nmi(struct trapframe *tf)
{
	if (!pmu_nmi(mycpu()->id))
		return 0;
	prof_sample(tf);
	return 1;
}

static int any_armed(void)
{
	for (int i = 0; i < ncpu; i++)
		if (pmu_armed(i))
			return 1;
	return 0;
}

static int prof_start(struct out *o)
{
	const struct pmu_decision *d = pmu_decide();	/* probes once, on this CPU */
	for (int i = 0; i < ncpu; i++) {
		struct prof_cpu *p = &pcpu[i];
		if (cpus[i].online && !p->buf) {
			p->buf = kalloc(PROF_BUF * sizeof(struct prof_record));
			if (!p->buf) {
				out_puts(o, "profile: out of memory for sample buffers\n");
				return -1;
			}
		}
		/* Safe: no CPU samples now (not active, none armed: the last stop waited). */
		p->count = 0;
		p->taken = 0;
		p->dropped = 0;
	}
	run_cpus = 0;
	for (int i = 0; i < ncpu; i++)
		run_cpus += pcpu[i].buf != 0;
	run_kind = d->kind;
	run_period = pmu_period();
	/* Release: buffers, counters and the source are visible before any CPU sees active. */
	__atomic_store_n(&prof_active, 1, __ATOMIC_RELEASE);
	return 0;
}

static void prof_stop(void)
{
	__atomic_store_n(&prof_active, 0, __ATOMIC_RELEASE);
	/* Each CPU disarms on its next tick; wait so the next run starts from a quiet PMU. */
	for (int waited = 0; any_armed() && waited < STOP_WAIT_MS; waited += 10)
		task_sleep_ms(10);
}

static void profile_stats(struct out *o)
{
	out_printf(o, "last run: source %s, %d cpus\n", run_kind == PMU_NONE ? "tick 100 Hz" : pmu_source_name(run_kind),
		   run_cpus);
	out_puts(o, "CPU      TAKEN   RECORDED    DROPPED\n");
	for (int i = 0; i < ncpu; i++)
		if (pcpu[i].buf)
			out_printf(o, "%3d %10lu %10u %10lu\n", i, pcpu[i].taken, pcpu[i].count, pcpu[i].dropped);
}

void prof_lscpu(struct out *o)
{
	const struct pmu_decision *d = pmu_decide();
	out_printf(o, "pmu claims:  %s\n", d->claimed);
	if (d->kind != PMU_NONE) {
		out_printf(o, "profile:     %s (%s)\n", pmu_source_name(d->kind), d->detail);
		if (d->blind)
			out_printf(o, "blind spot:  %s\n", d->blind);
	} else {
		out_printf(o, "profile:     tick only: %s%s%s\n", d->reason, d->detail[0] ? ": " : "", d->detail);
	}
	out_printf(o, "pmu probe:   %lu ns (bound %d ns)\n", d->probe_ns, PMU_PROBE_NS);
}

static int parse_range(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	return parse_u64(s, v) == 0 && *v >= lo && *v <= hi;
}

#define PROFILE_USAGE "usage: profile [MS [PID|all [CHAINS]]] | profile stats"

void profile_command(int argc, char **argv, struct out *o)
{
	uint64_t ms = 1000, pid = 0, chains = 8;
	int filter = 0;
	if (argc == 2 && strcmp(argv[1], "stats") == 0) {
		profile_stats(o);
		return;
	}
	if (argc > 4) {
		out_puts(o, "profile: too many arguments (" PROFILE_USAGE ")\n");
		return;
	}
	if (argc > 1 && !parse_range(argv[1], 1, PROF_MAX_MS, &ms)) {
		out_printf(o, "profile: window must be 1-%d ms, not '%s'\n", PROF_MAX_MS, argv[1]);
		return;
	}
	if (argc > 2 && strcmp(argv[2], "all") != 0) {
		if (parse_u64(argv[2], &pid) != 0 || pid > 0x7fffffff) {
			out_printf(o, "profile: expected a pid or all, not '%s'\n", argv[2]);
			return;
		}
		if (!task_by_pid((int)pid)) {
			out_printf(o, "profile: no task with pid %lu\n", pid);
			return;
		}
		filter = 1;
	}
	if (argc > 3 && !parse_range(argv[3], 1, PROF_MAX_CHAINS, &chains)) {
		out_printf(o, "profile: chains must be 1-%d, not '%s'\n", PROF_MAX_CHAINS, argv[3]);
		return;
	}
	if (__atomic_exchange_n(&prof_running, 1, __ATOMIC_ACQUIRE)) {
		out_puts(o, "profile: another profile is running\n");
		return;
	}
	if (prof_start(o) == 0) {
		uint64_t t0 = uptime_ms();
		task_sleep_ms(ms);
		prof_stop();
		struct prof_run run = {
			.ms = ms, .elapsed_ms = uptime_ms() - t0, .kind = run_kind, .cpus = run_cpus,
			.pid = filter ? (int)pid : -1, .chains = (int)chains,
		};
		for (int i = 0; i < ncpu; i++) {
			run.buf[i] = pcpu[i].buf;
			run.count[i] = pcpu[i].count;
			run.dropped += pcpu[i].dropped;
		}
		prof_report(o, &run);
	}
	__atomic_store_n(&prof_running, 0, __ATOMIC_RELEASE);
}
