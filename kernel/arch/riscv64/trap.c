/* SPDX-License-Identifier: MIT */
/* trap.c (riscv64): trap dispatch: interrupts by scause, `work user`'s ecall, every other exception a panic. */
#include "trap.h"
#include "arch.h"
#include "console.h"
#include "cpu.h"
#include "panic.h"
#include "plic.h"
#include "profiler.h"
#include "sched.h"
#include "stacktrace.h"
#include "timer.h"

uint64_t trap_unexpected;
uint64_t pmu_unclaimed;

/* Privileged spec 1.12, table 4.2: exception codes. */
static const char *exception_name(uint64_t code)
{
	static const char *names[] = { "instruction address misaligned", "instruction access fault",
				       "illegal instruction", "breakpoint", "load address misaligned",
				       "load access fault", "store address misaligned", "store access fault",
				       "ecall from U-mode", "ecall from S-mode", "?", "?", "instruction page fault",
				       "load page fault", "?", "store page fault" };
	return code < ARRAY_SIZE(names) ? names[code] : "exception";
}

/* The interrupted code had interrupts on: not nested in a handler, not in an irq-off region. */
static int interrupted_with_irqs_on(const struct trapframe *tf)
{
	return (tf->sstatus & SSTATUS_SPIE) != 0;
}

static void irq(struct trapframe *tf, uint64_t code)
{
	switch (code) {
	case IRQ_LCOF:		/* counter overflow: masked with the others (arch.h), no locks, no switch */
		if (!prof_nmi(tf))
			pmu_unclaimed++;
		return;
	case IRQ_S_SOFT:
		clear_sip_bits(1ul << IRQ_S_SOFT);
		if (panicking)
			halt_forever();
		return;
	case IRQ_S_TIMER:
		timer_rearm();	/* the next deadline drops STIP */
		sched_tick();
		prof_tick(tf);
		break;
	case IRQ_S_EXT: {
		uint32_t id = plic_claim();
		if (id == PLIC_IRQ_UART)
			console_irq();
		else if (id)
			trap_unexpected++;
		if (id)
			plic_complete(id);
		break;
	}
	default:
		trap_unexpected++;
		break;
	}
	if (interrupted_with_irqs_on(tf))
		sched_preempt();
}

void trap(struct trapframe *tf)
{
	if (tf->scause & SCAUSE_INTR) {
		irq(tf, tf->scause & ~SCAUSE_INTR);
		return;
	}
	if (tf->scause == EXC_ECALL_U)	/* `work user` was stopped (user.S) */
		task_exit();
	panic_trap(tf, exception_name(tf->scause));
}

void panic_trap(struct trapframe *tf, const char *what)
{
	if (!panic_begin())
		halt_forever();
	struct out *o = &console_out;
	out_printf(o, "\nPANIC: %s (scause 0x%lx, stval 0x%lx)\n", what, tf->scause, tf->stval);
	panic_whoami(o);
	out_printf(o, "pc  %016lx sp  %016lx s0  %016lx ra  %016lx\n", tf->sepc, tf->x[2], tf->x[8], tf->x[1]);
	out_printf(o, "sstatus %016lx\n", tf->sstatus);
	for (int i = 4; i < 32; i += 4)
		out_printf(o, "x%-2d %016lx x%-2d %016lx x%-2d %016lx x%-2d %016lx\n", i, tf->x[i], i + 1, tf->x[i + 1],
			   i + 2, tf->x[i + 2], i + 3, tf->x[i + 3]);
	out_puts(o, "backtrace:\n");
	backtrace_print_lr(o, tf->sepc, tf->x[8], tf->x[2], tf->x[1]);
	out_puts(o, "system halted\n");
	halt_forever();
}

int stacktrace_trapframe(const struct trapframe *tf, uint64_t *out, int max)
{
	return stacktrace_interrupted_lr(tf->sepc, tf->x[8], tf->x[2], tf->x[1], out, max);
}
