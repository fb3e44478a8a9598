/* SPDX-License-Identifier: MIT */
/* cmd_count.c: `gdbsample count FUNC...` -- calls counted at function-entry breakpoints (gdbstub Z0), removed on every way out. */
#include "bpcount.h"
#include "bpoint.h"
#include "clock.h"
#include "cli.h"
#include "cmds.h"
#include "err.h"
#include "output.h"
#include "record.h"
#include "session.h"
#include "summary.h"
#include "textnum.h"
#include <stdlib.h>

/*
 * One breakpoint per function entry. A hit is a stop reply with SIGTRAP from the vCPU at that
 * pc: counted, then stepped over -- the breakpoint out, that vCPU alone single-stepped (vCont;s:,
 * the others stay stopped), the breakpoint in again -- and `c`. Without the step, `c` stops again
 * at once at the same pc (seen on QEMU 7.2). While the VM runs, gdbsample looks every HEARTBEAT_MS
 * (a 0x03 when nothing stopped it): the pause watchdog then times every stop, a hit's included,
 * and a signal or -d ends the run in time. The guard knows the breakpoints (guard_breakpoints) and
 * removes them whenever it resumes the VM: gdbsample killed, or held up past --max-pause.
 */
#define HEARTBEAT_MS 250

struct counting {
	struct session ss;
	struct bpcount bc;
	int kind;                 /* the Z0 kind: the breakpoint instruction's length */
	uint64_t seen_removed;    /* the guard's bp_removed when we last inserted */
	int64_t stopped_ns;       /* the VM stood still for us (stop reply to resume) */
	int64_t stop_t;           /* when the last stop reply came */
	int64_t hit_ns;           /* ...of which handling hits */
	uint64_t heartbeats;      /* stops of ours with nothing hit */
	uint64_t rescued;         /* the guard resumed the VM (and took the breakpoints out) */
	struct bp_stepper step;   /* how hits are stepped over, and the steps that stalled */
	int announced;            /* "counting calls ..." said (once, when they first went in) */
};

static int fail_g(struct counting *c)
{
	ERR_SET(&c->ss, c->ss.g.err ? c->ss.g.err : ERR_PROTO, "%s", c->ss.g.errstr);
	return -1;
}

/* Insert every breakpoint (the guard told first: it removes what may be in). VM stopped. */
static int arm(struct counting *c)
{
	uint64_t a[BPC_MAX];
	for (int i = 0; i < c->bc.n; i++) a[i] = c->bc.fn[i].addr;
	c->seen_removed = __atomic_load_n(&c->ss.guard.sh->bp_removed, __ATOMIC_SEQ_CST);
	guard_breakpoints(&c->ss.guard, a, c->bc.n, c->kind);
	for (int i = 0; i < c->bc.n; i++)
		if (bp_request(&c->ss, 1, a[i], c->kind) < 0) return -1;
	bpc_set_armed(&c->bc, 1, now_ns());
	if (!c->announced++ && !c->ss.o->quiet) { /* as perf's "Hit Ctrl-C to end": they are in from here */
		fprintf(stderr, "gdbsample: counting calls of %d function%s%s\n", c->bc.n, c->bc.n == 1 ? "" : "s",
			c->ss.o->duration > 0 ? "" : "; Ctrl-C to end");
		fflush(stderr);
	}
	return 0;
}

/* Remove every breakpoint, then tell the guard there are none. VM stopped. */
static int disarm(struct counting *c)
{
	for (int i = 0; i < c->bc.n; i++)
		if (bp_request(&c->ss, 0, c->bc.fn[i].addr, c->kind) < 0) return -1;
	guard_breakpoints(&c->ss.guard, NULL, 0, c->kind);
	bpc_set_armed(&c->bc, 0, now_ns());
	return 0;
}

/* A SIGTRAP stop: which vCPU, at which pc; counted and stepped over if it is ours. 0, -1. */
static int on_trap(struct counting *c, const struct gdb_stopinfo *si)
{
	struct gdb *g = &c->ss.g;
	int cpu;
	uint64_t pc;
	int r = bp_trap_pc(g, si, &cpu, &pc);
	if (r == -1) return fail_g(c);
	int i = r == 1 && c->bc.armed ? bpc_find(&c->bc, pc) : -1;
	if (i < 0) {
		c->bc.foreign++; /* a step's stop, or a breakpoint not ours: `c` goes on */
		return 0;
	}
	if (bpc_hit(&c->bc, i, now_ns())) return disarm(c); /* the cap: out till the window ends */
	return bp_step_over(&c->ss, &c->step, cpu, pc, c->kind);
}

/* The watchdog resumed the VM while we were held up, and took the breakpoints out: put the
 * stream in order, stop the VM again, note them out. 0, -1. */
static int after_rescue(struct counting *c)
{
	if (session_recover(&c->ss) < 0) return fail_g(c);
	c->rescued++;
	guard_enter(&c->ss.guard);
	if (gdb_stop(&c->ss.g) < 0 || gdb_sync(&c->ss.g) < 0) return fail_g(c); /* the z0s' OKs dropped too */
	guard_breakpoints(&c->ss.guard, NULL, 0, c->kind);
	bpc_set_armed(&c->bc, 0, now_ns());
	return 0;
}

