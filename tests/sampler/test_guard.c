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

void test_guard(void)
{
	test_no_rescue();
	test_rescue_between_writes();
	test_rescue_during_write();
	test_off();
}
