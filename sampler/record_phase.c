/* SPDX-License-Identifier: MIT */
/* record_phase.c: record --phase -- samples only while a phase is open, its bounds kept at BEGIN's and END's entry breakpoints. */
#include "bpcount.h"
#include "bpoint.h"
#include "clock.h"
#include "phase.h"
#include "record.h"

/*
 * The VM runs with one breakpoint in: BEGIN's while the phase is closed, END's while it is open --
 * the other could not change the state, and under TCG each breakpoint stops the VM at every call
 * and slows the code on its page (one instruction a block): BEGIN's left in while open made a
 * split task's in-phase profile 110:194:78 where 5:3:2 was true. A hit is a stop reply with
 * SIGTRAP from the vCPU at it: the phase opens or closes (phase.c), the breakpoints are swapped --
 * so the vCPU needs no single step past the one it stopped on -- and `c`. While an occurrence is open (the one wanted), a round is due at each
 * deadline of -r: gdbsample stops the VM with 0x03 *on its own*, then reads it through
 * session_sample, which finds it stopped and resumes it. That costs a round trip more than
 * record's rounds, whose stop travels with the reads; it is what lets a hit that races the 0x03 be
 * seen for what it is (its T05 is the stop reply) rather than read past and resumed, to trap again.
 * A vCPU the round finds exactly on BEGIN or END is on a bound, neither in nor out: when our stop
 * and its hit cross, QEMU reports only the stop, and the hit comes again once it runs (seen on
 * 7.2: 11 % of a split task's in-phase samples at split_b+0 before this). Left out, counted.
 * When no round is due, gdbsample looks every HEARTBEAT_MS (a 0x03 when nothing stopped it), as
 * count does: the pause watchdog then times every stop, a hit's included, and a signal or -d ends
 * the run in time. Invariant at the top of the loop: the VM is stopped, by us.
 */
#define HEARTBEAT_MS 250
#define SLICE_MS 100 /* record_stop is looked at this often while waiting */

struct phasing {
	struct session *ss;
	struct phase *ph;
	struct pace *p;
	struct bpcount cap;     /* the --max-hits window; its two functions are BEGIN and END */
	int kind;               /* the Z0 kind */
	uint64_t seen_removed;  /* the guard's bp_removed when we last inserted */
	int64_t start;          /* the run's start: the samples' and the bounds' clock */
	uint64_t in;            /* the breakpoint in (BEGIN's or END's), 0 none */
};

static int fail_g(struct session *ss)
{
	ERR_SET(ss, ss->g.err ? ss->g.err : ERR_PROTO, "%s", ss->g.errstr);
	return -1;
}

/* The breakpoint the phase's state needs in -- BEGIN's while closed, END's while open -- and the
 * other out; the guard told first (it removes what may be in). VM stopped. */
static int arm(struct phasing *x)
{
	uint64_t want = x->ph->open ? x->ph->end : x->ph->begin;
	if (x->in == want) return 0;
	if (x->in && bp_request(x->ss, 0, x->in, x->kind) < 0) return -1;
	uint64_t both[2] = { want, x->in };
	x->seen_removed = __atomic_load_n(&x->ss->guard.sh->bp_removed, __ATOMIC_SEQ_CST);
	guard_breakpoints(&x->ss->guard, both, x->in ? 2 : 1, x->kind); /* the old one may still be in */
	if (bp_request(x->ss, 1, want, x->kind) < 0) return -1;
	guard_breakpoints(&x->ss->guard, &want, 1, x->kind);
	if (!x->in) bpc_set_armed(&x->cap, 1, pace_now());
	x->in = want;
	return 0;
}

/* None in, then the guard told there are none. VM stopped. */
static int disarm(struct phasing *x)
{
	if (x->in && bp_request(x->ss, 0, x->in, x->kind) < 0) return -1;
	guard_breakpoints(&x->ss->guard, NULL, 0, x->kind);
	bpc_set_armed(&x->cap, 0, pace_now());
	x->in = 0;
	return 0;
}

/* The watchdog resumed the VM while we were held up and took the breakpoints out: the stream put
 * in order, the VM stopped again, the breakpoints noted out. 0, -1. */
