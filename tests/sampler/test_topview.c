/* SPDX-License-Identifier: MIT */
/* test_topview.c: `top`'s counts, rows, keys and layout on literals (issue 23: its selection showed
 * the hottest function over and over, the other rows wrapped-around counts). */
#include "check.h"
#include "../../sampler/topview.h"
#include <stdlib.h>

#define K 0xffffffff80000000ull

static void symtab(struct symtab *t)
{
	memset(t, 0, sizeof *t);
	syms_add(t, K + 0x1000, 0x100, "memcpy");
	syms_add(t, K + 0x2000, 0x100, "copy_round");
	syms_add(t, K + 0x3000, 0x1000, "work_main");  /* up to where next_fn starts */
	syms_add(t, K + 0x4000, 0x100, "next_fn");
	syms_add(t, K + 0x5000, 0x100, "walk");        /* recursive */
	syms_finish(t);
}

static struct sample mk(int n, uint64_t f0, uint64_t f1, uint64_t f2, uint64_t f3)
{
	struct sample s = { .n = (uint8_t)n };
	s.frames[0] = f0;
	s.frames[1] = f1;
	s.frames[2] = f2;
	s.frames[3] = f3;
	return s;
}

static const struct toprow *find(const struct toprow *r, size_t n, const char *name)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(r[i].name, name)) return &r[i];
	return NULL;
}

static void test_counts(void)
{
	struct symtab t;
	struct topview v = { 0 };
	symtab(&t);
	v.syms = &t;
	struct sample s[] = {
		mk(3, K + 0x1010, K + 0x2020, K + 0x3030, 0),      /* memcpy <- copy_round <- work_main */
		mk(3, K + 0x101a, K + 0x2020, K + 0x3030, 0),
		mk(2, K + 0x2004, K + 0x3040, 0, 0),               /* copy_round <- work_main */
		mk(2, K + 0x3050, K + 0x4000, 0, 0),               /* a return address at next_fn's start: the
								    * call was work_main's last instruction */
		mk(4, K + 0x5010, K + 0x5020, K + 0x5020, K + 0x3060), /* walk <- walk <- walk <- work_main */
		mk(1, 0x1234, 0, 0, 0),                            /* an unknown pc */
	};
	for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) CHECK(topview_add(&v, &s[i]) == 0);
	struct sample irq = mk(2, K + 0x1020, K + 0x4000, 0, 0); /* memcpy interrupted next_fn at its start */
	irq.exact[0] = 1u << 1;
	CHECK(topview_add(&v, &irq) == 0);
	CHECK(v.samples == 7 && v.lost == 0);

	struct toprow r[16];
	size_t n = topview_rows(&v, r, 16);
	CHECK(n == 6);
	uint64_t self = 0;
	for (size_t i = 0; i < n; i++) {
		self += r[i].self;
		CHECK(r[i].self <= r[i].total && r[i].total <= v.samples);
		for (size_t j = 0; j < i; j++) CHECK(strcmp(r[i].name, r[j].name) != 0); /* distinct */
	}
	CHECK(self == v.samples);                    /* each sample's leaf once */
	const struct toprow *m = find(r, n, "memcpy"), *c = find(r, n, "copy_round"), *w = find(r, n, "work_main"),
			    *nx = find(r, n, "next_fn"), *wk = find(r, n, "walk"), *u = find(r, n, "0x1234");
	CHECK(m && m->self == 3 && m->total == 3);
	CHECK(c && c->self == 1 && c->total == 3);
	CHECK(w && w->self == 1 && w->total == 5);   /* the return address at K+0x4000 is work_main's */
	CHECK(nx && nx->self == 0 && nx->total == 1); /* only the interrupted pc is next_fn's */
	CHECK(wk && wk->self == 1 && wk->total == 1); /* recursion counts once per sample */
	CHECK(u && u->self == 1 && u->total == 1 && u->key == 0x1234);

	toprows_sort(r, n, TOP_BY_SELF);              /* 3 memcpy; then 1 each, by name */
	CHECK_STR(r[0].name, "memcpy");
	CHECK_STR(r[1].name, "0x1234");
	CHECK_STR(r[2].name, "copy_round");
	CHECK_STR(r[3].name, "walk");
	CHECK_STR(r[4].name, "work_main");
	CHECK_STR(r[5].name, "next_fn");
	toprows_sort(r, n, TOP_BY_TOTAL);             /* 5 work_main; 3 copy_round, memcpy; 1 ... */
	CHECK_STR(r[0].name, "work_main");
	CHECK_STR(r[1].name, "copy_round");
	CHECK_STR(r[2].name, "memcpy");
	CHECK_STR(r[3].name, "0x1234");
	CHECK_STR(r[4].name, "next_fn");
	CHECK_STR(r[5].name, "walk");
	CHECK(topview_rows(&v, r, 2) == 2);           /* out holds at most cap */
	topview_free(&v);

	struct topview bare = { 0 };                  /* no symbols: every pc its own row */
	struct sample b = mk(2, 0x10, 0x20, 0, 0);
	CHECK(topview_add(&bare, &b) == 0 && topview_add(&bare, &b) == 0);
	n = topview_rows(&bare, r, 16);
	CHECK(n == 2 && find(r, n, "0x10") && find(r, n, "0x10")->self == 2 && find(r, n, "0x20")->total == 2);
	topview_free(&bare);
	syms_free(&t);
}

