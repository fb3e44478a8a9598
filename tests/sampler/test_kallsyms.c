/* SPDX-License-Identifier: MIT */
/* test_kallsyms.c: the kallsyms finder and decoder on synthetic tables laid out as scripts/kallsyms.c
 * lays them out (6.1's order and the later one, relative, per-CPU and absolute addresses, with and
 * without kallsyms_seqs_of_names), and on hostile variants of them. */
#include "check.h"
#include "../../sampler/kallsyms.h"
#include "../../sampler/err.h"
#include <stdlib.h>

#define AT 0xffffffff82000000ull /* where the blob sits */
#define NSYM 700                 /* three markers */
#define BIG 3                    /* symbol 3 has a name longer than 127 bytes (two-byte length) */

enum { LAYOUT_61, LAYOUT_LATER, LAYOUT_ABS }; /* offsets before num_syms; after the token index
					       * and seqs last; absolute addresses before num_syms */

struct gen {
	uint8_t b[1 << 20];
	size_t n;
	size_t at[KT_N]; /* offsets of the tables in b */
};

static void put(struct gen *g, const void *p, size_t n)
{
	memcpy(g->b + g->n, p, n);
	g->n += n;
}

static void put_le(struct gen *g, uint64_t v, int n)
{
	for (int i = 0; i < n; i++) g->b[g->n++] = (uint8_t)(v >> (8 * i));
}

static void label(struct gen *g, int t)
{
	while (g->n & 7) g->b[g->n++] = 0;
	if (t >= 0) g->at[t] = g->n;
}

static char names[NSYM][200];
static char types[NSYM];
static uint64_t addrs[NSYM];

static void make_syms(int percpu)
{
	for (int i = 0; i < NSYM; i++) {
		int pc = percpu && i < 5; /* per-CPU symbols first: small absolute addresses */
		if (i == BIG) {
			memset(names[i], 'x', 150);
			snprintf(names[i] + 150, 20, "_%d", i);
		} else {
			snprintf(names[i], sizeof names[i], pc ? "percpu_var_%d" : i % 3 ? "func_%d" : "do_thing_%d", i);
		}
		types[i] = pc ? 'A' : i % 7 == 0 ? 'D' : i % 2 ? 't' : 'T';
		addrs[i] = pc ? 0x1000ull * (uint64_t)i : 0xffffffff81000000ull + 0x40ull * (uint64_t)i;
	}
}

/* Token 1 is "func_", 2 "do_", every printable byte itself, the rest empty. */
static const char *token(int i, char *one)
{
	if (i == 1) return "func_";
	if (i == 2) return "do_";
	if (i >= 0x21 && i <= 0x7e) {
		one[0] = (char)i;
		one[1] = 0;
		return one;
	}
	return "";
}

static int cmp_name(const void *a, const void *b)
{
	int x = *(const int *)a, y = *(const int *)b;
	int c = strcmp(names[x], names[y]);
	return c ? c : x - y;
}

static void put_addrs(struct gen *g, int layout, int percpu)
{
	if (layout == LAYOUT_ABS) {
		label(g, KT_ADDRS);
		for (int i = 0; i < NSYM; i++) put_le(g, addrs[i], 8);
		return;
	}
	uint64_t base = 0xffffffff81000000ull;
	label(g, KT_ADDRS);
	for (int i = 0; i < NSYM; i++) {
		int64_t v = percpu ? (addrs[i] >> 63 ? (int64_t)(base - addrs[i]) - 1 : (int64_t)addrs[i])
				   : (int64_t)(addrs[i] - base);
		put_le(g, (uint64_t)v, 4);
	}
	label(g, KT_BASE);
	put_le(g, base, 8);
}

static void put_seqs(struct gen *g, int seq_bytes)
{
	int order[NSYM];
	for (int i = 0; i < NSYM; i++) order[i] = i;
	qsort(order, NSYM, sizeof *order, cmp_name);
	label(g, KT_SEQS);
	for (int i = 0; i < NSYM; i++) {
		if (seq_bytes == 3) {
			g->b[g->n++] = (uint8_t)(order[i] >> 16);
			g->b[g->n++] = (uint8_t)(order[i] >> 8);
			g->b[g->n++] = (uint8_t)order[i];
		} else {
			put_le(g, (uint64_t)order[i], 4);
		}
	}
}

