/* SPDX-License-Identifier: MIT */
/* test_replay.c: replay's grid -- the first instruction count sampled, wherever gdbsample attached. */
#include "check.h"
#include "../../sampler/session.h"

void test_replay(void)
{
	/* the multiples of every, the first at or after from and ahead of where the replay stands */
	CHECK(replay_first(0, 1000, 0) == 1000);                 /* count 0 is behind: replay_break wants the future */
	CHECK(replay_first(17966386, 1000000, 0) == 18000000);
	CHECK(replay_first(18000000, 1000000, 0) == 19000000);   /* standing on one: the next */
	CHECK(replay_first(5, 1000000, 100000000) == 100000000);  /* --from on the grid */
	CHECK(replay_first(5, 1000000, 100000001) == 101000000);  /* --from rounded up to it */
	CHECK(replay_first(200000000, 1000000, 100000000) == 201000000); /* attached past --from */
	CHECK(replay_first(100000000, 1000000, 100000000) == 101000000);
	/* the same grid from two different attach points: what makes replays agree */
	CHECK(replay_first(68277363, 5000000, 100000000) == replay_first(17966386, 5000000, 100000000));
	CHECK(replay_first(UINT64_MAX - 10, 1000, 0) == UINT64_MAX); /* no count left: none */
	CHECK(replay_first(5, 0, 0) == UINT64_MAX);
}
