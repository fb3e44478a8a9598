/* SPDX-License-Identifier: MIT */
/* session_replay.c: `replay` -- a QEMU replaying a recording, stopped at exact instruction counts and sampled there. */
#include "session.h"
#include "err.h"
#include "record.h"
#include "pace.h"

/*
 * QEMU's record/replay (-icount shift=N,rr=record|replay,rrfile=F; one vCPU) replays a run
 * instruction for instruction. Its monitor's `replay_break N` stops the replay when the
 * instruction count reaches N (exactly: seen on 7.2), and `info replay` says the count. Through
 * the gdbstub (qRcmd) each step is: replay_break, `c`, the stop reply, `info replay` to confirm
 * the count, one sampling batch. The counts are a grid -- the multiples of --every -- so the same
 * recording gives the same samples however late gdbsample attached, and byte-identical folded
 * output on every replay. The replay waits for gdbsample: no pause watchdog (a rescue's `c`
 * would let it run past the grid); the guard's last resort still resumes it.
 */
#define REPLAY_STEP_MS 600000 /* the longest one step may take: --every instructions at a replay's
			       * speed (~10^8 a second under TCG), on a loaded host */

const char *const replay_end_names[] = { "", "recording-ended", "until", "signal" };

uint64_t replay_first(uint64_t now, uint64_t every, uint64_t from)
{
	uint64_t at = from > now ? from : now + 1;
	if (!every || at > UINT64_MAX - every) return UINT64_MAX;
	return (at + every - 1) / every * every;
}

static int fail_g(struct session *ss)
{
	ERR_SET(ss, ss->g.err ? ss->g.err : ERR_PROTO, "%s", ss->g.errstr);
	return -1;
}

/* The replay's mode and count now (VM stopped): 0, -1 error (ss->err). */
static int where(struct session *ss, uint64_t *icount)
{
	int m = gdb_replay_info(&ss->g, icount);
	if (m < 0) return fail_g(ss);
	if (m == GDB_RR_REPLAY) return 0;
	ERR_SET(ss, ERR_USAGE, "%s: replay drives a QEMU replaying a recording (-icount shift=N,rr=replay,"
		"rrfile=FILE, the file made with rr=record)", m == GDB_RR_RECORD ? "this QEMU is recording, not "
		"replaying" : "record/replay is not active in this QEMU");
	return -1;
}

int session_replay_begin(struct session *ss)
{
	struct replay *rp = &ss->rp;
	uint64_t now;
	if (ss->held_at_start && !ss->o->resume_paused) {
		ERR_SET(ss, ERR_USAGE, "the replay is paused (QEMU -S, or a monitor `stop`): replay resumes nobody's "
			"pause unless told to -- `cont` it first, or give --resume-paused");
		return -1;
	}
	if (ss->held_at_start) { /* --resume-paused: the operator hands the paused replay to us */
		ss->held = ss->held_at_start = 0;
		ss->held_episodes = 0;
		ss->g.running = 0; /* stopped: no 0x03 needed */
		session_warn(ss, "the replay was %s: --resume-paused, so replay drives it (and leaves it running)",
			     ss->held_why);
	}
	guard_enter(&ss->guard); /* from here the VM is, or will soon be, stopped by us: a guard whose
				  * gdbsample dies resumes it (no watchdog in a replay) */
	if (ss->g.running && gdb_stop(&ss->g) < 0) return fail_g(ss); /* wherever it is */
	if (where(ss, &now) < 0) return -1;
	rp->started = 1;
	rp->attach_icount = now;
	rp->target = replay_first(now, ss->o->every, ss->o->from);
	if (now >= ss->o->from)
		session_warn(ss, "the replay was at instruction %llu when gdbsample attached: the profile starts there; "
			     "give --from past it for a profile that is the same on every replay",
			     (unsigned long long)now);
	return 0;
}

int session_replay_step(struct session *ss, struct sample *out, int *n, uint64_t *icount, int64_t *held_ns)
{
	struct replay *rp = &ss->rp;
	const struct opts *o = ss->o;
	uint64_t now;
	*n = 0;
	if (record_stop) {
		rp->ended = REPLAY_SIGNAL;
		return 3;
	}
	if (rp->steps) rp->target = rp->target > UINT64_MAX - o->every ? UINT64_MAX : rp->target + o->every;
	if ((o->until && rp->target > o->until) || rp->target == UINT64_MAX) {
		rp->ended = REPLAY_UNTIL;
		return 3;
	}
	guard_enter(&ss->guard);
	if (gdb_replay_break(&ss->g, rp->target) < 0) return fail_g(ss);
	int code = 0, r = gdb_cont_until_stop(&ss->g, REPLAY_STEP_MS, &record_stop, &code);
	if (r < 0) return fail_g(ss);
	if (r == 1) { /* the recording ended: QEMU exited, and the connection with it */
		rp->ended = REPLAY_END;
		rp->exit_code = code;
		guard_finish(&ss->guard, 1);
		ss->attached = 0;
		return 3;
	}
	if (r == 2) {
		rp->ended = REPLAY_SIGNAL;
		return 3;
	}
	int64_t t0 = pace_now();
	if (where(ss, &now) < 0) return -1;
	if (now != rp->target) rp->off_target++; /* stopped by something else first */
	if (!rp->steps++) rp->first = now;
	rp->last = now;
	*icount = now;
	if (sampler_take(&ss->s, out, n) < 0) {
		ERR_SET(ss, ss->s.err, "%s", ss->s.errstr);
		return -1;
	}
	*held_ns = pace_now() - t0; /* the replay stood still from its stop to here (and to the next `c`) */
	return 0;
}
