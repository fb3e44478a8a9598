/* SPDX-License-Identifier: MIT */
/* report.c: the text report shared with the in-guest `profile` (format: docs/report-format.md). */
#include "writer.h"
#include "err.h"
#include <stdlib.h>

/*
 *   profiled 2000 ms
 *   4000 samples on 2 cpus, 0 dropped, source gdbstub 100 Hz
 *   31.2% 1280 MemCpy+0x1a..0x3e
 *           <- Caller+0x44
 * Samples fold by their whole chain: the leaf by symbol (keeping the span of offsets seen), the
 * callers by exact return address. Chains print by count, most first; ties by text.
 */

/* One folded chain. */
struct chain {
	uint64_t leaf;        /* leaf symbol's address, or the raw pc when unknown */
	int known;            /* leaf symbol known */
	uint64_t lo, hi;      /* offsets (known) seen in the leaf */
	uint64_t count;       /* samples */
	int n;                /* callers */
	uint64_t *callers;    /* return addresses, innermost first */
	uint64_t exact[4];    /* the sample's exact-frame bits (bit k+1: callers[k] is an interrupted pc) */
	uint64_t hash;        /* of leaf + callers */
};

/* One task's samples (attribution on). */
struct tstat {
	struct task_id id;    /* pid, tgid, name (ptr unused) */
	int known;            /* 0: the samples with no task */
	uint64_t count;       /* samples */
	uint64_t user;        /* ...in user mode */
};

#define REPORT_TASKS_SHOWN 16

struct report {
	struct writer w;            /* interface, first */
	FILE *out;                  /* destination */
	const struct symtab *syms;  /* may be NULL */
	int chains;                 /* how many to print */
	struct chain *c;            /* all chains */
	size_t n, cap;              /* used / allocated */
	size_t *tab;                /* open-addressing index into c (+1; 0 = empty) */
	size_t tabcap;              /* power of two */
	uint64_t total;             /* samples added */
	struct tstat *t;            /* tasks seen (linear: a profile has tens, not thousands) */
	size_t nt, tcap;
	int any_task;               /* some sample had a task */
};

/* Count a sample for its task. */
static int task_add(struct report *r, const struct sample *s)
{
	if (s->has_task) r->any_task = 1;
	for (size_t i = 0; i < r->nt; i++) {
		struct tstat *t = &r->t[i];
		if (t->known == s->has_task && (!t->known || (t->id.pid == s->task.pid && t->id.tgid == s->task.tgid &&
							       !memcmp(t->id.comm, s->task.comm, TASK_COMM_LEN)))) {
			t->count++;
			t->user += (s->flags & SF_USER) != 0;
			if (i) { /* move to front: the busy ones stay cheap to find */
				struct tstat x = *t;
				memmove(r->t + 1, r->t, i * sizeof *r->t);
				r->t[0] = x;
			}
			return 0;
		}
	}
	if (r->nt == r->tcap) {
		size_t ncap = r->tcap ? r->tcap * 2 : 32;
		struct tstat *nt = realloc(r->t, ncap * sizeof *nt);
		if (!nt) return -1;
		r->t = nt;
		r->tcap = ncap;
	}
	memmove(r->t + 1, r->t, r->nt * sizeof *r->t);
	r->t[0] = (struct tstat){ s->task, s->has_task, 1, (s->flags & SF_USER) != 0 };
	r->nt++;
	return 0;
}

static int taskcmp(const void *a, const void *b)
{
	const struct tstat *x = a, *y = b;
	if (x->count != y->count) return x->count > y->count ? -1 : 1;
	if (x->known != y->known) return y->known - x->known;
	if (x->id.pid != y->id.pid) return x->id.pid < y->id.pid ? -1 : 1;
	return memcmp(x->id.comm, y->id.comm, TASK_COMM_LEN);
}

