/* SPDX-License-Identifier: MIT */
/* work.c: workloads with a known profile: split A:B:C, a call chain, irq-off spins, memcpy, C++. */
#include "work.h"
#include "cxxwork.h"
#include "cpu.h"
#include "sched.h"
#include "arch.h"

#define SPLIT_MAX 1000		/* per-count upper bound for `work split` */
#define SPLIT_UNIT 4096		/* loop iterations per count per round */
#define CHAIN_MAX 8
#define IRQOFF_PERIOD_MS 10
#define COPY_BYTES 65536
#define STOP_WAIT_MS 2000

enum work_kind { W_SPLIT, W_CHAIN, W_IRQOFF, W_COPY, W_FANOUT, W_SYMBOLS, W_USER, W_SBI, W_SLEEP };

/* The same busy loop everywhere, so only iteration counts differ between functions. */
#define SPIN_LOOP(n) do {						\
	uint64_t acc_ = 1;						\
	for (uint64_t i_ = 0; i_ < (n); i_++) {				\
		acc_ = acc_ * 6364136223846793005ull + i_;		\
		__asm__ volatile("" : "+r"(acc_));			\
	}								\
} while (0)

/*
 * work split A B C: split_a, split_b and split_c have identical bodies and run A, B and C
 * units per round, so their true shares of the task's time are A:B:C. Built with
 * -fno-ipa-icf so the compiler cannot fold them into one function.
 */
NOINLINE void split_a(uint64_t units) { SPIN_LOOP(units * SPLIT_UNIT); }
NOINLINE void split_b(uint64_t units) { SPIN_LOOP(units * SPLIT_UNIT); }
NOINLINE void split_c(uint64_t units) { SPIN_LOOP(units * SPLIT_UNIT); }

static volatile uint64_t split_rounds[MAX_TASKS];	/* per task slot: rounds of a, b and c done */

static void run_split(struct task *t)
{
	split_rounds[t - tasks] = 0;
	while (!t->killed) {
		split_a(t->args[1]);
		split_b(t->args[2]);
		split_c(t->args[3]);
		split_rounds[t - tasks]++;	/* single writer: readers see whole values */
	}
}

/* work chain D: chain1 -> chain2 -> ... -> chainD, which spins until the task is stopped. */
#define CHAIN_FN(n, next)						\
	NOINLINE void chain##n(struct task *t, int depth)		\
	{								\
		if (depth > n)						\
			next(t, depth);					\
		else							\
			while (!t->killed)				\
				SPIN_LOOP(SPLIT_UNIT);			\
	}
NOINLINE void chain8(struct task *t, int depth);
CHAIN_FN(8, chain8)	/* never recurses: depth <= CHAIN_MAX */
CHAIN_FN(7, chain8)
CHAIN_FN(6, chain7)
CHAIN_FN(5, chain6)
CHAIN_FN(4, chain5)
CHAIN_FN(3, chain4)
CHAIN_FN(2, chain3)
CHAIN_FN(1, chain2)

/*
 * work irqoff MS: MS ms of every 10 ms in irqoff_spin with interrupts off, the rest in
 * irqon_spin. A timer tick that falls due inside irqoff_spin is held until irqoff_exit's sti
 * and taken right there, so a tick-sourced profiler never sees irqoff_spin: its share shows
 * up in irqoff_exit instead. A gdbstub stop or an NMI sees irqoff_spin as it is.
 */
NOINLINE void irqoff_spin(uint64_t until)
{
	while (cycles() < until)	/* called with interrupts off */
		SPIN_LOOP(64);
}

NOINLINE void irqoff_exit(void)
{
	/* The held tick lands on one of the nops (x86: sti takes effect after the next one). */
	irq_enable();
	__asm__ volatile("nop; nop" ::: "memory");
}

NOINLINE void irqon_spin(uint64_t until)
{
	while (cycles() < until)
		SPIN_LOOP(64);
}

