/* SPDX-License-Identifier: MIT */
/* panic.c: report (message, registers, CPU, task, symbolized backtrace) and stop all CPUs. */
#include "panic.h"
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "sched.h"
#include "stacktrace.h"

volatile int panicking;

/* Claims the panic for this CPU and stops the others; returns 0 if another CPU has it. */
int panic_begin(void)
{
	irq_disable();
	if (__atomic_exchange_n(&panicking, 1, __ATOMIC_SEQ_CST))
		return 0;
	console_panic_mode();		/* the console lock may be held by a stopped CPU */
	arch_stop_others();		/* their NMI (or SGI) handler sees `panicking` and halts */
	return 1;
}

void panic_whoami(struct out *o)
{
	struct cpu *c = mycpu();
	struct task *t = c ? c->current : 0;
	if (t)
		out_printf(o, "cpu %d, task pid %d (%s)\n", c->id, t->pid, t->name);
	else
		out_printf(o, "cpu %d, no task\n", c ? c->id : -1);
}

void panic(const char *fmt, ...)
{
	if (!panic_begin())
		halt_forever();
	struct out *o = &console_out;
	va_list ap;
	va_start(ap, fmt);
	out_puts(o, "\nPANIC: ");
	out_vprintf(o, fmt, ap);
	va_end(ap);
	out_puts(o, "\n");
	panic_whoami(o);
	out_puts(o, "backtrace:\n");
	backtrace_print(o, (uint64_t)panic, read_fp(), read_sp());	/* #0 panic, #1 its caller */
	out_puts(o, "system halted\n");
	halt_forever();
}
