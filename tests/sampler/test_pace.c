/* SPDX-License-Identifier: MIT */
/* test_pace.c: the absolute-deadline pacer on a synthetic clock. */
#include "check.h"
#include "../../sampler/pace.h"

#define MS 1000000LL

static void test_no_drift(void)
{
	struct pace p;
	pace_init(&p, 100, 0);
	CHECK(p.period_ns == 10 * MS);
	/* Each sample costs 3 ms and we wake 0.5 ms late: deadlines stay on the 10 ms grid. */
	for (int i = 1; i <= 100; i++) {
		int64_t d = pace_deadline(&p);
		CHECK(d == i * 10 * MS);
		pace_tick(&p, d + MS / 2);
	}
	CHECK(p.ticks == 100);
	CHECK(p.skipped == 0);
	CHECK(p.late_max_ns == MS / 2);
	CHECK(p.late_total_ns == 100 * (MS / 2));
	CHECK(!pace_should_warn(&p, 1000 * MS));
}

static void test_falling_behind(void)
{
	struct pace p;
	pace_init(&p, 1000, 0); /* 1 ms period */
	/* Woke 3.5 ms after the first deadline: deadlines 2, 3 and 4 ms are skipped, next is 5 ms. */
	pace_tick(&p, 1 * MS + 3 * MS + MS / 2);
	CHECK(p.skipped == 3);
	CHECK(pace_deadline(&p) == 5 * MS);
	CHECK(p.late_max_ns == 3 * MS + MS / 2);
	/* Warn once, then not again within the same second even if still behind. */
	CHECK(pace_should_warn(&p, 5 * MS));
	pace_tick(&p, 8 * MS);
	CHECK(p.skipped == 5);
	CHECK(!pace_should_warn(&p, 9 * MS));
	CHECK(pace_should_warn(&p, 1006 * MS));
	/* Caught up: no further warnings. */
	CHECK(!pace_should_warn(&p, 3000 * MS));
}

static void test_real_clock(void)
{
	/* Ten 1 ms periods on the real clock: finishes no earlier than 10 ms after start. Upper
	 * bound is loose (the host may be busy): 500 ms. */
	struct pace p;
	int64_t t0 = pace_now();
	pace_init(&p, 1000, t0);
	for (int i = 0; i < 10; i++) {
		pace_sleep(&p);
		pace_tick(&p, pace_now());
	}
	int64_t el = pace_now() - t0;
	CHECK(el >= 10 * MS);
	CHECK(el < 500 * MS);
}

void test_pace(void)
{
	test_no_drift();
	test_falling_behind();
	test_real_clock();
}
