/* SPDX-License-Identifier: MIT */
/* bpcount.c: `gdbsample count`'s decisions -- which breakpoint a stop is at, the rate cap's windows, the table. */
#include "bpcount.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void bpc_init(struct bpcount *c, uint64_t cap, int64_t now)
{
	memset(c, 0, sizeof *c);
	c->cap = cap;
	c->win_start = now;
}

int bpc_add(struct bpcount *c, const char *name, uint64_t addr)
{
	if (c->n == BPC_MAX) return -1;
	if (bpc_find(c, addr) >= 0) return -2;
	struct bpc_fn *f = &c->fn[c->n++];
	size_t len = strlen(name);
	if (len >= sizeof f->name) /* cut, visibly */
		snprintf(f->name, sizeof f->name, "%.*s...", (int)sizeof f->name - 4, name);
	else
		memcpy(f->name, name, len + 1);
	f->addr = addr;
	f->hits = 0;
	return 0;
}

int bpc_find(const struct bpcount *c, uint64_t pc)
{
	for (int i = 0; i < c->n; i++)
		if (c->fn[i].addr == pc) return i;
	return -1;
}

/* Move the window on to the one holding now (a window with no hit is skipped whole). */
static void roll(struct bpcount *c, int64_t now)
{
	if (now - c->win_start < BPC_WINDOW_NS) return;
	c->win_start += (now - c->win_start) / BPC_WINDOW_NS * BPC_WINDOW_NS;
	c->win_hits = 0;
}

int bpc_hit(struct bpcount *c, int i, int64_t now)
{
	roll(c, now);
	c->fn[i].hits++;
	c->hits++;
	c->win_hits++;
	if (c->cap && c->win_hits >= c->cap) {
		c->capped++;
		return 1;
	}
	return 0;
}

int bpc_due(struct bpcount *c, int64_t now)
{
	roll(c, now);
	if (c->armed) return 0;
	return !c->cap || c->win_hits < c->cap;
}

int64_t bpc_window_end(const struct bpcount *c)
{
	return c->win_start + BPC_WINDOW_NS;
}

void bpc_set_armed(struct bpcount *c, int armed, int64_t now)
{
	if (armed == c->armed) return;
	if (armed) c->armed_since = now, c->armings++;
	else c->armed_ns += now - c->armed_since;
	c->armed = armed;
}

int64_t bpc_armed_ns(const struct bpcount *c, int64_t now)
{
	return c->armed_ns + (c->armed ? now - c->armed_since : 0);
}

static const struct bpcount *order_of; /* qsort has no context argument */

static int by_hits(const void *a, const void *b)
{
	const struct bpc_fn *x = &order_of->fn[*(const int *)a], *y = &order_of->fn[*(const int *)b];
	if (x->hits != y->hits) return x->hits > y->hits ? -1 : 1;
	int r = strcmp(x->name, y->name);
	if (r) return r;
	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

void bpc_order(const struct bpcount *c, int *order)
{
	for (int i = 0; i < c->n; i++) order[i] = i;
	order_of = c;
	qsort(order, (size_t)c->n, sizeof *order, by_hits);
	order_of = NULL;
}

void bpc_table(const struct bpcount *c, int64_t armed_ns, char *out, size_t cap)
{
	int order[BPC_MAX];
	size_t off = strlen(out);
	double secs = armed_ns / 1e9;
#define PUT(...) do { \
		if (off < cap) { \
			int k_ = snprintf(out + off, cap - off, __VA_ARGS__); \
			if (k_ > 0) off += (size_t)k_ < cap - off ? (size_t)k_ : cap - off - 1; \
		} \
	} while (0)
	PUT("%12s %12s  %s\n", "HITS", "HITS/S", "FUNCTION");
	bpc_order(c, order);
	for (int k = 0; k < c->n; k++) {
		const struct bpc_fn *f = &c->fn[order[k]];
		if (secs > 0) PUT("%12llu %12.1f  %s\n", (unsigned long long)f->hits, f->hits / secs, f->name);
		else PUT("%12llu %12s  %s\n", (unsigned long long)f->hits, "-", f->name);
	}
#undef PUT
}
