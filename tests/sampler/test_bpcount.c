/* SPDX-License-Identifier: MIT */
/* test_bpcount.c: `count`'s decisions -- breakpoint lookup, the rate cap's windows, the table's order -- on literals. */
#include "check.h"
#include "../../sampler/bpcount.h"

#define S 1000000000LL

static void test_add_and_find(void)
{
	static struct bpcount c;
	bpc_init(&c, 0, 0);
	CHECK(bpc_add(&c, "split_a", 0x1000) == 0);
	CHECK(bpc_add(&c, "split_b", 0x2000) == 0);
	CHECK(bpc_add(&c, "alias_of_a", 0x1000) == -2); /* one breakpoint an address */
	CHECK(bpc_find(&c, 0x2000) == 1 && bpc_find(&c, 0x1000) == 0);
	CHECK(bpc_find(&c, 0x1001) == -1);
	for (int i = 2; i < BPC_MAX; i++) CHECK(bpc_add(&c, "f", 0x10000 + (uint64_t)i) == 0);
	CHECK(bpc_add(&c, "one_too_many", 0x99999) == -1);
	char longname[300];
	memset(longname, 'x', sizeof longname - 1);
	longname[sizeof longname - 1] = 0;
	bpc_init(&c, 0, 0);
	CHECK(bpc_add(&c, longname, 1) == 0);
	CHECK(strlen(c.fn[0].name) == BPC_NAME - 1 && !strcmp(c.fn[0].name + BPC_NAME - 4, "...")); /* cut, visibly */
}

/* The cap: the hit that reaches it takes the breakpoints out until the window ends; a window
 * with no hits is skipped whole; no cap never disarms. */
static void test_cap_windows(void)
{
	static struct bpcount c;
	bpc_init(&c, 3, 10 * S);
	bpc_add(&c, "f", 0x1000);
	CHECK(bpc_due(&c, 10 * S) == 1); /* disarmed at the start: insert */
	bpc_set_armed(&c, 1, 10 * S);
	CHECK(bpc_due(&c, 10 * S) == 0);
	CHECK(bpc_hit(&c, 0, 10 * S + 1) == 0);
	CHECK(bpc_hit(&c, 0, 10 * S + 2) == 0);
	CHECK(bpc_hit(&c, 0, 10 * S + 3) == 1 && c.capped == 1); /* the third reaches the cap */
	bpc_set_armed(&c, 0, 10 * S + S / 4);
	CHECK(bpc_due(&c, 10 * S + S / 2) == 0);          /* still this window */
	CHECK(bpc_window_end(&c) == 11 * S);
	CHECK(bpc_due(&c, 11 * S) == 1);                  /* the next one: in again */
	bpc_set_armed(&c, 1, 11 * S);
	CHECK(bpc_armed_ns(&c, 11 * S + S / 2) == S / 4 + S / 2);
	bpc_set_armed(&c, 1, 11 * S + S / 2); /* in already: not another arming */
	CHECK(c.armings == 2);
	CHECK(bpc_hit(&c, 0, 13 * S + 5) == 0 && c.win_start == 13 * S && c.win_hits == 1); /* two empty windows skipped */
	CHECK(c.fn[0].hits == 4 && c.hits == 4);
	bpc_init(&c, 0, 0);
	bpc_add(&c, "f", 0x1000);
	bpc_set_armed(&c, 1, 0);
	for (int i = 0; i < 100000; i++) CHECK(bpc_hit(&c, 0, i) == 0);
	CHECK(c.capped == 0);
}

/* Most hits first, then by name; the rate is over the armed time. */
static void test_table(void)
{
	static struct bpcount c;
	char out[1024] = "";
	bpc_init(&c, 0, 0);
	bpc_add(&c, "zeta", 0x10);
	bpc_add(&c, "beta", 0x20);
	bpc_add(&c, "alpha", 0x30);
	bpc_set_armed(&c, 1, 0);
	for (int i = 0; i < 4; i++) bpc_hit(&c, 1, 1);
	for (int i = 0; i < 4; i++) bpc_hit(&c, 0, 1);
	bpc_hit(&c, 2, 1);
	bpc_table(&c, 2 * S, out, sizeof out);
	CHECK_STR(out, "        HITS       HITS/S  FUNCTION\n"
		       "           4          2.0  beta\n"
		       "           4          2.0  zeta\n"
		       "           1          0.5  alpha\n");
	char small[40] = "";
	bpc_table(&c, 2 * S, small, sizeof small); /* cut where it ends, never past cap */
	CHECK(strlen(small) == sizeof small - 1);
}

void test_bpcount(void)
{
	test_add_and_find();
	test_cap_windows();
	test_table();
}
