/* SPDX-License-Identifier: MIT */
/* test_phase.c: record --phase's decisions -- the spec, occurrences from hits, what is sampled, the capture's lines -- on literals. */
#include "check.h"
#include "../../sampler/phase.h"
#include <stdlib.h>

static void test_parse(void)
{
	static struct phase ph;
	char why[256];
	CHECK(phase_parse(&ph, "boot=start_kernel:rest_init", why, sizeof why) == 0);
	CHECK_STR(ph.name, "boot");
	CHECK_STR(ph.begin_sym, "start_kernel");
	CHECK_STR(ph.end_sym, "rest_init");
	CHECK(phase_parse(&ph, "a.b-c_9=0xffffffff81000000:0x10", why, sizeof why) == 0);
	CHECK(phase_parse(&ph, "x=f [mod]:g", why, sizeof why) == 0 && !strcmp(ph.begin_sym, "f [mod]")); /* perf's module form */
	CHECK(phase_parse(&ph, "x=f\tg:h", why, sizeof why) == -1);
	CHECK(phase_parse(&ph, "nospec", why, sizeof why) == -1);
	CHECK_STR(why, "--phase: expected NAME=BEGIN:END (function names or 0x addresses), got 'nospec'");
	CHECK(phase_parse(&ph, "a=b", why, sizeof why) == -1);
	CHECK(phase_parse(&ph, "=f:g", why, sizeof why) == -1);
	CHECK_STR(why, "--phase: the name '' must be 1-64 of A-Z a-z 0-9 _ . -");
	CHECK(phase_parse(&ph, "a b=f:g", why, sizeof why) == -1);
	CHECK(phase_parse(&ph, "a=:g", why, sizeof why) == -1);
	CHECK(phase_parse(&ph, "a=f:", why, sizeof why) == -1);
	CHECK(phase_parse(&ph, "a=f:g:h", why, sizeof why) == -1); /* END may hold no ':' */
	CHECK(phase_parse(&ph, "a=f:f", why, sizeof why) == -1);
	CHECK_STR(why, "--phase a: BEGIN and END are the same function; a phase runs from one to the other");
	char name[80];
	memset(name, 'n', 64);
	strcpy(name + 64, "=f:g");
	CHECK(phase_parse(&ph, name, why, sizeof why) == 0); /* 64: the longest */
	memset(name, 'n', 65);
	strcpy(name + 65, "=f:g");
	CHECK(phase_parse(&ph, name, why, sizeof why) == -1);
	char sym[300] = "a=";
	memset(sym + 2, 's', PHASE_SYM);
	strcpy(sym + 2 + PHASE_SYM, ":g");
	CHECK(phase_parse(&ph, sym, why, sizeof why) == -1); /* BEGIN too long: refused, never cut */
}