/* "task P% COUNT NAME pid P tgid T, user U%" lines, most samples first, before the chains. */
static void print_tasks(struct report *r)
{
	if (!r->any_task) return;
	if (r->nt) qsort(r->t, r->nt, sizeof *r->t, taskcmp);
	size_t shown = r->nt < REPORT_TASKS_SHOWN ? r->nt : REPORT_TASKS_SHOWN;
	for (size_t i = 0; i < shown; i++) {
		const struct tstat *t = &r->t[i];
		char c[TASK_COMM_LEN * 4 + 1];
		double pct = 100.0 * (double)t->count / (double)r->total, user = 100.0 * (double)t->user / (double)t->count;
		if (!t->known) {
			fprintf(r->out, "task %.1f%% %llu [unknown], user %.1f%%\n", pct, (unsigned long long)t->count, user);
			continue;
		}
		task_comm_format(t->id.comm, c);
		fprintf(r->out, "task %.1f%% %llu %s pid %d tgid %d, user %.1f%%\n", pct, (unsigned long long)t->count,
			c, t->id.pid, t->id.tgid, user);
	}
	if (r->nt > shown) fprintf(r->out, "task (%zu more not shown)\n", r->nt - shown);
}

static uint64_t mix(uint64_t h, uint64_t v)
{
	return (h ^ v) * 0x100000001b3ull;
}

/* Rebuild the index at ncap slots (to grow, or after sorting moved the chains). */
static int reindex(struct report *r, size_t ncap)
{
	size_t *nt = calloc(ncap, sizeof *nt);
	if (!nt) return -1;
	for (size_t i = 0; i < r->n; i++) {
		size_t k = r->c[i].hash & (ncap - 1);
		while (nt[k]) k = (k + 1) & (ncap - 1);
		nt[k] = i + 1;
	}
	free(r->tab);
	r->tab = nt;
	r->tabcap = ncap;
	return 0;
}

static int rep_add(struct writer *w, const struct sample *s)
{
	struct report *r = (struct report *)w;
	if (task_add(r, s) < 0) goto oom;
	const struct sym *sym = r->syms ? syms_lookup(r->syms, s->frames[0]) : NULL;
	uint64_t leaf = sym ? sym->addr : s->frames[0];
	uint64_t h = mix(0xcbf29ce484222325ull, leaf);
	for (int i = 1; i < s->n; i++) h = mix(h, s->frames[i]);
	h = mix(h, (uint64_t)s->n);
	for (int i = 0; i < 4; i++) h = mix(h, s->exact[i]);
	if (r->n * 2 >= r->tabcap && reindex(r, r->tabcap ? r->tabcap * 2 : 1024) < 0) goto oom;
	size_t k = h & (r->tabcap - 1);
	for (; r->tab[k]; k = (k + 1) & (r->tabcap - 1)) {
		struct chain *c = &r->c[r->tab[k] - 1];
		if (c->hash != h || c->leaf != leaf || c->n != s->n - 1 ||
		    memcmp(c->callers, s->frames + 1, (size_t)c->n * 8) || memcmp(c->exact, s->exact, sizeof c->exact))
			continue;
		c->count++;
		if (sym) {
			uint64_t off = s->frames[0] - sym->addr;
			if (off < c->lo) c->lo = off;
			if (off > c->hi) c->hi = off;
		}
		r->total++;
		return 0;
	}
	if (r->n == r->cap) {
		size_t ncap = r->cap ? r->cap * 2 : 256;
		struct chain *nc = realloc(r->c, ncap * sizeof *nc);
		if (!nc) goto oom;
		r->c = nc;
		r->cap = ncap;
	}
	struct chain *c = &r->c[r->n];
	c->leaf = leaf;
	c->known = sym != NULL;
	c->lo = c->hi = sym ? s->frames[0] - sym->addr : 0;
	c->count = 1;
	c->n = s->n - 1;
	c->hash = h;
	memcpy(c->exact, s->exact, sizeof c->exact);
	c->callers = malloc((size_t)(c->n ? c->n : 1) * 8);
	if (!c->callers) goto oom;
	memcpy(c->callers, s->frames + 1, (size_t)c->n * 8);
	r->tab[k] = ++r->n;
	r->total++;
	return 0;
oom:
	ERR_SET(w, ERR_SYS, "out of memory");
	return -1;
}

/* Caller frames are return addresses: name the function holding the call (addr - 1), print the
 * offset of the return address itself, as a panic backtrace does. An interrupted pc (exact)
 * is named by itself. */
static void fmt_caller(const struct symtab *t, uint64_t a, int exact, char *out, size_t cap)
{
	const struct sym *s = t ? syms_frame(t, a, !exact) : NULL;
	if (s) syms_name_off(s, a - s->addr, out, cap); /* a module's: "f+0x10 [module]", as perf */
	else snprintf(out, cap, "0x%llx", (unsigned long long)a);
}