/*
 * Each period lasts 6-14 ms (10 ms on average, pseudo-random) with MS/10 of it interrupts-off:
 * a fixed 10 ms period would beat against the 100 Hz tick and decide by phase alone whether
 * the held ticks land in irqoff_exit.
 *
 * The deadlines make the shares MS/10 of TSC time only while the vCPU runs without gaps. Under
 * TCG on a busy host a vCPU thread is descheduled, or blocks on QEMU's lock while it takes an
 * interrupt, and the guest clock runs on meanwhile: the code sits in one phase past its
 * deadline and the next phase shrinks. So each task also counts the TSC time its code
 * actually spent in each phase, interrupts included (`work time PID`): the true shares,
 * measured on the spot, for whoever checks a profiler against them.
 */
static volatile uint64_t irqoff_cycles[MAX_TASKS][3];/* per task slot: irqoff_spin, irqoff_exit, irqon_spin */

static void run_irqoff(struct task *t)
{
	volatile uint64_t *acct = irqoff_cycles[t - tasks];
	uint64_t us = cycles_hz() / 1000000, x = (uint64_t)t->pid;
	uint64_t start = cycles();
	acct[0] = acct[1] = acct[2] = 0;
	while (!t->killed) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		uint64_t period = (IRQOFF_PERIOD_MS * 600 + (x >> 33) % (IRQOFF_PERIOD_MS * 800 + 1)) * us;
		uint64_t t0 = cycles();
		irq_disable();
		irqoff_spin(start + period * t->args[1] / IRQOFF_PERIOD_MS);
		uint64_t t1 = cycles();
		irqoff_exit();
		uint64_t t2 = cycles();
		irqon_spin(start + period);
		uint64_t t3 = cycles();
		acct[0] += t1 - t0;	/* single writer, 64-bit aligned: readers see whole values */
		acct[1] += t2 - t1;
		acct[2] += t3 - t2;
		start += period;
		if (cycles() > start + period)	/* fell behind (e.g. preempted): realign */
			start = cycles();
	}
}

/* work copy: memcpy between two 64 KiB buffers, back and forth. */
NOINLINE void copy_round(uint8_t *a, uint8_t *b)
{
	memcpy(b, a, COPY_BYTES);
	memcpy(a, b, COPY_BYTES);
}

/* work sleep MS: a task that only sleeps -- its whole life off-CPU, blocked in nap_sleep's
 * task_sleep_ms (the known answer of an off-CPU profile) but for the few instructions between. */
NOINLINE void nap_sleep(uint64_t ms) { task_sleep_ms(ms); }

static void run_sleep(struct task *t)
{
	while (!t->killed)
		nap_sleep(t->args[1]);
}

static void run_copy(struct task *t)
{
	static uint8_t bufs[MAX_TASKS][2][COPY_BYTES];	/* per task slot: no allocation */
	uint8_t (*buf)[COPY_BYTES] = bufs[t - tasks];
	while (!t->killed)
		copy_round(buf[0], buf[1]);
}

/*
 * work fanout: 32 "mid" functions each call one of 16 leaves, chosen pseudo-randomly, so
 * the task runs through 512 distinct chains of equal weight (for the report's 128-chain limit).
 */
