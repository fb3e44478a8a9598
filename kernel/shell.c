/* SPDX-License-Identifier: MIT */
/* shell.c: the serial shell: line editing on COM1, tokenizing, and the command table. */
#include "shell.h"
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "mem.h"
#if ARCH_HAS_NET
#include "net.h"
#include "netload.h"
#endif
#include "profiler.h"
#include "sched.h"
#include "work.h"

#define MAX_ARGS 8

struct command {
	const char *name;
	const char *help;
	void (*run)(int argc, char **argv, struct out *o);
};

static void cmd_help(int argc, char **argv, struct out *o);

static int no_args(int argc, char **argv, struct out *o)
{
	if (argc > 1) {
		out_printf(o, "%s: takes no arguments\n", argv[0]);
		return 0;
	}
	return 1;
}

static void cmd_ps(int argc, char **argv, struct out *o)
{
	if (!no_args(argc, argv, o))
		return;
	out_puts(o, "  PID CPU STATE        TICKS STACK NAME     WHAT\n");
	for (int i = 0; i < MAX_TASKS; i++) {
		struct task *t = &tasks[i];
		if (t->state == TASK_FREE || t->state == TASK_ZOMBIE)
			continue;
		out_printf(o, "%5d %3d %-9s %8lu %4luK %-8s %s\n", t->pid, t->cpu, task_state_name(t->state),
			   t->ticks, t->stack_size / 1024, t->name, t->desc);
	}
}

static void cmd_cpus(int argc, char **argv, struct out *o)
{
	if (!no_args(argc, argv, o))
		return;
	out_printf(o, "uptime %lu ms, %d of %d cpus online, tick %d Hz\n", uptime_ms(), cpu_online_count(), ncpu, TICK_HZ);
	out_puts(o, "CPU APIC      TICKS   PID TASK\n");
	for (int i = 0; i < ncpu; i++) {
		struct cpu *c = &cpus[i];
		struct task *t = c->current;
		out_printf(o, "%3d %4u %10lu %5d %s%s\n", i, (unsigned)arch_cpu_hwid(c), c->ticks, t ? t->pid : -1,
			   t ? t->name : "-", c->online ? "" : " (offline)");
	}
}

static void cmd_lscpu(int argc, char **argv, struct out *o)
{
	if (!no_args(argc, argv, o))
		return;
	arch_lscpu(o);
	out_printf(o, "cpus:        %d online\n", cpu_online_count());
	arch_clocks_print(o);
	prof_lscpu(o);
}

static void cmd_uptime(int argc, char **argv, struct out *o)
{
	if (!no_args(argc, argv, o))
		return;
	uint64_t ms = uptime_ms();
	out_printf(o, "up %lu.%03lu s, %d cpus, %lu MiB free", ms / 1000, ms % 1000, cpu_online_count(),
		   mem_free_bytes() >> 20);
	/* the console's losses, only when there were some */
	if (console_tx_dropped())
		out_printf(o, ", %lu output bytes dropped", console_tx_dropped());
	if (console_rx_overruns)
		out_printf(o, ", %lu input bytes dropped", console_rx_overruns);
	out_printf(o, "\n");
}

static void cmd_stacks(int argc, char **argv, struct out *o)
{
	if (!no_args(argc, argv, o))
		return;
	out_puts(o, "  PID NAME       SIZE   USED  GUARD\n");
	for (int i = 0; i < MAX_TASKS; i++) {
		struct task *t = &tasks[i];
		if (t->state == TASK_FREE || t->state == TASK_ZOMBIE || !t->stack)
			continue;
		if (t->kind == KIND_IDLE)	/* boot stacks were not pattern-filled */
			out_printf(o, "%5d %-8s %6lu      -  -\n", t->pid, t->name, t->stack_size);
		else
			out_printf(o, "%5d %-8s %6lu %6lu  %s\n", t->pid, t->name, t->stack_size,
				   task_stack_used(t), task_stack_guard_ok(t) ? "ok" : "BROKEN");
	}
}

static void cmd_work(int argc, char **argv, struct out *o)
{
	work_command(argc, argv, o);
}

static void cmd_profile(int argc, char **argv, struct out *o)
{
	profile_command(argc, argv, o);
}

#if ARCH_HAS_NET
static void cmd_net(int argc, char **argv, struct out *o)
{
	if (no_args(argc, argv, o))
		net_print(o);
}

static void cmd_netload(int argc, char **argv, struct out *o)
{
	netload_command(argc, argv, o);
}
#endif

static void cmd_kill(int argc, char **argv, struct out *o)
{
	uint64_t pid;
	if (argc != 2 || parse_u64(argv[1], &pid) != 0 || pid > 0x7fffffff) {
		out_puts(o, "kill: needs one pid\n");
		return;
	}
	struct task *t = task_by_pid((int)pid);
	if (!t)
		out_printf(o, "kill: no task with pid %lu\n", pid);
	else if (t->kind == KIND_IDLE || t->kind == KIND_SHELL)
		out_printf(o, "kill: pid %lu (%s) cannot be killed\n", pid, t->name);
	else {
		task_kill((int)pid);
		out_printf(o, "kill: pid %lu asked to exit\n", pid);
	}
}