static int after_rescue(struct phasing *x, int recovered)
{
	struct session *ss = x->ss;
	for (int tries = 0;; tries++) { /* a starved host may be held up again on the way: 3 tries */
		if (!recovered && session_recover(ss) < 0) return fail_g(ss);
		x->ph->cost.rescues++;
		guard_enter(&ss->guard);
		if (gdb_stop(&ss->g) == 0 && gdb_sync(&ss->g) == 0) break;
		if (ss->g.err != ERR_RESCUED || tries == 2) return fail_g(ss);
		recovered = 0;
	}
	guard_breakpoints(&ss->guard, NULL, 0, x->kind);
	bpc_set_armed(&x->cap, 0, pace_now());
	x->in = 0;
	return 0;
}

/* After a failed request: if the watchdog took over meanwhile (the VM resumed, the breakpoints
 * out), recovered from as after_rescue: 1 (the loop goes on, *stop_t the new stop); 0 another
 * failure; -1 the recovery failed. */
static int rescued(struct phasing *x, int64_t *stop_t)
{
	if (x->ss->g.err != ERR_RESCUED) return 0;
	x->ss->err = 0;
	int r = after_rescue(x, 0);
	*stop_t = pace_now();
	return r < 0 ? -1 : 1;
}

/* The VM runs: wait for a stop reply until wake_ns (in slices, looking at record_stop). 0 stopped
 * (*si), 1 none came (the VM runs on), -1 (ss->g.err). */
static int wait_stop(struct gdb *g, int64_t wake_ns, struct gdb_stopinfo *si)
{
	for (;;) {
		int64_t now = pace_now();
		if (record_stop || now >= wake_ns) return 1;
		int64_t left_ms = (wake_ns - now) / 1000000 + 1;
		if (left_ms > SLICE_MS) left_ms = SLICE_MS;
		long long base = g->sent_ms ? g->sent_ms : now_ms(); /* gdb_next counts from the last write */
		g->late_read = 0;
		int r = gdb_wait_stop(g, (int)(now_ms() + left_ms - base), si);
		if (r != 1) return r;
	}
}

/* A SIGTRAP stop: which vCPU, at which pc; a bound kept if it is ours, and the breakpoints
 * swapped. 0, 1 (a hit passed --max-hits: the run ends), -1. */
static int on_trap(struct phasing *x, const struct gdb_stopinfo *si)
{
	struct session *ss = x->ss;
	struct gdb *g = &ss->g;
	struct phase *ph = x->ph;
	int64_t t = pace_now();
	int cpu;
	uint64_t pc;
	int r = bp_trap_pc(g, si, &cpu, &pc);
	if (r == -1) return fail_g(ss);
	int i = r == 1 && x->in && pc == x->in ? bpc_find(&x->cap, pc) : -1;
	if (i < 0) {
		ph->cost.foreign++; /* a step's stop, or a breakpoint not ours: `c` goes on */
		return 0;
	}
	ph->cost.hits++;
	if (phase_hit(ph, pc, cpu, t - x->start) == PHASE_OPENED && phase_sampling(ph)) {
		/* the next point of the run's grid (start + k periods), not a period after the open: an
		 * occurrence shorter than a period is then sampled in proportion to its length (a
		 * period from each open never sampled a 3 ms hotmod read at 200 Hz) */
		int64_t k = (t - x->start) / x->p->period_ns + 1;
		x->p->next_ns = x->start + k * x->p->period_ns;
	}
	if (bpc_hit(&x->cap, i, t)) {
		ph->cost.capped = 1;
		return 1;
	}
	r = arm(x); /* this breakpoint out, the other in: the vCPU runs on from it, no step needed */
	ph->cost.hit_ns += pace_now() - t;
	return r;
}

/* A vCPU at BEGIN or END itself, not yet past it: its pc there, or an interrupt taken there
 * (an exact frame, the interrupted pc, at it: seen on riscv64, split_b;trap_entry inside a=
 * split_a:split_b) -- the bound's hit comes once it runs on. */