static void fmt_leaf(const struct report *r, const struct chain *c, char *out, size_t cap)
{
	const struct sym *s = c->known ? syms_lookup(r->syms, c->leaf) : NULL;
	if (!s) snprintf(out, cap, "0x%llx", (unsigned long long)c->leaf);
	else if (c->lo == c->hi) syms_name_off(s, c->lo, out, cap);
	else snprintf(out, cap, "%s+0x%llx..0x%llx%s%s%s", s->name, (unsigned long long)c->lo,
		      (unsigned long long)c->hi, s->mod ? " [" : "", s->mod ? s->mod : "", s->mod ? "]" : "");
}

static const struct report *sort_ctx;

static int chaincmp(const void *a, const void *b)
{
	const struct chain *x = a, *y = b;
	char fx[256], fy[256];
	if (x->count != y->count) return x->count > y->count ? -1 : 1;
	fmt_leaf(sort_ctx, x, fx, sizeof fx);
	fmt_leaf(sort_ctx, y, fy, sizeof fy);
	int c = strcmp(fx, fy);
	if (c) return c;
	for (int i = 0; i < x->n && i < y->n; i++)
		if (x->callers[i] != y->callers[i]) return x->callers[i] < y->callers[i] ? -1 : 1;
	return x->n - y->n;
}

/* One header line: control bytes (a file name may hold a newline or a terminal escape) as \xNN,
 * so the report keeps its line structure for gdbsample-analyze compare. */
static void header_line(FILE *out, const char *prefix, const char *text)
{
	fputs(prefix, out);
	for (const char *c = text; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f) fprintf(out, "\\x%02x", (unsigned char)*c);
		else fputc(*c, out);
	fputc('\n', out);
}

static int rep_finish(struct writer *w, const struct run_info *ri)
{
	struct report *r = (struct report *)w;
	char buf[256];
	fprintf(r->out, "profiled %lld ms\n", (long long)(ri->duration_ns / 1000000));
	fprintf(r->out, "%llu samples on %d cpus, %llu dropped, source gdbstub %d Hz\n",
		(unsigned long long)r->total, ri->ncpu, (unsigned long long)ri->dropped, ri->rate_hz);
	if (ri->attach) header_line(r->out, "attached ", ri->attach);
	if (ri->kernel) header_line(r->out, "", ri->kernel);
	print_tasks(r);
	if (!r->total) {
		if (ri->idle) fprintf(r->out, "no samples: all %llu were idle (--idle keeps them)\n",
				      (unsigned long long)ri->idle);
		else fprintf(r->out, "no samples\n");
	}
	sort_ctx = r;
	if (r->n) qsort(r->c, r->n, sizeof *r->c, chaincmp); /* qsort(NULL, 0) is undefined */
	if (r->tabcap && reindex(r, r->tabcap) < 0) { /* `top` keeps adding after a finish */
		ERR_SET(w, ERR_SYS, "out of memory");
		return -1;
	}
	size_t shown = r->n < (size_t)r->chains ? r->n : (size_t)r->chains;
	for (size_t i = 0; i < shown; i++) {
		const struct chain *c = &r->c[i];
		fmt_leaf(r, c, buf, sizeof buf);
		fprintf(r->out, "%.1f%% %llu %s\n", 100.0 * (double)c->count / (double)r->total,
			(unsigned long long)c->count, buf);
		for (int k = 0; k < c->n; k++) {
			fmt_caller(r->syms, c->callers[k], unwind_is_exact(c->exact, k + 1), buf, sizeof buf);
			fprintf(r->out, "        <- %s\n", buf);
		}
	}
	if (r->n > shown) fprintf(r->out, "(%zu more chains not shown)\n", r->n - shown);
	if (fflush(r->out) || ferror(r->out)) {
		ERR_SET(w, ERR_SYS, "writing the report: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void rep_free(struct writer *w)
{
	struct report *r = (struct report *)w;
	for (size_t i = 0; i < r->n; i++) free(r->c[i].callers);
	free(r->c);
	free(r->tab);
	free(r->t);
	free(r);
}

struct writer *report_writer_new(FILE *out, const struct symtab *syms, int chains)
{
	struct report *r = calloc(1, sizeof *r);
	if (!r) return NULL;
	r->w.add = rep_add;
	r->w.finish = rep_finish;
	r->w.free = rep_free;
	r->out = out;
	r->syms = syms;
	r->chains = chains;
	return &r->w;
}