/* A real exception (#UD) rather than a call to panic(): tests the trap path end to end. */
NOINLINE static void cmd_panic(int argc, char **argv, struct out *o)
{
	if (!no_args(argc, argv, o))
		return;
	out_puts(o, "panic: raising an invalid-opcode exception\n");
	arch_raise_exception();
}

static void cmd_poweroff(int argc, char **argv, struct out *o)
{
	if (!no_args(argc, argv, o))
		return;
	out_puts(o, "poweroff: bye\n");
	arch_poweroff(o);
}

static const struct command commands[] = {
	{ "help", "this list", cmd_help },
	{ "ps", "tasks: pid, cpu, state, ticks run, stack, name", cmd_ps },
	{ "cpus", "per cpu: apic id, ticks, current task", cmd_cpus },
	{ "lscpu", "vendor, model, hypervisor, what the part claims for perf monitoring", cmd_lscpu },
	{ "uptime", "time since boot", cmd_uptime },
	{ "stacks", "each task's stack size and high-water mark", cmd_stacks },
	{ "work", "split A B C | chain D | irqoff MS | sleep MS | copy | fanout | symbols | user | sbi | time PID | rounds PID | stop PID|all", cmd_work },
	{ "profile", "[MS [PID|all [CHAINS]]]: sample for MS ms (1000), hottest chains (8); profile stats", cmd_profile },
#if ARCH_HAS_NET
	{ "net", "network device, counters and drops by reason", cmd_net },
	{ "netload", "sink PORT | stats | stop | send SIZE PPS SECONDS: UDP load test", cmd_netload },
#endif
	{ "kill", "kill PID: ask a task to exit", cmd_kill },
	{ "panic", "crash on purpose (test the panic report)", cmd_panic },
	{ "poweroff", "end the VM (QEMU exit status 33 with isa-debug-exit)", cmd_poweroff },
};

static void cmd_help(int argc, char **argv, struct out *o)
{
	if (!no_args(argc, argv, o))
		return;
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		out_printf(o, "  %-9s %s\n", commands[i].name, commands[i].help);
}

void shell_exec(const char *line, struct out *o)
{
	char buf[SHELL_LINE_MAX + 1], *argv[MAX_ARGS];
	int argc = 0;
	if (strlen(line) > SHELL_LINE_MAX) {
		out_printf(o, "shell: line too long (max %d characters), ignored\n", SHELL_LINE_MAX);
		return;
	}
	strncpy0(buf, line, sizeof(buf));
	for (char *p = buf; *p;) {
		while (*p == ' ' || *p == '\t')
			*p++ = 0;
		if (!*p)
			break;
		if (argc == MAX_ARGS) {
			out_printf(o, "shell: too many arguments (max %d words)\n", MAX_ARGS);
			return;
		}
		argv[argc++] = p;
		while (*p && *p != ' ' && *p != '\t')
			p++;
	}
	if (argc == 0)
		return;
	for (size_t i = 0; i < ARRAY_SIZE(commands); i++)
		if (strcmp(argv[0], commands[i].name) == 0) {
			commands[i].run(argc, argv, o);
			return;
		}
	out_printf(o, "shell: unknown command '%s' (try help)\n", argv[0]);
}

/* Reads one line with echo and backspace. Returns 0, or -1 if it was longer than the max. */
static int read_line(char *buf, size_t size)
{
	size_t n = 0;
	int too_long = 0, prev = 0;
	for (;;) {
		int c = console_getc();
		if (c == '\n' && prev == '\r') {	/* CR LF: the CR already ended the line */
			prev = c;
			continue;
		}
		prev = c;
		if (c == '\r' || c == '\n') {
			console_write("\n", 1);
			buf[n] = 0;
			return too_long ? -1 : 0;
		}
		if (c == 0x08 || c == 0x7f) {		/* backspace / delete */
			if (n > 0 && !too_long) {
				n--;
				console_write("\b \b", 3);
			}
			continue;
		}
		if (c < 0x20 || c > 0x7e)		/* other control bytes are ignored */
			continue;
		if (n + 1 >= size) {			/* keep reading to the end, execute nothing */
			too_long = 1;
			continue;
		}
		buf[n++] = (char)c;
		char ch = (char)c;
		console_write(&ch, 1);
	}
}

static void shell_task(void *arg)
{
	(void)arg;
	char line[SHELL_LINE_MAX + 1];
	console_set_reader(current_task());
	kprintf("serial shell ready; type help for commands\n");
	for (;;) {
		console_write("> ", 2);
		if (read_line(line, sizeof(line)) != 0) {
			kprintf("shell: line too long (max %d characters), ignored\n", SHELL_LINE_MAX);
			continue;
		}
		shell_exec(line, &console_out);
	}
}

void shell_start(void)
{
	if (!task_create("shell", KIND_SHELL, shell_task, 0, 0, 0))
		kprintf("shell: cannot start the shell task\n");
}