static int on_bound(const struct phase *ph, const struct sample *s)
{
	if (!s->n || (s->flags & SF_USER)) return 0;
	for (int i = 0; i < s->n; i++)
		if ((i == 0 || unwind_is_exact(s->exact, i)) && (s->frames[i] == ph->begin || s->frames[i] == ph->end))
			return 1;
	return 0;
}

/* One round at a deadline, the VM stopped by us since stop_t: read, deliver, resume. 0, 1 (the
 * watchdog took over: the VM runs, the breakpoints out), 2 (the VM is held by someone else: left
 * stopped), -1. */
static int round_at(struct phasing *x, struct sinks *k, struct stats *st, int64_t stop_t)
{
	static struct sample out[GDB_MAX_CPUS];
	struct session *ss = x->ss;
	int n = 0;
	struct pause pz;
	int64_t t = pace_now();
	int got = session_sample(ss, out, &n, &pz); /* finds the VM stopped: reads, resumes */
	if (got < 0) {
		st->failed_stops++;
		return -1;
	}
	if (got > 0) return got;
	stats_pause(st, pz.pause_ns + (t - stop_t), pz.stopped_ns + (t - stop_t));
	st->dropped = ss->s.p.st.reg_errors;
	int d = 0;
	for (int i = 0; i < n && !d; i++) {
		if (on_bound(x->ph, &out[i])) {
			x->ph->cost.on_bound++; /* stopped on a bound: its hit comes on resume */
			continue;
		}
		out[i].t_ns = (uint64_t)(t - x->start); /* after any bound handled before it */
		d = record_deliver(ss, k, st, &out[i]);
	}
	if (d < 0) return -1;
	if (d) return 3; /* the reader has gone: the loop ends at its top */
	return session_modules_refresh(ss, out, n) < 0 ? -1 : 0;
}