#define FAN_LEAVES 16
#define FAN_MIDS 32
#define FAN_LEAF(n) NOINLINE void fan_leaf##n(void) { SPIN_LOOP(256); }
#define FAN_MID(n) NOINLINE void fan_mid##n(uint64_t pick) { fan_leaves[pick % FAN_LEAVES](); }
FAN_LEAF(0) FAN_LEAF(1) FAN_LEAF(2) FAN_LEAF(3) FAN_LEAF(4) FAN_LEAF(5) FAN_LEAF(6) FAN_LEAF(7)
FAN_LEAF(8) FAN_LEAF(9) FAN_LEAF(10) FAN_LEAF(11) FAN_LEAF(12) FAN_LEAF(13) FAN_LEAF(14) FAN_LEAF(15)
static void (*const fan_leaves[FAN_LEAVES])(void) = {
	fan_leaf0, fan_leaf1, fan_leaf2, fan_leaf3, fan_leaf4, fan_leaf5, fan_leaf6, fan_leaf7,
	fan_leaf8, fan_leaf9, fan_leaf10, fan_leaf11, fan_leaf12, fan_leaf13, fan_leaf14, fan_leaf15,
};
FAN_MID(0) FAN_MID(1) FAN_MID(2) FAN_MID(3) FAN_MID(4) FAN_MID(5) FAN_MID(6) FAN_MID(7)
FAN_MID(8) FAN_MID(9) FAN_MID(10) FAN_MID(11) FAN_MID(12) FAN_MID(13) FAN_MID(14) FAN_MID(15)
FAN_MID(16) FAN_MID(17) FAN_MID(18) FAN_MID(19) FAN_MID(20) FAN_MID(21) FAN_MID(22) FAN_MID(23)
FAN_MID(24) FAN_MID(25) FAN_MID(26) FAN_MID(27) FAN_MID(28) FAN_MID(29) FAN_MID(30) FAN_MID(31)
static void (*const fan_mids[FAN_MIDS])(uint64_t) = {
	fan_mid0, fan_mid1, fan_mid2, fan_mid3, fan_mid4, fan_mid5, fan_mid6, fan_mid7,
	fan_mid8, fan_mid9, fan_mid10, fan_mid11, fan_mid12, fan_mid13, fan_mid14, fan_mid15,
	fan_mid16, fan_mid17, fan_mid18, fan_mid19, fan_mid20, fan_mid21, fan_mid22, fan_mid23,
	fan_mid24, fan_mid25, fan_mid26, fan_mid27, fan_mid28, fan_mid29, fan_mid30, fan_mid31,
};

static void run_fanout(struct task *t)
{
	uint64_t x = (uint64_t)t->pid * 0x9e3779b97f4a7c15ull;
	while (!t->killed) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;	/* Knuth's MMIX LCG */
		fan_mids[(x >> 33) % FAN_MIDS](x >> 45);
	}
}

static void work_main(void *arg)
{
	(void)arg;
	struct task *t = current_task();
	switch (t->args[0]) {
	case W_SPLIT: run_split(t); break;
	case W_CHAIN: chain1(t, (int)t->args[1]); break;
	case W_IRQOFF: run_irqoff(t); break;
	case W_COPY: run_copy(t); break;
	case W_SLEEP: run_sleep(t); break;
	case W_FANOUT: run_fanout(t); break;
	case W_SYMBOLS: work_symbols(&t->killed, (uint64_t)t->pid); break; /* cxxwork.cpp */
#if ARCH_HAS_USER
	case W_USER: enter_user(&t->killed); /* user.S: U-mode until stopped */
#endif
#if ARCH_HAS_FIRMWARE
	case W_SBI: firmware_spin(&t->killed); break; /* sbi.c: OpenSBI calls until stopped */
#endif
	}
}

static void start(struct out *o, const char *name, uint64_t kind, uint64_t a, uint64_t b, uint64_t c)
{
	int cpu = sched_pick_cpu();
	const uint64_t args[4] = { kind, a, b, c };
	struct task *t = task_create(name, KIND_WORK, work_main, 0, args, cpu);
	if (!t) {
		out_printf(o, "work: cannot start %s: out of task slots or memory\n", name);
		return;
	}
	switch (kind) {
	case W_SPLIT: snprintf(t->desc, sizeof(t->desc), "split %lu %lu %lu", a, b, c); break;
	case W_CHAIN: snprintf(t->desc, sizeof(t->desc), "chain %lu", a); break;
	case W_IRQOFF: snprintf(t->desc, sizeof(t->desc), "irqoff %lu", a); break;
	case W_FANOUT: snprintf(t->desc, sizeof(t->desc), "fanout"); break;
	case W_SYMBOLS: snprintf(t->desc, sizeof(t->desc), "symbols"); break;
	case W_USER: snprintf(t->desc, sizeof(t->desc), "user"); break;
	case W_SBI: snprintf(t->desc, sizeof(t->desc), "sbi"); break;
	case W_SLEEP: snprintf(t->desc, sizeof(t->desc), "sleep %lu", a); break;
	default: snprintf(t->desc, sizeof(t->desc), "copy"); break;
	}
	out_printf(o, "work: pid %d %s on cpu%d\n", t->pid, t->desc, cpu);
}