/* Many functions, as the bug needed to show: every row a different function, the counts each
 * its own, the selection at any depth right. */
static void test_many(void)
{
	struct topview v = { 0 };
	for (uint64_t f = 1; f <= 40; f++)
		for (uint64_t k = 0; k < f; k++) {
			struct sample s = mk(1, 0x1000 * f, 0, 0, 0);
			if (topview_add(&v, &s) < 0) CHECK(0);
		}
	struct toprow r[64];
	size_t n = topview_rows(&v, r, 64);
	toprows_sort(r, n, TOP_BY_SELF);
	CHECK(n == 40 && v.samples == 40 * 41 / 2);
	int ok = 1;
	for (size_t i = 0; i < n; i++) ok &= r[i].self == 40 - i && r[i].key == 0x1000 * (40 - i);
	CHECK(ok);
	topview_free(&v);

	struct topview full = { 0 };                  /* past TOPVIEW_MAX_FNS: frames counted as lost */
	for (uint64_t f = 0; f < TOPVIEW_MAX_FNS + 3; f++) {
		struct sample s = mk(1, 0x10 * (f + 1), 0, 0, 0);
		if (topview_add(&full, &s) < 0) break;
	}
	struct sample again = mk(1, 0x10, 0, 0, 0);   /* one already counted still counts */
	CHECK(topview_add(&full, &again) == 0);
	CHECK(full.fns.n == TOPVIEW_MAX_FNS && full.lost == 3 && full.samples == TOPVIEW_MAX_FNS + 4);
	topview_free(&full);
}

static void test_sort_ties(void)
{
	struct toprow r[] = {
		{ "b", 2, 5, 9 }, { "a", 3, 5, 9 }, { "c", 1, 7, 7 }, { "a", 1, 5, 9 }, { "d", 4, 0, 10 },
	};
	toprows_sort(r, 5, TOP_BY_SELF);
	CHECK_STR(r[0].name, "c");
	CHECK(!strcmp(r[1].name, "a") && r[1].key == 1);  /* the same name: by key */
	CHECK(!strcmp(r[2].name, "a") && r[2].key == 3);
	CHECK_STR(r[3].name, "b");
	CHECK_STR(r[4].name, "d");
	toprows_sort(r, 5, TOP_BY_TOTAL);
	CHECK_STR(r[0].name, "d");
	CHECK(!strcmp(r[1].name, "a") && r[1].key == 1);
	CHECK_STR(r[3].name, "b");
	CHECK_STR(r[4].name, "c");
	toprows_sort(r, 0, TOP_BY_TOTAL);                 /* nothing to sort */
}