int record_phase_loop(struct session *ss, struct sinks *k, struct stats *st, struct pace *p, struct phase *ph)
{
	const struct opts *o = ss->o;
	static struct phasing x;
	struct gdb *g = &ss->g;
	int64_t start = pace_now(), end = o->duration > 0 ? start + (int64_t)(o->duration * 1e9) : 0;
	int64_t tick_every = k->tick_ns > 0 ? k->tick_ns : 1000000000LL, next_tick = start + tick_every;
	int64_t beat = HEARTBEAT_MS * 1000000LL;
	if (o->max_pause > 0 && (int64_t)(o->max_pause * 5e8) < beat) beat = (int64_t)(o->max_pause * 5e8);
	stats_init(st, start);
	pace_init(p, o->rate, start);
	x = (struct phasing){ .ss = ss, .ph = ph, .p = p, .kind = bp_kind(ss), .start = start };
	bpc_init(&x.cap, o->max_hits, start);
	bpc_add(&x.cap, ph->begin_sym, ph->begin);
	bpc_add(&x.cap, ph->end_sym, ph->end);
	ph->cost.max_hits = o->max_hits;
	if (ss->held) {
		ERR_SET(ss, ERR_USAGE, "the VM is %s: --phase resumes nobody's pause -- `cont` it first",
			ss->held_why ? ss->held_why : "stopped by someone else");
		return -1;
	}
	guard_enter(&ss->guard);
	if (g->running && gdb_stop(g) < 0) return fail_g(ss);
	int64_t stop_t = pace_now();
	int rc = 0;
	while (rc == 0) {
		int64_t now = pace_now();
		if (record_stop || (end && now >= end) || record_sinks_gone(k) || phase_done(ph) || ph->cost.capped) break;
		if (x.in && __atomic_load_n(&ss->guard.sh->bp_removed, __ATOMIC_SEQ_CST) != x.seen_removed) {
			ph->cost.rescues++; /* a rescue we were not told of by a write: they are out */
			bpc_set_armed(&x.cap, 0, now);
			x.in = 0;
		}
		if (arm(&x) < 0) {
			int r = rescued(&x, &stop_t);
			if (r == 1) continue;
			rc = -1;
			break;
		}
		int resumed = 0;
		if (phase_sampling(ph) && now >= p->next_ns) {
			pace_tick(p, now);
			if (pace_should_warn(p, now))
				session_warn(ss, "falling behind: %llu sampling deadlines skipped so far; lower -r",
					     (unsigned long long)p->skipped);
			int got = round_at(&x, k, st, stop_t);
			if (got < 0 || got == 2) {
				rc = got < 0 ? -1 : 0; /* held: left stopped as found, the breakpoints out below */
				break;
			}
			if (got == 1) { /* the watchdog resumed the VM and took the breakpoints out */
				if (after_rescue(&x, 1) < 0) rc = -1;
				stop_t = pace_now();
				continue;
			}
			if (got == 3) break; /* the output's reader has gone */
			resumed = 1;
		}
		record_tick_if_due(k, st, p, now, tick_every, &next_tick);
		guard_enter(&ss->guard); /* from here the VM may stop at a hit: the watchdog times it */
		if (!resumed && gdb_cont(g) < 0) {
			int r = rescued(&x, &stop_t);
			if (r == 1) continue;
			rc = r < 0 ? -1 : fail_g(ss);
			break;
		}
		int64_t wake = pace_now() + beat;
		if (phase_sampling(ph) && p->next_ns < wake) wake = p->next_ns;
		if (end && end < wake) wake = end;
		struct gdb_stopinfo si;
		int r = wait_stop(g, wake, &si);
		stop_t = pace_now();
		if (r == 1) { /* nothing stopped it: a round is due, or our look -- the stop reply may be a hit's */
			r = gdb_stop(g) < 0 || gdb_parse_stop(g->dec.pkt, g->dec.len, &si) < 0 ? -1 : 0;
			if (r == 0 && si.sig != 5 && !(phase_sampling(ph) && pace_now() >= p->next_ns)) ph->cost.heartbeats++;
		} else if (r == 0 && si.kind != 'W' && si.kind != 'X' && si.sig != 5) {
			/* a stop we did not ask for: a monitor `stop`, a shutdown, an I/O error */
			ss->held = 1;
			ss->held_why = gdb_stop_reason(si.sig);
			ss->held_episodes++;
			session_warn(ss, "the VM was %s: recording the phase ends, and it is left stopped", ss->held_why);
			break;
		}
		if (r < 0) {
			if (g->err == ERR_RESCUED) {
				rc = after_rescue(&x, 0);
				stop_t = pace_now();
				continue;
			}
			if (!g->err) ERR_SET(g, ERR_PROTO, "the gdbstub's stop reply could not be read");
			rc = fail_g(ss);
			break;
		}
		if (si.kind == 'W' || si.kind == 'X') {
			ERR_SET(ss, ERR_EOF, "the guest %s while recording the phase (%s %d)", si.kind == 'W' ? "exited" : "was killed",
				si.kind == 'W' ? "status" : "signal", si.sig);
			rc = -1;
			break;
		}
		if (si.sig == 5) {
			int t = on_trap(&x, &si);
			if (t < 0 && g->err == ERR_RESCUED) {
				rc = after_rescue(&x, 0);
				stop_t = pace_now();
			} else if (t < 0) {
				rc = -1;
			}
		}
	}
	/* Every way out: the breakpoints removed (the VM is stopped here unless held or lost). */
	if (x.in && !(rc < 0 && (g->err == ERR_EOF || ss->err == ERR_EOF))) {
		int r = g->running && gdb_stop(g) < 0 ? -1 : disarm(&x);
		if (r < 0 && g->err == ERR_RESCUED) { /* held up on the way out: the guard took them out */
			ss->err = 0;
			r = after_rescue(&x, 0);
		}
		if (r < 0 && rc == 0) rc = -1;
	}
	if (!x.in) guard_breakpoints(&ss->guard, NULL, 0, x.kind);
	st->end_ns = pace_now();
	if (end && st->end_ns > end && !rc) st->end_ns = end;
	phase_finish(ph, st->end_ns - start);
	st->rescues = ss->rescues;
	st->rescue_max_ns = ss->rescue_max_ns;
	st->rescued_samples = ss->rescued_rounds;
	return rc;
}
