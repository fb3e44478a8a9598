/* SPDX-License-Identifier: MIT */
/* test_stats.c: the run summary -- the guest's stopped share as a bracket, in both renderings. */
#include "check.h"
#include "../../sampler/stats.h"

#define US 1000LL

void test_stats(void)
{
	static struct stats st; /* the histogram is large */
	struct sampler_stats ss;
	struct wire_stats ws;
	struct gdb_stats gs;
	char out[8192];
	memset(&ss, 0, sizeof ss);
	memset(&ws, 0, sizeof ws);
	memset(&gs, 0, sizeof gs);
	stats_init(&st, 0);
	for (int i = 0; i < 10; i++) stats_pause(&st, 300 * US, 100 * US); /* stop byte -> c; reply -> c */
	st.end_ns = 100000 * US;                                              /* 0.1 s of wall time */
	CHECK(st.paused_ns == 3000 * US && st.stopped_ns == 1000 * US);
	CHECK(stats_pause_pct(&st, 50) == 300);
	static struct summary t;
	summary_init(&t);
	stats_summary(&st, &ss, &ws, &gs, NULL, 2, 100, 0, &t);
	out[0] = 0;
	summary_kv(&t, out, sizeof out);
	CHECK(strstr(out, "stopped_fraction 0.01000\n") != NULL);
	CHECK(strstr(out, "paused_fraction 0.03000\n") != NULL);
	out[0] = 0;
	summary_human(&t, out, sizeof out);
	CHECK(strstr(out, "guest stopped 1.00% of wall time (at most 3.00%, counting from the stop byte)") != NULL);
}