static int arg_range(const char *s, uint64_t lo, uint64_t hi, uint64_t *v)
{
	return parse_u64(s, v) == 0 && *v >= lo && *v <= hi;
}

/* Asks the task to stop and waits for it to exit; 1 if it did. */
static int stop_task(struct task *t)
{
	int pid = t->pid;
	task_kill(pid);
	for (int waited = 0; waited < STOP_WAIT_MS; waited += 10) {
		if (!task_by_pid(pid))
			return 1;
		task_sleep_ms(10);
	}
	return 0;
}

static void work_stop(int argc, char **argv, struct out *o)
{
	uint64_t pid;
	if (argc != 3) {
		out_puts(o, "work: stop needs a pid or all\n");
		return;
	}
	if (strcmp(argv[2], "all") == 0) {
		int n = 0, stuck = 0;
		for (int i = 0; i < MAX_TASKS; i++) {
			struct task *t = &tasks[i];
			if (t->state != TASK_FREE && t->state != TASK_ZOMBIE && t->kind == KIND_WORK)
				stop_task(t) ? n++ : stuck++;
		}
		out_printf(o, "work: stopped %d task%s", n, n == 1 ? "" : "s");
		out_printf(o, stuck ? ", %d did not exit\n" : "\n", stuck);
		return;
	}
	if (parse_u64(argv[2], &pid) != 0 || pid > 0x7fffffff) {
		out_printf(o, "work: stop needs a pid or all, not '%s'\n", argv[2]);
		return;
	}
	struct task *t = task_by_pid((int)pid);
	if (!t)
		out_printf(o, "work: no task with pid %lu\n", pid);
	else if (t->kind != KIND_WORK)
		out_printf(o, "work: pid %lu is not a workload\n", pid);
	else if (stop_task(t))
		out_printf(o, "work: stopped pid %lu\n", pid);
	else
		out_printf(o, "work: pid %lu did not exit within %d ms\n", pid, STOP_WAIT_MS);
}

/* work time PID: the TSC time an irqoff task's code has spent in each phase since it started. */
static void work_time(int argc, char **argv, struct out *o)
{
	uint64_t pid;
	if (argc != 3 || parse_u64(argv[2], &pid) != 0 || pid > 0x7fffffff) {
		out_puts(o, "work: time needs the pid of an irqoff task\n");
		return;
	}
	struct task *t = task_by_pid((int)pid);
	if (!t || t->kind != KIND_WORK || t->args[0] != W_IRQOFF) {
		out_printf(o, "work: pid %lu is not an irqoff task\n", pid);
		return;
	}
	volatile uint64_t *acct = irqoff_cycles[t - tasks];
	out_printf(o, "work: pid %lu %s irqoff_spin %lu irqoff_exit %lu irqon_spin %lu (%s %lu Hz)\n",
		   pid, CYCLES_NAME, acct[0], acct[1], acct[2], CYCLES_NAME, cycles_hz());
}

/* work rounds PID: how many rounds a split task has done -- its throughput, so what anything
 * else running on its CPU (a profiler) costs it, in the guest's own time. */
