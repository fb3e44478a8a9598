/* SPDX-License-Identifier: MIT */
/* bpoint.h: function-entry breakpoints through the gdbstub -- found by name, put in and out, stepped over (count, record --phase). */
#ifndef BPOINT_H
#define BPOINT_H
#include <stdint.h>
#include "session.h"

/* How a hit is stepped over: found at the first hit (bp_step_over). */
enum { BP_STEP_UNKNOWN, BP_STEP_OVER, BP_STEP_REMOVE };

struct bp_stepper {
	int mode;        /* BP_STEP_*: QEMU's TCG single-steps over a breakpoint, or traps again on it */
	uint64_t stalls; /* steps that came back with the pc unmoved: stepped again */
};

/* The Z0 kind of the guest's architecture: the breakpoint instruction's length (int3: 1; brk,
 * ebreak: 4 -- QEMU's TCG breakpoints ignore it). */
int bp_kind(const struct session *ss);
/* FUNC as an address: a symbol of the kernel's (its plain name, or perf's "name [module]"; the
 * core kernel's first), or 0x-hex. who names the asker in the message ("count", "--phase").
 * 0, -1 (ss->err: ERR_USAGE). */
int bp_resolve(struct session *ss, const char *who, const char *func, uint64_t *addr);
/* One Z0 (insert) or z0 (remove) request; VM stopped. A remove the stub answers with anything but
 * OK is no error (gone already: the guard, or `?`). 0, -1 (ss->err). */
int bp_request(struct session *ss, int insert, uint64_t addr, int kind);
/* The vCPU index of a stop reply's thread id, or -1. */
int bp_cpu_of_tid(const struct gdb *g, int tid);
/* A SIGTRAP stop reply's vCPU (*cpu) and its pc (*pc, read with `p`): 1, 0 when it names no vCPU
 * of ours or the pc does not read (a stop not ours to judge), -1 (the connection failed: g->err). */
int bp_trap_pc(struct gdb *g, const struct gdb_stopinfo *si, int *cpu, uint64_t *pc);
/* vCPU cpu stopped on the breakpoint at pc: single-step it alone past it (the others stay
 * stopped), checking that the pc moved -- a step that left it on the breakpoint is done again, the
 * breakpoint out, up to 4 tries. The breakpoint is in again afterwards. 0, -1 (ss->err; ERR_RESCUED
 * in ss->g.err when the pause watchdog took over). */
int bp_step_over(struct session *ss, struct bp_stepper *st, int cpu, uint64_t pc, int kind);

#endif