static void test_keys(void)
{
	struct top_state st = { TOP_BY_SELF, 1, 0 };
	CHECK(top_key(&st, 'q') == TOPK_QUIT && top_key(&st, 'Q') == TOPK_QUIT);
	CHECK(top_key(&st, 't') == TOPK_REDRAW && st.sort == TOP_BY_TOTAL);
	CHECK(top_key(&st, 't') == TOPK_REDRAW && st.sort == TOP_BY_TOTAL); /* t means total, not a toggle */
	CHECK(top_key(&st, 's') == TOPK_REDRAW && st.sort == TOP_BY_SELF);
	CHECK(top_key(&st, '>') == TOPK_REDRAW && st.sort == TOP_BY_TOTAL);
	CHECK(top_key(&st, '\t') == TOPK_REDRAW && st.sort == TOP_BY_SELF);
	CHECK(top_key(&st, 'c') == TOPK_REDRAW && st.chains == 0);
	CHECK(top_key(&st, 'c') == TOPK_REDRAW && st.chains == 1);
	CHECK(top_key(&st, 'p') == TOPK_PAUSE && st.paused);
	CHECK(top_key(&st, ' ') == TOPK_RESUME && !st.paused);
	CHECK(top_key(&st, 'x') == TOPK_NONE && top_key(&st, 3) == TOPK_NONE && top_key(&st, 410) == TOPK_NONE);
	CHECK(st.sort == TOP_BY_SELF && st.chains == 1 && !st.paused);
}

static void test_layout(void)
{
	struct top_layout l = top_layout(40, 3, 10, 1, 8);  /* everything fits: 3 + 11 + 9 <= 40 */
	CHECK(l.fn_rows == 10 && l.chain_lines == 8);
	l = top_layout(40, 3, 500, 0, 8);                   /* chains off: the rows to the bottom */
	CHECK(l.fn_rows == 36 && l.chain_lines == 0);
	l = top_layout(40, 3, 500, 1, 50);                  /* both too tall: the functions keep half */
	CHECK(l.fn_rows == 18 && l.chain_lines == 17 && 3 + 1 + l.fn_rows + 1 + l.chain_lines == 40);
	l = top_layout(40, 3, 500, 1, 5);                   /* short chains shown whole */
	CHECK(l.fn_rows == 30 && l.chain_lines == 5);
	l = top_layout(40, 3, 4, 1, 100);                   /* few functions: the chains take the rest */
	CHECK(l.fn_rows == 4 && l.chain_lines == 31);
	l = top_layout(8, 3, 500, 1, 20);                   /* a small terminal: header first */
	CHECK(l.fn_rows == 2 && l.chain_lines == 1 && 3 + 1 + l.fn_rows + 1 + l.chain_lines <= 8);
	l = top_layout(4, 3, 500, 1, 20);                   /* only the title fits */
	CHECK(l.fn_rows == 0 && l.chain_lines == 0);
	l = top_layout(2, 3, 500, 1, 20);                   /* not even the header */
	CHECK(l.fn_rows == 0 && l.chain_lines == 0);
	l = top_layout(40, 3, 0, 1, 0);
	CHECK(l.fn_rows == 0 && l.chain_lines == 0);
}

static void test_cut(void)
{
	CHECK(top_cut("abcdef", 6, 4) == 4 && top_cut("abc", 3, 4) == 3 && top_cut("abcdef", 6, 0) == 6);
	CHECK(top_cut("\xc3\xa9t\xc3\xa9", 5, 2) == 3);     /* characters, not bytes */
}

void test_topview(void)
{
	test_counts();
	test_many();
	test_sort_ties();
	test_keys();
	test_layout();
	test_cut();
}
