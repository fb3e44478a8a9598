/* SPDX-License-Identifier: MIT */
/* topview.c: what `top` shows, decided without I/O -- counts per function, sorted rows, keys, layout. */
#include "topview.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The function of key, added if new; NULL when the table is full (counted) or on out of memory
 * (*oom set). */
static struct topfn *find(struct topview *v, uint64_t key, int *oom)
{
	if (!v->fns.stride) hash_init(&v->fns, sizeof(struct topfn));
	if (v->fns.n == TOPVIEW_MAX_FNS) {   /* full: only functions already counted still count */
		struct hash_item *it = hash_find(&v->fns, &key, sizeof key);
		if (!it) v->lost++;
		return it ? hash_value(it) : NULL;
	}
	struct topfn *f = hash_get(&v->fns, &key, sizeof key, NULL);
	if (!f) *oom = 1;
	return f;
}

int topview_add(struct topview *v, const struct sample *s)
{
	int oom = 0;
	uint64_t serial = ++v->samples;
	for (int i = 0; i < s->n; i++) {
		/* the rule report.c names frames by: a return address by the call before it */
		const struct sym *sym = v->syms ? syms_frame(v->syms, s->frames[i], i > 0 && !unwind_is_exact(s->exact, i)) : NULL;
		struct topfn *f = find(v, sym ? sym->addr : s->frames[i], &oom);
		if (oom) return -1;
		if (!f) continue;
		if (i == 0) f->self++;
		if (f->seen != serial) { /* a recursive function counts once per sample */
			f->seen = serial;
			f->total++;
		}
	}
	return 0;
}

size_t topview_rows(const struct topview *v, struct toprow *out, size_t cap)
{
	size_t n = v->fns.n < cap ? v->fns.n : cap;
	for (size_t i = 0; i < n; i++) {
		const struct hash_item *it = hash_at(&v->fns, i);
		const struct topfn *f = hash_value(it);
		uint64_t key;
		memcpy(&key, it->key, sizeof key);
		const struct sym *sym = v->syms ? syms_lookup(v->syms, key) : NULL;
		if (sym && sym->addr == key) syms_name(sym, out[i].name, sizeof out[i].name);
		else snprintf(out[i].name, sizeof out[i].name, "0x%llx", (unsigned long long)key);
		out[i].key = key;
		out[i].self = f->self;
		out[i].total = f->total;
	}
	return n;
}

static int cmp_rows(const struct toprow *x, const struct toprow *y, enum top_sort by)
{
	uint64_t a = by == TOP_BY_SELF ? x->self : x->total, b = by == TOP_BY_SELF ? y->self : y->total;
	if (a != b) return a > b ? -1 : 1;
	int c = strcmp(x->name, y->name);
	if (c) return c;
	return x->key < y->key ? -1 : x->key > y->key;
}

static int by_self(const void *a, const void *b)
{
	return cmp_rows(a, b, TOP_BY_SELF);
}

static int by_total(const void *a, const void *b)
{
	return cmp_rows(a, b, TOP_BY_TOTAL);
}

void toprows_sort(struct toprow *r, size_t n, enum top_sort by)
{
	if (n) qsort(r, n, sizeof *r, by == TOP_BY_SELF ? by_self : by_total);
}

void topview_free(struct topview *v)
{
	hash_free(&v->fns);
}

enum top_key_action top_key(struct top_state *st, int ch)
{
	switch (ch) {
	case 'q': case 'Q': return TOPK_QUIT;
	case 's': case 'S': st->sort = TOP_BY_SELF; return TOPK_REDRAW;
	case 't': case 'T': st->sort = TOP_BY_TOTAL; return TOPK_REDRAW;
	case '>': case '\t': st->sort = st->sort == TOP_BY_SELF ? TOP_BY_TOTAL : TOP_BY_SELF; return TOPK_REDRAW;
	case 'c': case 'C': st->chains = !st->chains; return TOPK_REDRAW;
	case 'p': case 'P': case ' ':
		st->paused = !st->paused;
		return st->paused ? TOPK_PAUSE : TOPK_RESUME;
	default: return TOPK_NONE;
	}
}

struct top_layout top_layout(int height, int header, size_t nfn, int chains, int chain_text)
{
	struct top_layout l = { 0, 0 };
	int avail = height - header;
	if (avail <= 1) return l;                         /* no room past the header (or only the title) */
	long fn_need = 1 + (long)(nfn < (size_t)avail ? nfn : (size_t)avail); /* the title and every row */
	long ch_need = chains && chain_text > 0 ? 1 + chain_text : 0;          /* a blank line and the text */
	long fn_give = fn_need, ch_give = ch_need;
	if (fn_need + ch_need > avail) {                  /* too tall: the functions keep half at least */
		fn_give = avail - ch_need > (avail + 1) / 2 ? avail - ch_need : (avail + 1) / 2;
		if (fn_give > fn_need) fn_give = fn_need;
		ch_give = avail - fn_give;
	}
	l.fn_rows = (int)(fn_give - 1);
	l.chain_lines = ch_give > 1 ? (int)(ch_give - 1) : 0;
	return l;
}

size_t top_cut(const char *p, size_t n, int cols)
{
	if (cols <= 0) return n;
	int chars = 0;
	for (size_t cut = 0; cut < n; cut++)
		if (((unsigned char)p[cut] & 0xc0) != 0x80 && ++chars > cols) return cut;
	return n;
}
