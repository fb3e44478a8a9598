/* SPDX-License-Identifier: MIT */
/* summary.c: the run's counters as one table of {key, label, value}, rendered for people, as
 * "key value" lines and as JSON. Pure: text in buffers, no I/O. */
#include "summary.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void summary_init(struct summary *t)
{
	t->n = 0;
	t->used = 0;
	t->lost = 0;
}

/* A copy of s in the pool (NULL stays NULL); NULL with t->lost counted when full. */
static const char *keep(struct summary *t, const char *s, int *full)
{
	if (!s) return NULL;
	size_t n = strlen(s) + 1;
	if (t->used + n > sizeof t->pool) {
		*full = 1;
		return NULL;
	}
	char *p = t->pool + t->used;
	memcpy(p, s, n);
	t->used += n;
	return p;
}

static struct counter *add(struct summary *t, const char *key, const char *label, int type)
{
	int full = t->n >= SUMMARY_MAX;
	size_t mark = t->used;
	struct counter *c = full ? NULL : &t->c[t->n];
	if (c) {
		memset(c, 0, sizeof *c);
		c->key = keep(t, key, &full);
		c->label = keep(t, label, &full);
	}
	if (full) {
		t->used = mark;
		t->lost++;
		return NULL;
	}
	c->type = type;
	c->hdiv = 1;
	t->n++;
	return c;
}

void summary_u64(struct summary *t, const char *key, const char *label, uint64_t v)
{
	struct counter *c = add(t, key, label, SV_U64);
	if (c) c->v.u = v;
}

void summary_i64(struct summary *t, const char *key, const char *label, int64_t v)
{
	struct counter *c = add(t, key, label, SV_I64);
	if (c) c->v.i = v;
}

void summary_real(struct summary *t, const char *key, const char *label, int prec, double v)
{
	struct counter *c = add(t, key, label, SV_REAL);
	if (!c) return;
	c->v.f = v;
	c->prec = c->hprec = prec;
}

void summary_str(struct summary *t, const char *key, const char *label, const char *v)
{
	int full = 0;
	size_t mark = t->used;
	const char *s = keep(t, v ? v : "", &full);
	struct counter *c = full ? NULL : add(t, key, label, SV_STR);
	if (!c) {
		t->lost += full; /* add counted its own */
		t->used = mark;
		return;
	}
	c->v.s = s;
}

void summary_null(struct summary *t, const char *key)
{
	struct counter *c = add(t, key, NULL, SV_NULL);
	if (c) c->json_only = 1;
}

void summary_json_only(struct summary *t)
{
	if (t->n) t->c[t->n - 1].json_only = 1;
}

void summary_text(struct summary *t, const char *text)
{
	add(t, NULL, text, SV_TEXT);
}

void summary_scale(struct summary *t, double div, int prec)
{
	if (!t->n) return;
	t->c[t->n - 1].hdiv = div;
	t->c[t->n - 1].hprec = prec;
}

void summary_hide(struct summary *t)
{
	if (t->n) t->c[t->n - 1].label = NULL;
}

const struct counter *summary_find(const struct summary *t, const char *key)
{
	for (int i = 0; i < t->n; i++)
		if (t->c[i].key && !strcmp(t->c[i].key, key)) return &t->c[i];
	return NULL;
}

/* Append with bounds: *o never passes cap - 1. */
#define PUT(...) do { if (*o < cap) *o += (size_t)snprintf(out + *o, cap - *o, __VA_ARGS__); \
		      if (*o >= cap) *o = cap ? cap - 1 : 0; } while (0)

/* The value as key=value and JSON write it. */
static void value_kv(const struct counter *c, char *out, size_t cap, size_t *o)
{
	switch (c->type) {
	case SV_U64: PUT("%llu", (unsigned long long)c->v.u); break;
	case SV_I64: PUT("%lld", (long long)c->v.i); break;
	case SV_REAL: PUT("%.*f", c->prec, c->v.f); break;
	case SV_STR: PUT("%s", c->v.s); break;
	}
}

/* The value as people read it. */
static void value_human(const struct counter *c, char *out, size_t cap, size_t *o)
{
	if (c->type == SV_REAL && c->hdiv == 1) PUT("%.*f", c->hprec, c->v.f);
	else if (c->type == SV_REAL) PUT("%.*f", c->hprec, c->v.f / c->hdiv);
	else if (c->hdiv != 1 && c->type == SV_U64) PUT("%.*f", c->hprec, (double)c->v.u / c->hdiv);
	else if (c->hdiv != 1 && c->type == SV_I64) PUT("%.*f", c->hprec, (double)c->v.i / c->hdiv);
	else value_kv(c, out, cap, o);
}

static int is_one(const struct counter *c)
{
	return (c->type == SV_U64 && c->v.u == 1) || (c->type == SV_I64 && c->v.i == 1) ||
	       (c->type == SV_REAL && c->v.f == 1);
}

