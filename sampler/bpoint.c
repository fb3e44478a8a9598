/* SPDX-License-Identifier: MIT */
/* bpoint.c: function-entry breakpoints through the gdbstub -- found by name, put in and out, stepped over (count, record --phase). */
#include "bpoint.h"
#include "textnum.h"
#include <stdio.h>
#include <string.h>

static int fail_g(struct session *ss)
{
	ERR_SET(ss, ss->g.err ? ss->g.err : ERR_PROTO, "%s", ss->g.errstr);
	return -1;
}

int bp_kind(const struct session *ss)
{
	int arch = ss->g.layout.arch ? ss->g.layout.arch->id : ARCH_X86_64;
	return arch == ARCH_X86_64 ? 1 : 4;
}

int bp_resolve(struct session *ss, const char *who, const char *func, uint64_t *addr)
{
	const struct symtab *t = session_syms(ss);
	if (func[0] == '0' && (func[1] == 'x' || func[1] == 'X')) {
		if (!textnum_hex(func + 2, strlen(func + 2), UINT64_MAX, addr)) return 0;
		ERR_SET(ss, ERR_USAGE, "%s: '%.60s' is not a hex address", who, func);
		return -1;
	}
	int found = -1;
	for (size_t i = 0; t && i < t->n; i++) {
		char shown[256];
		syms_name(&t->syms[i], shown, sizeof shown);
		if (!strcmp(t->syms[i].name, func) || !strcmp(shown, func)) {
			if (found < 0 || (t->syms[found].mod && !t->syms[i].mod)) found = (int)i; /* the core's first */
		}
	}
	if (found >= 0) {
		*addr = t->syms[found].addr;
		return 0;
	}
	ERR_SET(ss, ERR_USAGE, "%s: no function '%.60s' in the kernel's symbols%s", who, func,
		t ? "" : " (give the image with -e)");
	return -1;
}

int bp_request(struct session *ss, int insert, uint64_t addr, int kind)
{
	char req[64];
	snprintf(req, sizeof req, "%c0,%llx,%x", insert ? 'Z' : 'z', (unsigned long long)addr, kind);
	if (gdb_request(&ss->g, req, gdb_req_ms(&ss->g)) < 0) return fail_g(ss);
	const char *r = ss->g.dec.pkt;
	if (ss->g.dec.len == 2 && r[0] == 'O' && r[1] == 'K') return 0;
	if (!insert) return 0; /* gone already (the guard, or `?`): what we wanted */
	ERR_SET(ss, ERR_PROTO, "the gdbstub refused a breakpoint at 0x%llx (%.*s)", (unsigned long long)addr,
		ss->g.dec.len ? (int)ss->g.dec.len : 18, ss->g.dec.len ? r : "no breakpoints here");
	return -1;
}

int bp_cpu_of_tid(const struct gdb *g, int tid)
{
	for (int i = 0; i < g->ncpu; i++)
		if (g->tids[i] == tid) return i;
	return -1;
}

int bp_trap_pc(struct gdb *g, const struct gdb_stopinfo *si, int *cpu, uint64_t *pc)
{
	*cpu = si->tid >= 0 ? bp_cpu_of_tid(g, si->tid) : 0;
	if (*cpu < 0 || !g->layout.pc) return 0;
	int r = gdb_reg(g, *cpu, g->layout.pc->num, pc);
	return r == -1 ? -1 : r == 0;
}

/* QEMU's TCG lets a single step run over a breakpoint (its single-step overrides them): one step,
 * the breakpoint left in. The first hit checks it -- the step's pc must have moved -- and a stub
 * that traps again there is stepped over the classic way, the breakpoint out. Every step is
 * checked so: one that came back with the pc unmoved (seen beside hogs) would make the `c` trap at
 * the same call again and count it twice -- it is stepped again (counted), the breakpoint out from
 * the second try on. */
int bp_step_over(struct session *ss, struct bp_stepper *st, int cpu, uint64_t pc, int kind)
{
	struct gdb *g = &ss->g;
	for (int tries = 0;; tries++) {
		struct gdb_stopinfo si;
		uint64_t after;
		int out = st->mode == BP_STEP_REMOVE || tries > 0;
		if (out && bp_request(ss, 0, pc, kind) < 0) return -1;
		if (gdb_step(g, cpu, &si) < 0) return fail_g(ss);
		if (gdb_reg(g, cpu, g->layout.pc->num, &after) < 0) return fail_g(ss);
		if (out && bp_request(ss, 1, pc, kind) < 0) return -1;
		if (after != pc) {
			if (st->mode == BP_STEP_UNKNOWN) st->mode = BP_STEP_OVER;
			return 0;
		}
		if (st->mode == BP_STEP_UNKNOWN) st->mode = BP_STEP_REMOVE; /* stepped onto its own breakpoint */
		else st->stalls++;
		if (tries == 3) {
			ERR_SET(ss, ERR_PROTO, "vCPU %d did not move off the breakpoint at 0x%llx in 4 single steps", cpu,
				(unsigned long long)pc);
			return -1;
		}
	}
}
