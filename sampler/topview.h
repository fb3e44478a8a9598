/* SPDX-License-Identifier: MIT */
/* topview.h: what `top` shows, decided without I/O -- samples per function (self and total), the
 * sorted rows, the keys and the screen's layout -- so tests feed literals. */
#ifndef TOPVIEW_H
#define TOPVIEW_H
#include <stddef.h>
#include <stdint.h>
#include "hash.h"
#include "sample.h"
#include "symbols.h"

#define TOPVIEW_MAX_FNS 65536   /* functions counted; frames of any further one are counted as lost */
#define TOPVIEW_NAME 128        /* bytes of a row's name, NUL included */

/* One function's counts: the value of its key (its symbol's address, or the raw pc -- a return
 * address -- where none is known) in topview.fns. */
struct topfn {
	uint64_t self;     /* samples with it as the leaf */
	uint64_t total;    /* samples with it anywhere in the chain (once per sample, recursion too) */
	uint64_t seen;     /* the serial of the last sample counted into total */
};

/* Samples per function since the start. Zero-initialised is empty. */
struct topview {
	const struct symtab *syms;  /* names and function starts, or NULL */
	struct hash fns;            /* uint64_t key -> struct topfn, in order of first sight (fns.n of them) */
	uint64_t samples;           /* samples added: the denominator of every share */
	uint64_t lost;              /* frames not counted: the table was full (TOPVIEW_MAX_FNS) */
};

/* One row of the table. */
struct toprow {
	char name[TOPVIEW_NAME];    /* "name", "name [module]", or "0x..." for a raw pc */
	uint64_t key;               /* the function's key: the last tie-break (two functions of one name) */
	uint64_t self, total;       /* samples, as topfn */
};

enum top_sort { TOP_BY_SELF, TOP_BY_TOTAL };

/* Count one sample: its leaf's self and total, each other function of its chain's total (a
 * caller named by return address - 1, an interrupted pc by itself). -1: out of memory. */
int topview_add(struct topview *v, const struct sample *s);
/* Every function's row into out (at most cap), unsorted; -> how many. */
size_t topview_rows(const struct topview *v, struct toprow *out, size_t cap);
/* Sort rows by self or total samples, most first; ties by name, then by key. */
void toprows_sort(struct toprow *r, size_t n, enum top_sort by);
void topview_free(struct topview *v);

/* What the viewer chose with the keys. */
struct top_state {
	enum top_sort sort;   /* the column rows are sorted by */
	int chains;           /* 1: the hottest chains are shown below the functions */
	int paused;           /* 1: the view is frozen (sampling goes on) */
};
enum top_key_action { TOPK_NONE, TOPK_REDRAW, TOPK_QUIT, TOPK_PAUSE, TOPK_RESUME };
/* A key pressed: how st changes, and what to do. q/Q quit; s self, t total; > or tab the other
 * sort; c chains on/off; p or space pause/resume; anything else nothing. */
enum top_key_action top_key(struct top_state *st, int ch);

/* The full-screen view's lines: the header, then the functions' title and rows, then the chains. */
struct top_layout {
	int fn_rows;      /* function rows shown */
	int chain_lines;  /* lines of the chains' text shown (0 when hidden or no room) */
};
/* For a screen of height lines, header lines on top, nfn functions and (chains on) chain_text
 * lines of chains (its title included): rows cut to the height, never the header. */
struct top_layout top_layout(int height, int header, size_t nfn, int chains, int chain_text);
/* The bytes of the first cols characters of the n bytes at p (UTF-8: continuation bytes are
 * free); cols 0: all n. */
size_t top_cut(const char *p, size_t n, int cols);

#endif
