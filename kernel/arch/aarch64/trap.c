/* SPDX-License-Identifier: MIT */
/* trap.c (aarch64): exception dispatch: interrupts by GIC id, everything synchronous a panic. */
#include "trap.h"
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "gic.h"
#include "panic.h"
#include "profiler.h"
#include "sched.h"
#include "stacktrace.h"
#include "timer.h"

uint64_t trap_unexpected;
uint64_t pmu_unclaimed;

static const char *esr_class_name(uint64_t esr)
{
	switch ((esr >> 26) & 0x3f) {
	case 0x00: return "undefined instruction";
	case 0x15: return "svc";
	case 0x18: return "system register access";
	case 0x21: return "instruction abort";
	case 0x22: return "pc alignment fault";
	case 0x25: return "data abort";
	case 0x26: return "sp alignment fault";
	case 0x3c: return "brk";
	default: return "synchronous exception";
	}
}

static const char *kind_name(uint64_t kind)
{
	static const char *names[] = { "sync (SP_EL0)", "irq (SP_EL0)", "fiq (SP_EL0)", "serror (SP_EL0)",
				       "sync", "irq", "fiq", "serror", "sync from EL0", "irq from EL0",
				       "fiq from EL0", "serror from EL0", "sync from AArch32", "irq from AArch32",
				       "fiq from AArch32", "serror from AArch32" };
	return kind < ARRAY_SIZE(names) ? names[kind] : "?";
}

/* The interrupted code had interrupts on: not nested in a handler, not in an irq-off region. */
static int interrupted_with_irqs_on(const struct trapframe *tf)
{
	return !(tf->spsr & PSR_I) && tf->pmr == PMR_OPEN;
}

static void irq(struct trapframe *tf)
{
	uint32_t iar = gic_ack(), id = iar & 0xffffff;
	switch (id) {
	case INTID_SPURIOUS:
		return;
	case INTID_PMU:		/* above the irq-off mask: taken like an NMI, no locks, no switch */
		if (!prof_nmi(tf))
			pmu_unclaimed++;
		gic_eoi(iar);
		return;
	case INTID_STOP:
		gic_eoi(iar);
		if (panicking)
			halt_forever();
		return;
	case INTID_VTIMER:
		timer_rearm();
		sched_tick();
		prof_tick(tf);
		gic_eoi(iar);	/* before a possible switch: the next tick must be deliverable */
		break;
	case INTID_UART:
		console_irq();
		gic_eoi(iar);
		break;
	default:
		trap_unexpected++;
		gic_eoi(iar);
		break;
	}
	if (interrupted_with_irqs_on(tf))
		sched_preempt();
}

void trap(struct trapframe *tf)
{
	if (tf->kind == K_IRQ) {
		irq(tf);
		return;
	}
	panic_trap(tf, tf->kind == K_SYNC ? esr_class_name(tf->esr) : kind_name(tf->kind));
}

void panic_trap(struct trapframe *tf, const char *what)
{
	if (!panic_begin())
		halt_forever();
	struct out *o = &console_out;
	out_printf(o, "\nPANIC: %s (%s, esr 0x%lx, far 0x%lx)\n", what, kind_name(tf->kind), tf->esr, tf->far);
	panic_whoami(o);
	out_printf(o, "pc  %016lx sp  %016lx x29 %016lx x30 %016lx\n", tf->elr, tf->sp, tf->x[29], tf->x[30]);
	out_printf(o, "spsr %08lx pmr %02lx\n", tf->spsr, tf->pmr);
	for (int i = 0; i < 28; i += 4)
		out_printf(o, "x%-2d %016lx x%-2d %016lx x%-2d %016lx x%-2d %016lx\n", i, tf->x[i], i + 1, tf->x[i + 1],
			   i + 2, tf->x[i + 2], i + 3, tf->x[i + 3]);
	out_puts(o, "backtrace:\n");
	backtrace_print_lr(o, tf->elr, tf->x[29], tf->sp, tf->x[30]);
	out_puts(o, "system halted\n");
	halt_forever();
}

int stacktrace_trapframe(const struct trapframe *tf, uint64_t *out, int max)
{
	return stacktrace_interrupted_lr(tf->elr, tf->x[29], tf->sp, tf->x[30], out, max);
}