static void build(struct gen *g, int layout, int seq_bytes, int percpu)
{
	char one[2];
	memset(g, 0, sizeof *g);
	make_syms(percpu);
	/* junk first: text-like bytes and a false anchor */
	for (int i = 0; i < 4096; i++) g->b[g->n++] = (uint8_t)(i * 37 + 11);
	put(g, "0\0" "1\0" "2\0" "3\0" "4\0" "5\0" "6\0" "7\0" "8\0" "9\0" "junk", 24);
	if (layout != LAYOUT_LATER) put_addrs(g, layout, percpu);
	label(g, KT_NUM_SYMS);
	put_le(g, NSYM, 4);
	label(g, KT_NAMES);
	uint32_t markers[(NSYM + 255) / 256];
	size_t off = 0;
	for (int i = 0; i < NSYM; i++) {
		uint8_t enc[256];
		size_t l = 0;
		enc[l++] = (uint8_t)types[i];
		for (const char *p = names[i]; *p;) {
			if (!strncmp(p, "func_", 5)) enc[l++] = 1, p += 5;
			else if (!strncmp(p, "do_", 3)) enc[l++] = 2, p += 3;
			else enc[l++] = (uint8_t)*p++;
		}
		if (!(i & 255)) markers[i >> 8] = (uint32_t)off;
		if (l < 0x80) {
			g->b[g->n++] = (uint8_t)l;
			off += l + 1;
		} else {
			g->b[g->n++] = (uint8_t)((l & 0x7f) | 0x80);
			g->b[g->n++] = (uint8_t)(l >> 7);
			off += l + 2;
		}
		put(g, enc, l);
	}
	label(g, KT_MARKERS);
	for (int i = 0; i < (NSYM + 255) / 256; i++) put_le(g, markers[i], 4);
	if (seq_bytes && layout != LAYOUT_LATER) put_seqs(g, seq_bytes);
	label(g, KT_TOKEN_TABLE);
	uint16_t idx[256];
	size_t toff = 0;
	for (int i = 0; i < 256; i++) {
		const char *t = token(i, one);
		idx[i] = (uint16_t)toff;
		put(g, t, strlen(t) + 1);
		toff += strlen(t) + 1;
	}
	label(g, KT_TOKEN_INDEX);
	for (int i = 0; i < 256; i++) put_le(g, idx[i], 2);
	if (layout == LAYOUT_LATER) put_addrs(g, layout, percpu);
	if (seq_bytes && layout == LAYOUT_LATER) put_seqs(g, seq_bytes); /* last, as 6.12 has it */
	label(g, -1);
	for (int i = 0; i < 512; i++) g->b[g->n++] = (uint8_t)(i * 13);
}

static int all_match(const struct kallsyms *k)
{
	if (k->n != NSYM) return 0;
	for (int i = 0; i < NSYM; i++)
		if (k->syms[i].addr != addrs[i] || k->syms[i].type != types[i] || strcmp(ksyms_name(k, i), names[i]))
			return 0;
	return 1;
}

static struct gen g;

static void check_layout(int layout, int seq_bytes, int percpu, enum ksyms_addrs want)
{
	struct kallsyms k;
	build(&g, layout, seq_bytes, percpu);
	CHECK(ksyms_find(&k, g.b, g.n, AT) == 0);
	CHECK(all_match(&k));
	CHECK(k.addrs == want);
	CHECK(k.seq_bytes == seq_bytes);
	CHECK(k.at[KT_NAMES] == AT + g.at[KT_NAMES]);
	CHECK(k.at[KT_TOKEN_TABLE] == AT + g.at[KT_TOKEN_TABLE]);
	CHECK(k.at[KT_ADDRS] == AT + g.at[KT_ADDRS]);
	CHECK(!seq_bytes || k.at[KT_SEQS] == AT + g.at[KT_SEQS]);
	if (!all_match(&k)) fprintf(stderr, "  layout %d seqs %d percpu %d: %s\n", layout, seq_bytes, percpu, k.errstr);
	ksyms_free(&k);
}

/* A hostile variant must fail with one line naming kallsyms, never decode garbage. */
static void check_refused(const char *what, const char *want_in_err)
{
	struct kallsyms k;
	int rc = ksyms_find(&k, g.b, g.n, AT);
	CHECK(rc == -1);
	CHECK(k.n == 0 && k.syms == NULL);
	CHECK(strstr(k.errstr, want_in_err) != NULL);
	CHECK(strchr(k.errstr, '\n') == NULL);
	if (rc != -1 || !strstr(k.errstr, want_in_err)) fprintf(stderr, "  %s: rc %d \"%s\"\n", what, rc, k.errstr);
	ksyms_free(&k);
}

