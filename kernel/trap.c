/* trap.c: dispatch of exceptions (panic), the timer tick, device interrupts and NMIs. */
#include "trap.h"
#include "apic.h"
#include "console.h"
#include "cpu.h"
#include "panic.h"
#include "sched.h"
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

static void nmi(struct trapframe *tf)
{
	if (panicking)		/* another CPU panicked and stopped us */
		halt_forever();
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
		lapic_eoi();	/* before a possible switch: the next tick must be deliverable */
		break;
	case T_COM1:
		console_irq();
		lapic_eoi();
		break;
	case T_SPURIOUS:
		return;		/* no EOI for the spurious vector (SDM vol. 3A 11.9) */
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