/* Until -d, a signal, or a stop someone else made: 0 (ss->held set for the last), -1. */
static int run(struct counting *c, int64_t end)
{
	struct gdb *g = &c->ss.g;
	for (;;) {
		int64_t now = now_ns();
		if (record_stop || now >= end) return 0;
		if (__atomic_load_n(&c->ss.guard.sh->bp_removed, __ATOMIC_SEQ_CST) != c->seen_removed && c->bc.armed) {
			c->rescued++; /* a rescue we were not told of by a write: they are out */
			c->seen_removed = __atomic_load_n(&c->ss.guard.sh->bp_removed, __ATOMIC_SEQ_CST);
			bpc_set_armed(&c->bc, 0, now);
		}
		int rc = bpc_due(&c->bc, now) ? arm(c) : 0;
		int64_t stop_at = end;
		if (!c->bc.armed && bpc_window_end(&c->bc) < stop_at) stop_at = bpc_window_end(&c->bc);
		int wait_ms = (int)((stop_at - now) / 1000000) + 1;
		if (wait_ms > HEARTBEAT_MS) wait_ms = HEARTBEAT_MS;
		struct gdb_stopinfo si;
		if (rc == 0) {
			guard_enter(&c->ss.guard); /* from here the VM may stop at a hit: the watchdog times it */
			c->stopped_ns += now_ns() - c->stop_t;
			rc = gdb_cont(g) < 0 ? -1 : gdb_wait_stop(g, wait_ms, &si);
			if (rc == 1) { /* nothing stopped it: our look, a 0x03 (the stop reply may be a hit's) */
				rc = gdb_stop(g) < 0 || gdb_parse_stop(g->dec.pkt, g->dec.len, &si) < 0 ? -1 : 0;
				if (rc == 0 && si.sig != 5) c->heartbeats++;
			} else if (rc == 0 && si.kind != 'W' && si.kind != 'X' && si.sig != 5) {
				/* a stop we did not ask for: a monitor `stop`, a shutdown, an I/O error */
				c->ss.held = 1;
				c->ss.held_why = gdb_stop_reason(si.sig);
				c->ss.held_episodes++;
				session_warn(&c->ss, "the VM was %s: counting ends, and it is left stopped", c->ss.held_why);
				return 0;
			}
		}
		if (rc < 0) {
			if (g->err == ERR_RESCUED) {
				if (after_rescue(c) < 0) return -1;
				continue;
			}
			if (!g->err) ERR_SET(g, ERR_PROTO, "the gdbstub's stop reply could not be read");
			return fail_g(c);
		}
		if (si.kind == 'W' || si.kind == 'X') {
			ERR_SET(&c->ss, ERR_EOF, "the guest %s while counting (%s %d)", si.kind == 'W' ? "exited" : "was killed",
				si.kind == 'W' ? "status" : "signal", si.sig);
			return -1;
		}
		int64_t t = c->stop_t = now_ns();
		if (si.sig == 5 && on_trap(c, &si) < 0) {
			if (g->err == ERR_RESCUED) {
				if (after_rescue(c) < 0) return -1;
				continue;
			}
			return -1;
		}
		if (si.sig == 5) c->hit_ns += now_ns() - t;
	}
}

static void summarize(const struct counting *c, struct summary *t, int64_t elapsed, int64_t armed)
{
	const struct bpcount *b = &c->bc;
	char line[512];
	snprintf(line, sizeof line, "gdbsample: %llu breakpoint hit%s in %.2f s, the breakpoints in for %.2f s",
		 (unsigned long long)b->hits, b->hits == 1 ? "" : "s", elapsed / 1e9, armed / 1e9);
	summary_text(t, line);
	if (b->capped) {
		snprintf(line, sizeof line, " (--max-hits %llu took them out in %llu second%s: rates are over the time "
			 "they were in)", (unsigned long long)b->cap, (unsigned long long)b->capped, b->capped == 1 ? "" : "s");
		summary_text(t, line);
	}
	summary_text(t, "\n");
	snprintf(line, sizeof line, "gdbsample: the guest stood still %.2f%% of the time, %.0f us a hit; a page "
		 "holding a breakpoint runs slower under TCG besides (one instruction a block)\n",
		 elapsed > 0 ? 100.0 * (double)c->stopped_ns / (double)elapsed : 0.0,
		 b->hits ? (double)c->hit_ns / 1e3 / (double)b->hits : 0.0);
	summary_text(t, line);
	if (b->foreign) {
		snprintf(line, sizeof line, "gdbsample: %llu SIGTRAP stop%s at no breakpoint of ours\n",
			 (unsigned long long)b->foreign, b->foreign == 1 ? "" : "s");
		summary_text(t, line);
	}
	if (c->rescued) {
		snprintf(line, sizeof line, "gdbsample: the pause watchdog resumed the guest %llu time%s, the breakpoints "
			 "out each time until gdbsample went on\n", (unsigned long long)c->rescued, c->rescued == 1 ? "" : "s");
		summary_text(t, line);
	}
	summary_u64(t, "count_functions", NULL, (uint64_t)b->n);
	summary_u64(t, "count_hits", NULL, b->hits);
	summary_real(t, "count_seconds", NULL, 3, elapsed / 1e9);
	summary_real(t, "count_armed_seconds", NULL, 3, armed / 1e9);
	summary_u64(t, "count_max_hits", NULL, b->cap);
	summary_u64(t, "count_capped_seconds", NULL, b->capped);
	summary_u64(t, "count_armings", NULL, b->armings);
	summary_real(t, "count_stopped_share", NULL, 4, elapsed > 0 ? (double)c->stopped_ns / (double)elapsed : 0);
	summary_real(t, "count_hit_cost_us", NULL, 1, b->hits ? (double)c->hit_ns / 1e3 / (double)b->hits : 0);
	summary_u64(t, "count_heartbeats", NULL, c->heartbeats);
	summary_u64(t, "count_foreign_stops", NULL, b->foreign);
	summary_u64(t, "count_rescues", NULL, c->rescued);
	summary_u64(t, "count_step_stalls", NULL, c->step.stalls);
	summary_str(t, "count_step", NULL, c->step.mode == BP_STEP_OVER ? "over" : c->step.mode == BP_STEP_REMOVE ? "remove" : "none");
}

