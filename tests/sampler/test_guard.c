/* SPDX-License-Identifier: MIT */
/* test_guard.c: the pause watchdog's shared state machine, driven step by step (no processes). */
#include "check.h"
#include "../../sampler/guard.h"

#define MS 1000000LL

static int state(const struct guard *g)
{
	return (int)(g->sh->word & 0xff);
}

static void setup(struct guard *g, struct guard_shared *sh)
{
	memset(g, 0, sizeof *g);
	memset(sh, 0, sizeof *sh);
	sh->word = GUARD_STOPPED; /* as guard_start leaves it: attaching, no watchdog yet */
	sh->max_pause_ns = 200 * MS;
	g->sh = sh;
}

/* Attaching (since 0) is never rescued; a stop within the limit neither. */
static void test_no_rescue(void)
{
	struct guard g;
	struct guard_shared sh;
	setup(&g, &sh);
	CHECK(!guard_claim(&sh, 1000000 * MS));
	guard_leave(&g);
	CHECK(state(&g) == GUARD_RUNNING);
	guard_enter(&g);
	CHECK(state(&g) == GUARD_STOPPED);
	CHECK(!guard_claim(&sh, sh.since_ns + 200 * MS));
	CHECK(guard_gate(&g, 1) == 0 && state(&g) == GUARD_WRITING);
	CHECK(guard_gate(&g, 0) == 0 && state(&g) == GUARD_STOPPED);
	guard_leave(&g);
	CHECK(!guard_claim(&sh, sh.since_ns + 10000 * MS)); /* running: nothing to rescue */
	CHECK(guard_gate(&g, 1) == 0 && state(&g) == GUARD_RUNNING); /* no watchdog: no mark */
	CHECK(guard_gate(&g, 0) == 0);
	CHECK(sh.rescues == 0);
}

/* Held up between writes: the rescue refuses every later write until acknowledged, and a new
 * stop does not hide it. */
static void test_rescue_between_writes(void)
{
	struct guard g;
	struct guard_shared sh;
	setup(&g, &sh);
	guard_enter(&g);
	uint64_t gen = sh.word >> 8;
	CHECK(guard_claim(&sh, sh.since_ns + 201 * MS));
	CHECK(state(&g) == GUARD_RESCUING);
	CHECK(guard_gate(&g, 1) < 0); /* mid-rescue: write nothing */
	guard_claimed(&sh);
	CHECK(state(&g) == GUARD_RESCUED);
	CHECK(sh.rescues == 1 && sh.longest_ns == 201 * MS);
	CHECK(guard_gate(&g, 1) < 0);
	guard_leave(&g);
	guard_enter(&g);
	CHECK(state(&g) == GUARD_RESCUED && sh.word >> 8 == gen);
	CHECK(guard_gate(&g, 1) < 0);
	CHECK(guard_acknowledge(&g) == 1 && state(&g) == GUARD_RUNNING);
	guard_enter(&g);
	CHECK(state(&g) == GUARD_STOPPED && sh.word >> 8 == gen + 1);
	CHECK(guard_gate(&g, 1) == 0);
	CHECK(guard_gate(&g, 0) == 0);
}

/* Held up inside a write (the lock-based guard deadlocked here): the guard still rescues, and
 * the write's end reports the race so the parent resumes and drains itself. */
static void test_rescue_during_write(void)
{
	struct guard g;
	struct guard_shared sh;
	setup(&g, &sh);
	guard_enter(&g);
	CHECK(guard_gate(&g, 1) == 0 && state(&g) == GUARD_WRITING);
	CHECK(guard_claim(&sh, sh.since_ns + 5000 * MS));
	CHECK(state(&g) == GUARD_RACING);
	guard_claimed(&sh);
	CHECK(state(&g) == GUARD_RACED);
	CHECK(guard_gate(&g, 0) < 0);
	CHECK(guard_gate(&g, 1) < 0); /* until acknowledged */
	CHECK(!guard_claim(&sh, sh.since_ns + 10000 * MS)); /* one rescue per stop */
	CHECK(guard_acknowledge(&g) == 1 && state(&g) == GUARD_RUNNING);
	CHECK(sh.longest_ns == 5000 * MS);
}

/* Without a limit (--max-pause 0) the watchdog never acts. */
static void test_off(void)
{
	struct guard g;
	struct guard_shared sh;
	setup(&g, &sh);
	sh.max_pause_ns = 0;
	guard_enter(&g);
	CHECK(!guard_claim(&sh, sh.since_ns + 100000 * MS));
	CHECK(guard_gate(&g, 1) == 0);
	CHECK(!guard_claim(&sh, sh.since_ns + 100000 * MS));
	CHECK(guard_gate(&g, 0) == 0 && state(&g) == GUARD_STOPPED);
}

/* The guard's resume: '+', 0x03, a z0 for each breakpoint the parent listed, then `c`; none
 * once the list is emptied. */
static void test_resume_bytes_remove_breakpoints(void)
{
	static struct guard g;
	static struct guard_shared sh;
	char out[GUARD_BP_MAX * 40 + 64];
	uint64_t bp[2] = { 0xffffffff80101234ull, 0x40 };
	setup(&g, &sh);
	size_t n = guard_resume_bytes(&sh, "$c#63", out, sizeof out);
	CHECK(n == 7 && !memcmp(out, "+\x03$c#63", 7));
	guard_breakpoints(&g, bp, 2, 1);
	n = guard_resume_bytes(&sh, "$c#63", out, sizeof out);
	out[n] = 0;
	CHECK_STR(out, "+\x03$z0,ffffffff80101234,1#f6$z0,40,1#97$c#63");
	CHECK(guard_resume_bytes(&sh, "$c#63", out, 20) == 0); /* does not fit: nothing half */
	CHECK(guard_stop_is_trap("T05thread:01;", 13) && guard_stop_is_trap("S05", 3)); /* a step's: resume again */
	CHECK(!guard_stop_is_trap("T02thread:01;", 13) && !guard_stop_is_trap("S11", 3)); /* an operator's stop */
	CHECK(!guard_stop_is_trap("OK", 2) && !guard_stop_is_trap("T0", 2) && !guard_stop_is_trap("E05", 3));
	guard_breakpoints(&g, NULL, 0, 1);
	CHECK(guard_resume_bytes(&sh, "$c#63", out, sizeof out) == 7);
	static uint64_t many[GUARD_BP_MAX + 5];
	for (int i = 0; i < GUARD_BP_MAX + 5; i++) many[i] = 0xffffffffffff0000ull + (uint64_t)i;
	guard_breakpoints(&g, many, GUARD_BP_MAX + 5, 4); /* kept to what the guard holds, and all fit */
	CHECK(sh.nbp == GUARD_BP_MAX && guard_resume_bytes(&sh, "$c#63", out, sizeof out) > 0);
}

void test_guard(void)
{
	test_resume_bytes_remove_breakpoints();
	test_no_rescue();
	test_rescue_between_writes();
	test_rescue_during_write();
	test_off();
}
