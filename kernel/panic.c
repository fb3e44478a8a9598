/* panic.c: report (message, registers, CPU, task, symbolized backtrace) and stop all CPUs. */
#include "panic.h"
#include "apic.h"
#include "console.h"
#include "cpu.h"
#include "sched.h"
#include "stacktrace.h"
#include "trap.h"
#include "x86.h"

volatile int panicking;

/* Claims the panic for this CPU and stops the others; returns 0 if another CPU has it. */
static int panic_begin(void)
{
	cli();
	if (__atomic_exchange_n(&panicking, 1, __ATOMIC_SEQ_CST))
		return 0;
	console_panic_mode();		/* the console lock may be held by a stopped CPU */
	lapic_nmi_others();		/* their NMI handler sees `panicking` and halts */
	return 1;
}

static void panic_whoami(struct out *o)
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
	backtrace_print(o, (uint64_t)panic, read_rbp(), read_rsp());	/* #0 panic, #1 its caller */
	out_puts(o, "system halted\n");
	halt_forever();
}

void panic_trap(struct trapframe *tf, const char *what)
{
	if (!panic_begin())
		halt_forever();
	struct out *o = &console_out;
	out_printf(o, "\nPANIC: %s (vector %lu, error code 0x%lx)\n", what, tf->vector, tf->error);
	panic_whoami(o);
	out_printf(o, "rip %016lx rsp %016lx rbp %016lx rflags %08lx\n", tf->rip, tf->rsp, tf->rbp, tf->rflags);
	out_printf(o, "rax %016lx rbx %016lx rcx %016lx rdx %016lx\n", tf->rax, tf->rbx, tf->rcx, tf->rdx);
	out_printf(o, "rsi %016lx rdi %016lx r8  %016lx r9  %016lx\n", tf->rsi, tf->rdi, tf->r8, tf->r9);
	out_printf(o, "r10 %016lx r11 %016lx r12 %016lx r13 %016lx\n", tf->r10, tf->r11, tf->r12, tf->r13);
	out_printf(o, "r14 %016lx r15 %016lx cr2 %016lx cs %lx ss %lx\n", tf->r14, tf->r15, read_cr2(), tf->cs, tf->ss);
	out_puts(o, "backtrace:\n");
	backtrace_print(o, tf->rip, tf->rbp, tf->rsp);
	out_puts(o, "system halted\n");
	halt_forever();
}