/* Opens at BEGIN, closes at END, any vCPU; re-entries and stray ends change nothing. */
static void test_occurrences(void)
{
	static struct phase ph;
	char why[64];
	phase_parse(&ph, "a=f:g", why, sizeof why);
	ph.begin = 0x100;
	ph.end = 0x200;
	CHECK(!phase_sampling(&ph) && !phase_done(&ph));
	CHECK(phase_hit(&ph, 0x200, 0, 5) == PHASE_STRAY_END && ph.stray_ends == 1);
	CHECK(phase_hit(&ph, 0x300, 0, 6) == PHASE_NOT_OURS);
	CHECK(phase_hit(&ph, 0x100, 1, 10) == PHASE_OPENED && phase_sampling(&ph));
	CHECK(phase_hit(&ph, 0x100, 0, 11) == PHASE_REENTRY && ph.reentries == 1);
	CHECK(phase_hit(&ph, 0x200, 0, 30) == PHASE_CLOSED && !phase_sampling(&ph));
	CHECK(phase_hit(&ph, 0x100, 1, 40) == PHASE_OPENED);
	phase_finish(&ph, 45);
	CHECK(ph.opened == 2 && ph.closed == 1 && ph.nocc == 2 && !ph.open);
	CHECK(ph.sampled_ns == 20 + 5);
	CHECK(ph.occ[0].n == 1 && ph.occ[0].begin_ns == 10 && ph.occ[0].end_ns == 30 && ph.occ[0].begin_cpu == 1 &&
	      ph.occ[0].end_cpu == 0 && ph.occ[0].done && ph.occ[0].sampled);
	CHECK(ph.occ[1].n == 2 && ph.occ[1].end_ns == 45 && ph.occ[1].end_cpu == -1 && !ph.occ[1].done);
	size_t len = 0;
	char *t = phase_text(&ph, &len);
	CHECK_STR(t, "p a 100 200\n"
		     "o 1 10 30 1 0 done sampled\n"
		     "o 2 40 45 1 - open sampled\n");
	CHECK(len == strlen(t));
	free(t);
	phase_free(&ph);
	/* a hit handled just past the run's (capped) end opened the phase after it: it ends where it
	 * began, never before */
	phase_parse(&ph, "a=f:g", why, sizeof why);
	ph.begin = 0x100;
	ph.end = 0x200;
	CHECK(phase_hit(&ph, 0x100, 0, 3005) == PHASE_OPENED);
	phase_finish(&ph, 3000);
	CHECK(ph.nocc == 1 && ph.occ[0].begin_ns == 3005 && ph.occ[0].end_ns == 3005 && ph.sampled_ns == 0);
	phase_free(&ph);
}

/* --phase-occurrence 2: only the second is sampled, and once it closes nothing more can be. */
static void test_wanted_occurrence(void)
{
	static struct phase ph;
	char why[64];
	phase_parse(&ph, "a=f:g", why, sizeof why);
	ph.begin = 1;
	ph.end = 2;
	ph.want = 2;
	phase_hit(&ph, 1, 0, 100);
	CHECK(!phase_sampling(&ph)); /* the first: not the one wanted */
	phase_hit(&ph, 2, 0, 200);
	CHECK(!phase_done(&ph));
	phase_hit(&ph, 1, 0, 300);
	CHECK(phase_sampling(&ph));
	phase_hit(&ph, 2, 1, 350);
	CHECK(phase_done(&ph) && ph.sampled_ns == 50);
	size_t len;
	char *t = phase_text(&ph, &len);
	CHECK_STR(t, "p a 1 2\n"
		     "o 1 100 200 0 0 done skipped\n"
		     "o 2 300 350 0 1 done sampled\n");
	free(t);
	static struct summary sum;
	static char kv[8192];
	summary_init(&sum);
	phase_summary(&ph, &sum);
	kv[0] = 0;
	summary_kv(&sum, kv, sizeof kv);
	CHECK(strstr(kv, "phase a\n") && strstr(kv, "phase_occurrences 2\n") && strstr(kv, "phase_complete 2\n"));
	CHECK(strstr(kv, "phase_occurrence_wanted 2\n") && strstr(kv, "phase_sampled_ns 50\n") &&
	      strstr(kv, "phase_incomplete 0\n"));
	phase_free(&ph);
}

/* Past PHASE_OCC_MAX occurrences are counted, not listed; the counts stay whole. */
static void test_unlisted(void)
{
	static struct phase ph;
	char why[64];
	phase_parse(&ph, "a=f:g", why, sizeof why);
	ph.begin = 1;
	ph.end = 2;
	for (int64_t i = 0; i < PHASE_OCC_MAX + 3; i++) {
		phase_hit(&ph, 1, 0, 10 * i);
		phase_hit(&ph, 2, 0, 10 * i + 4);
	}
	CHECK(ph.nocc == PHASE_OCC_MAX && ph.unlisted == 3 && ph.opened == PHASE_OCC_MAX + 3 &&
	      ph.closed == PHASE_OCC_MAX + 3);
	CHECK(ph.sampled_ns == 4LL * (PHASE_OCC_MAX + 3));
	phase_free(&ph);
}

void test_phase(void)
{
	test_parse();
	test_occurrences();
	test_wanted_occurrence();
	test_unlisted();
}