void summary_human(const struct summary *t, char *out, size_t cap)
{
	size_t n = strlen(out), *o = &n;
	for (int i = 0; i < t->n; i++) {
		const struct counter *c = &t->c[i];
		if (!c->label) continue;
		if (c->type == SV_TEXT) { /* literal: no placeholders (a module's name may hold a %) */
			PUT("%s", c->label);
			continue;
		}
		for (const char *p = c->label; *p; p++) {
			if (p[0] == '%' && p[1] == 'v' && c->type != SV_TEXT) {
				value_human(c, out, cap, o);
				p++;
			} else if (p[0] == '%' && p[1] == 's') {
				PUT("%s", is_one(c) ? "" : "s");
				p++;
			} else if (p[0] == '%' && p[1] == '%') {
				PUT("%%");
				p++;
			} else {
				PUT("%c", *p);
			}
		}
	}
}

void summary_kv(const struct summary *t, char *out, size_t cap)
{
	size_t n = strlen(out), *o = &n;
	for (int i = 0; i < t->n; i++) {
		const struct counter *c = &t->c[i];
		if (!c->key || c->json_only) continue;
		PUT("%s%s", c->key, c->type == SV_STR && !c->v.s[0] ? "" : " ");
		value_kv(c, out, cap, o);
		PUT("\n");
	}
	if (t->lost) PUT("summary_rows_lost %d\n", t->lost);
}

/* The code point of the UTF-8 sequence at s (its length in *len), or -1 if it is not one. */
static long utf8_point(const unsigned char *s, int *len)
{
	int n = s[0] >= 0xf0 && s[0] < 0xf5 ? 4 : s[0] >= 0xe0 ? 3 : s[0] >= 0xc2 && s[0] < 0xe0 ? 2 : 0;
	if (s[0] >= 0xf5 || !n) return -1;
	long cp = s[0] & (0x7f >> n);
	for (int i = 1; i < n; i++) {
		if ((s[i] & 0xc0) != 0x80) return -1;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((n == 3 && (cp < 0x800 || (cp >= 0xd800 && cp < 0xe000))) || (n == 4 && (cp < 0x10000 || cp > 0x10ffff)))
		return -1;
	*len = n;
	return cp;
}

/* A JSON string in ASCII: quotes, backslashes and control bytes escaped, UTF-8 as \uNNNN (pairs
 * past U+FFFF), a byte that is no UTF-8 as U+FFFD. */
static void json_string(const char *str, char *out, size_t cap, size_t *o)
{
	const unsigned char *s = (const unsigned char *)str;
	PUT("\"");
	while (*s) {
		int len = 1;
		long cp = *s < 0x80 ? *s : utf8_point(s, &len);
		if (cp == '"' || cp == '\\') PUT("\\%c", (int)cp);
		else if (cp >= 0x20 && cp < 0x7f) PUT("%c", (int)cp);
		else if (cp < 0) PUT("\\ufffd");
		else if (cp < 0x10000) PUT("\\u%04lx", cp);
		else PUT("\\u%04lx\\u%04lx", 0xd800 + ((cp - 0x10000) >> 10), 0xdc00 + ((cp - 0x10000) & 0x3ff));
		s += len;
	}
	PUT("\"");
}

static const struct summary *sort_table; /* qsort's comparison has no argument */

static int by_key(const void *a, const void *b)
{
	return strcmp(sort_table->c[*(const int *)a].key, sort_table->c[*(const int *)b].key);
}

void summary_json(const struct summary *t, char *out, size_t cap)
{
	size_t n = strlen(out), *o = &n;
	int idx[SUMMARY_MAX], k = 0;
	for (int i = 0; i < t->n; i++)
		if (t->c[i].key) idx[k++] = i;
	sort_table = t;
	qsort(idx, (size_t)k, sizeof idx[0], by_key);
	PUT("{\"schema\": \"gdbsample summary\", \"schema_version\": %d, \"summary\": {", SUMMARY_JSON_VERSION);
	int first = 1, lost_done = !t->lost;
	for (int j = 0; j < k; j++) {
		const struct counter *c = &t->c[idx[j]];
		if (!lost_done && strcmp("summary_rows_lost", c->key) < 0) { /* in its sorted place */
			PUT("%s\"summary_rows_lost\": %d", first ? "" : ", ", t->lost);
			lost_done = 1;
			first = 0;
		}
		PUT("%s", first ? "" : ", ");
		first = 0;
		json_string(c->key, out, cap, o);
		PUT(": ");
		if (c->type == SV_STR) json_string(c->v.s, out, cap, o);
		else if (c->type == SV_NULL || (c->type == SV_REAL && !isfinite(c->v.f))) PUT("null");
		else value_kv(c, out, cap, o);
	}
	if (!lost_done) PUT("%s\"summary_rows_lost\": %d", first ? "" : ", ", t->lost);
	PUT("}}\n");
}