static void work_rounds(int argc, char **argv, struct out *o)
{
	uint64_t pid;
	if (argc != 3 || parse_u64(argv[2], &pid) != 0 || pid > 0x7fffffff) {
		out_puts(o, "work: rounds needs the pid of a split task\n");
		return;
	}
	struct task *t = task_by_pid((int)pid);
	if (!t || t->kind != KIND_WORK || t->args[0] != W_SPLIT) {
		out_printf(o, "work: pid %lu is not a split task\n", pid);
		return;
	}
	out_printf(o, "work: pid %lu rounds %lu at %lu ms\n", pid, split_rounds[t - tasks], uptime_ms());
}

void work_command(int argc, char **argv, struct out *o)
{
	uint64_t a, b, c;
	const char *sub = argc > 1 ? argv[1] : "";
	if (strcmp(sub, "split") == 0) {
		if (argc != 5 || !arg_range(argv[2], 1, SPLIT_MAX, &a) ||
		    !arg_range(argv[3], 1, SPLIT_MAX, &b) || !arg_range(argv[4], 1, SPLIT_MAX, &c))
			out_printf(o, "work: split needs three positive counts (1-%d)\n", SPLIT_MAX);
		else
			start(o, "split", W_SPLIT, a, b, c);
	} else if (strcmp(sub, "chain") == 0) {
		if (argc != 3 || !arg_range(argv[2], 1, CHAIN_MAX, &a))
			out_printf(o, "work: chain needs a depth from 1 to %d\n", CHAIN_MAX);
		else
			start(o, "chain", W_CHAIN, a, 0, 0);
	} else if (strcmp(sub, "irqoff") == 0) {
		if (argc != 3 || !arg_range(argv[2], 1, IRQOFF_PERIOD_MS - 1, &a))
			out_printf(o, "work: irqoff needs milliseconds from 1 to %d (per %d ms)\n",
				   IRQOFF_PERIOD_MS - 1, IRQOFF_PERIOD_MS);
		else
			start(o, "irqoff", W_IRQOFF, a, 0, 0);
	} else if (strcmp(sub, "sleep") == 0) {
		if (argc != 3 || !arg_range(argv[2], 1, 1000, &a))
			out_puts(o, "work: sleep needs milliseconds from 1 to 1000\n");
		else
			start(o, "sleep", W_SLEEP, a, 0, 0);
	} else if (strcmp(sub, "copy") == 0) {
		if (argc != 2)
			out_puts(o, "work: copy takes no arguments\n");
		else
			start(o, "copy", W_COPY, 0, 0, 0);
	} else if (strcmp(sub, "fanout") == 0) {
		if (argc != 2)
			out_puts(o, "work: fanout takes no arguments\n");
		else
			start(o, "fanout", W_FANOUT, 0, 0, 0);
	} else if (strcmp(sub, "symbols") == 0) {
		if (argc != 2)
			out_puts(o, "work: symbols takes no arguments\n");
		else
			start(o, "symbols", W_SYMBOLS, 0, 0, 0);
	} else if (strcmp(sub, "user") == 0) {
		if (!ARCH_HAS_USER)
			out_puts(o, "work: user mode is built only into the riscv64 kernel\n");
		else if (argc != 2)
			out_puts(o, "work: user takes no arguments\n");
		else
			start(o, "user", W_USER, 0, 0, 0);
	} else if (strcmp(sub, "sbi") == 0) {
		if (!ARCH_HAS_FIRMWARE)
			out_puts(o, "work: sbi calls are built only into the riscv64 kernel\n");
		else if (argc != 2)
			out_puts(o, "work: sbi takes no arguments\n");
		else
			start(o, "sbi", W_SBI, 0, 0, 0);
	} else if (strcmp(sub, "rounds") == 0) {
		work_rounds(argc, argv, o);
	} else if (strcmp(sub, "time") == 0) {
		work_time(argc, argv, o);
	} else if (strcmp(sub, "stop") == 0) {
		work_stop(argc, argv, o);
	} else {
		out_puts(o, "work: usage: work split A B C | chain D | irqoff MS | sleep MS | copy | fanout | symbols | user | sbi | time PID | rounds PID | stop PID|all\n");
	}
}