int cmd_count(const struct opts *o)
{
	static struct counting c;
	static struct output so;
	static struct summary sum;
	static char text[1 << 16];
	int err = 0;
	record_signals();
	if (session_open(&c.ss, o) < 0) { /* connecting stops the VM */
		fprintf(stderr, "gdbsample: %s\n", c.ss.errstr);
		session_close(&c.ss);
		return c.ss.err;
	}
	if (c.ss.held) {
		fprintf(stderr, "gdbsample: the VM is %s: count resumes nobody's pause -- `cont` it first\n",
			c.ss.held_why ? c.ss.held_why : "stopped by someone else");
		session_close(&c.ss);
		return ERR_USAGE;
	}
	c.kind = bp_kind(&c.ss);
	int64_t t0 = now_ns();
	bpc_init(&c.bc, o->max_hits, t0);
	for (int i = 0; i < o->nfuncs && !err; i++) {
		uint64_t a;
		if (bp_resolve(&c.ss, "count", o->funcs[i], &a) < 0) err = 1;
		else if (bpc_add(&c.bc, o->funcs[i], a) == -2) {
			ERR_SET(&c.ss, ERR_USAGE, "count: '%.60s' is at the address of a function named before it", o->funcs[i]);
			err = 1;
		}
	}
	guard_enter(&c.ss.guard);
	if (!err && c.ss.g.running && gdb_stop(&c.ss.g) < 0) err = 1, fail_g(&c);
	c.stop_t = now_ns();
	int64_t end = o->duration > 0 ? t0 + (int64_t)(o->duration * 1e9) : INT64_MAX;
	if (!err && run(&c, end) < 0) err = 1;
	/* Every way out: the breakpoints removed (the VM is stopped here unless held or lost). */
	if (c.bc.armed) { /* a held VM is stopped too: z0 does not resume it */
		int r = c.ss.g.running && gdb_stop(&c.ss.g) < 0 ? -1 : disarm(&c);
		/* held up past --max-pause on the way out: the guard resumed the VM and took them out */
		if (r < 0 && c.ss.g.err == ERR_RESCUED) {
			c.ss.err = 0;
			r = after_rescue(&c);
		}
		if (r < 0 && !err) err = 1;
	}
	int64_t elapsed = now_ns() - t0, armed = bpc_armed_ns(&c.bc, now_ns());
	if (!c.bc.armed) guard_breakpoints(&c.ss.guard, NULL, 0, c.kind);
	int code = err ? c.ss.err : 0;
	if (err) fprintf(stderr, "gdbsample: %s\n", c.ss.errstr);
	if (session_close(&c.ss) < 0) { /* D;1 resumes it (a held VM is left so) */
		fprintf(stderr, "gdbsample: %s\n", c.ss.errstr);
		if (!code) code = c.ss.err ? c.ss.err : ERR_SYS;
	}
	if (code && c.bc.hits == 0) return code;
	/* The result, once it is whole. */
	text[0] = 0;
	bpc_table(&c.bc, armed, text, sizeof text);
	if (output_open(&so, NULL, NULL, 0) == 0) {
		fputs(text, so.f);
		if (output_commit(&so) < 0) {
			fprintf(stderr, "gdbsample: %s\n", so.errstr);
			if (!code) code = ERR_SYS;
		}
	}
	if (cli_summary_wanted(o)) {
		summary_init(&sum);
		summarize(&c, &sum, elapsed, armed);
		text[0] = 0;
		if (o->summary_format == SUMFMT_JSON) summary_json(&sum, text, sizeof text);
		else if (o->summary_format == SUMFMT_KV) summary_kv(&sum, text, sizeof text);
		else summary_human(&sum, text, sizeof text);
		fputs(text, stderr);
	}
	return code;
}