void test_kallsyms(void)
{
	check_layout(LAYOUT_61, 0, 0, KSYMS_RELATIVE);
	check_layout(LAYOUT_61, 3, 1, KSYMS_RELATIVE_PERCPU);    /* Debian's 6.1 (seqs backported) */
	check_layout(LAYOUT_LATER, 3, 1, KSYMS_RELATIVE_PERCPU); /* 6.12 on x86_64 */
	check_layout(LAYOUT_LATER, 3, 0, KSYMS_RELATIVE);        /* arm64 */
	check_layout(LAYOUT_61, 4, 0, KSYMS_RELATIVE);           /* 6.2-rc's 4-byte seqs */
	check_layout(LAYOUT_ABS, 0, 0, KSYMS_ABSOLUTE);

	/* The tables at an address that is not 8-aligned relative to the blob's start: shift it. */
	build(&g, LAYOUT_61, 3, 1);
	{
		struct kallsyms k;
		CHECK(ksyms_find(&k, g.b, g.n, AT + 4) == -1); /* the labels are no longer 8-aligned */
		ksyms_free(&k);
	}

	struct { int off; uint8_t val; const char *what, *err; } hostile[] = {
		{ KT_MARKERS, 0, "a marker off by one", "agree" },
		{ KT_TOKEN_INDEX, 0, "a token index entry off by one", "no kallsyms tables" },
		{ KT_NAMES, 0, "an entry's length one short", "agree" },
		{ KT_SEQS, 0, "seqs_of_names out of name order", "in order" },
		{ KT_ADDRS, 0, "offsets unsorted", "sorted" },
		{ KT_NUM_SYMS, 0, "num_syms one more", "agree" },
	};
	for (size_t h = 0; h < sizeof hostile / sizeof *hostile; h++) {
		build(&g, LAYOUT_61, 3, 1);
		uint8_t *p = g.b + g.at[hostile[h].off];
		switch (hostile[h].off) {
		case KT_MARKERS: p[4]++; break;                   /* markers[1] */
		case KT_TOKEN_INDEX: p[2 * 0x41]++; break;        /* token 'A' */
		case KT_NAMES: p[0]--; break;                     /* the first entry */
		case KT_SEQS: { uint8_t t[3]; memcpy(t, p, 3); memcpy(p, p + 3, 3); memcpy(p + 3, t, 3); break; }
		case KT_ADDRS: { uint8_t t[4]; memcpy(t, p + 40, 4); memcpy(p + 40, p + 400, 4); memcpy(p + 400, t, 4); break; }
		case KT_NUM_SYMS: p[0]++; break;
		}
		check_refused(hostile[h].what, hostile[h].err);
	}
	/* A control byte in a name: refused, not printed. */
	build(&g, LAYOUT_61, 3, 1);
	g.b[g.at[KT_NAMES] + 3] = 0x7f; /* a token that is empty in the table... */
	check_refused("a name with a byte standing for nothing printable", "agree");
	/* Truncated anywhere before the token index ends: refused. */
	build(&g, LAYOUT_61, 3, 1);
	size_t full = g.n;
	for (size_t cut = g.at[KT_ADDRS]; cut < g.at[KT_TOKEN_INDEX] + 512; cut += 997) {
		g.n = cut;
		struct kallsyms k;
		CHECK(ksyms_find(&k, g.b, g.n, AT) == -1);
		ksyms_free(&k);
	}
	g.n = full;
	/* Later layout cut inside its offsets: no addresses, so refused. */
	build(&g, LAYOUT_LATER, 3, 0);
	g.n = g.at[KT_ADDRS] + 100;
	check_refused("offsets cut short", "sorted");
	/* Nothing at all. */
	memset(g.b, 0x90, 65536);
	g.n = 65536;
	check_refused("text only", "no kallsyms tables");
	CHECK(ksyms_anchor(g.b, g.n) == -1);
	build(&g, LAYOUT_61, 0, 0);
	CHECK(ksyms_anchor(g.b, g.n) == 4096); /* the false one, first */
}
