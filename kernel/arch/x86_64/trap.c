/* SPDX-License-Identifier: MIT */
/* trap.c: dispatch of exceptions (panic), the timer tick, device interrupts and NMIs. */
#include "trap.h"
#include "apic.h"
#include "console.h"
#include "cpu.h"
#include "panic.h"
#include "stacktrace.h"
#include "profiler.h"
#include "sched.h"
#include "virtio_net.h"
#include "x86.h"

uint64_t trap_unexpected;

static const char *exception_names[32] = {
	"divide error", "debug", "NMI", "breakpoint", "overflow", "bound range",
	"invalid opcode", "device not available", "double fault", "coprocessor overrun",
	"invalid TSS", "segment not present", "stack fault", "general protection",
	"page fault", "reserved", "x87 error", "alignment check", "machine check",
	"SIMD error", "virtualization", "control protection", "reserved", "reserved",
	"reserved", "reserved", "reserved", "reserved", "hypervisor injection",
	"VMM communication", "security", "reserved",
};

const char *trap_name(uint64_t vector)
{
	if (vector < 32)
		return exception_names[vector];
	if (vector == T_TIMER)
		return "timer";
	if (vector == T_COM1)
		return "com1";
	return "interrupt";
}

struct extable_entry { uint64_t insn, fixup; };
extern const struct extable_entry __extable_start[], __extable_end[];

/* A #GP at an instruction listed in .extable resumes at its fixup (msr_safe.S). */
static int extable_fixup(struct trapframe *tf)
{
	for (const struct extable_entry *e = __extable_start; e < __extable_end; e++)
		if (e->insn == tf->rip) {
			tf->rip = e->fixup;
			return 1;
		}
	return 0;
}

static void nmi(struct trapframe *tf)
{
	if (panicking)		/* another CPU panicked and stopped us */
		halt_forever();
	if (prof_nmi(tf))	/* our performance counter's overflow: one sample */
		return;
	panic_trap(tf, "NMI that no source claims");
}

void trap(struct trapframe *tf)
{
	switch (tf->vector) {
	case T_NMI:
		nmi(tf);
		return;
	case T_TIMER:
		sched_tick();
		prof_tick(tf);
		lapic_eoi();	/* before a possible switch: the next tick must be deliverable */
		break;
	case T_COM1:
		console_irq();
		lapic_eoi();
		break;
	case T_NET:
		virtio_net_irq();	/* reads the ISR first: the level-triggered line drops */
		lapic_eoi();
		break;
	case T_SPURIOUS:
		return;		/* no EOI for the spurious vector (SDM vol. 3A 11.9) */
	case T_GP:
		if (extable_fixup(tf))
			return;
		panic_trap(tf, trap_name(tf->vector));
	default:
		if (tf->vector < 32)
			panic_trap(tf, trap_name(tf->vector));
		trap_unexpected++;
		lapic_eoi();
		break;
	}
	/* Only from interrupts taken with interrupts enabled, i.e. not nested in a handler. */
	if (tf->rflags & RFLAGS_IF)
		sched_preempt();
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

int stacktrace_trapframe(const struct trapframe *tf, uint64_t *out, int max)
{
	return stacktrace_interrupted(tf->rip, tf->rbp, tf->rsp, out, max);
}
