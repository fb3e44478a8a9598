/* SPDX-License-Identifier: MIT */
/* report.c: the text report shared with the in-guest `profile` (format: docs/report-format.md). */
#include "writer.h"
#include "err.h"
#include "hash.h"
#include "offcpu.h"
#include <stdlib.h>

/*
 *   profiled 2000 ms
 *   4000 samples on 2 cpus, 0 dropped, source gdbstub 100 Hz
 *   31.2% 1280 MemCpy+0x1a..0x3e
 *           <- Caller+0x44
 * Samples fold by their whole chain: the leaf by symbol (keeping the span of offsets seen), the
 * callers by exact return address. Chains print by count, most first; ties by text.
 *
 * With record --off-cpu it counts sample periods of wall time: a vCPU's sample is one, an off-CPU
 * stack its weight; a line after the second gives the off-CPU periods by state, an off-CPU
 * chain's leaf ends with its state (" [off-cpu/blocked]") and a task line with its off-CPU share
 * -- as gdbsample-analyze report --state all writes it.
 */

/* A chain's key: words (host order) indexed by these: the leaf symbol's address (or the raw pc
 * when unknown), the sample's exact-frame bits (bit k+1: caller k is an interrupted pc), its
 * off-CPU class (0: a vCPU's sample), then the callers' return addresses, innermost first. */
enum { KEY_LEAF, KEY_EXACT, KEY_STATE = KEY_EXACT + 4, KEY_CALLERS };

/* One folded chain: the value its key maps to. */
struct chain {
	int known;            /* leaf symbol known */
	uint64_t lo, hi;      /* offsets (known) seen in the leaf */
	uint64_t count;       /* samples */
};

/* One task's samples (attribution on). */
struct tstat {
	struct task_id id;    /* pid, tgid, name (ptr unused) */
	int known;            /* 0: the samples with no task */
	uint64_t count;       /* samples (with off-CPU stacks: periods) */
	uint64_t user;        /* ...in user mode */
	uint64_t off;         /* ...off-CPU periods */
};

#define REPORT_TASKS_SHOWN 16

struct report {
	struct writer w;            /* interface, first */
	FILE *out;                  /* destination */
	const struct symtab *syms;  /* may be NULL */
	int chains;                 /* how many to print */
	struct hash chains_seen;    /* every chain: key (KEY_*) -> struct chain */
	uint64_t total;             /* samples added */
	struct tstat *t;            /* tasks seen (linear: a profile has tens, not thousands) */
	size_t nt, tcap;
	int any_task;               /* some sample had a task */
	int offcpu;                 /* record --off-cpu: the off-CPU line, periods */
	uint64_t off_by[OC_NCLASS]; /* off-CPU periods by class */
	int any_off;                /* some sample was off-CPU (task lines say each one's share) */
};

/* Count a sample for its task. */
static int task_add(struct report *r, const struct sample *s, uint64_t n)
{
	uint64_t off = s->offcpu ? n : 0;
	if (s->has_task) r->any_task = 1;
	for (size_t i = 0; i < r->nt; i++) {
		struct tstat *t = &r->t[i];
		if (t->known == s->has_task && (!t->known || (t->id.pid == s->task.pid && t->id.tgid == s->task.tgid &&
							       !memcmp(t->id.comm, s->task.comm, TASK_COMM_LEN)))) {
			t->count += n;
			t->user += (s->flags & SF_USER) != 0;
			t->off += off;
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
	r->t[0] = (struct tstat){ s->task, s->has_task, n, (s->flags & SF_USER) != 0, off };
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

/* "task P% COUNT NAME pid P tgid T, user U%[, off-cpu O%]" lines, most samples first, before the
 * chains. */
static void print_tasks(struct report *r)
{
	if (!r->any_task) return;
	if (r->nt) qsort(r->t, r->nt, sizeof *r->t, taskcmp);
	size_t shown = r->nt < REPORT_TASKS_SHOWN ? r->nt : REPORT_TASKS_SHOWN;
	for (size_t i = 0; i < shown; i++) {
		const struct tstat *t = &r->t[i];
		char c[TASK_COMM_LEN * 4 + 1];
		double pct = 100.0 * (double)t->count / (double)r->total, user = 100.0 * (double)t->user / (double)t->count;
		char tail[40] = "";
		if (r->any_off) snprintf(tail, sizeof tail, ", off-cpu %.1f%%", 100.0 * (double)t->off / (double)t->count);
		if (!t->known) {
			fprintf(r->out, "task %.1f%% %llu [unknown], user %.1f%%%s\n", pct, (unsigned long long)t->count, user, tail);
			continue;
		}
		task_comm_format(t->id.comm, c);
		fprintf(r->out, "task %.1f%% %llu %s pid %d tgid %d, user %.1f%%%s\n", pct, (unsigned long long)t->count,
			c, t->id.pid, t->id.tgid, user, tail);
	}
	if (r->nt > shown) fprintf(r->out, "task (%zu more not shown)\n", r->nt - shown);
}

/* A chain's key words (a malloc'd copy: aligned) and its callers. */
static const uint64_t *key_words(const struct hash_item *it)
{
	return it->key;
}

static int key_ncallers(const struct hash_item *it)
{
	return (int)(it->len / 8) - KEY_CALLERS;
}

static int rep_add(struct writer *w, const struct sample *s)
{
	struct report *r = (struct report *)w;
	uint64_t n = s->offcpu ? s->weight : 1;
	if (task_add(r, s, n) < 0) goto oom;
	if (!s->n) { /* a chain needs its leaf (no source makes one: the capture reader refuses them) */
		ERR_SET(w, ERR_FORMAT, "a sample with no frames");
		return -1;
	}
	const struct sym *sym = r->syms ? syms_lookup(r->syms, s->frames[0]) : NULL;
	uint64_t key[KEY_CALLERS + SAMPLE_MAX_FRAMES];
	key[KEY_LEAF] = sym ? sym->addr : s->frames[0];
	memcpy(key + KEY_EXACT, s->exact, sizeof s->exact);
	key[KEY_STATE] = s->offcpu % OC_NCLASS;
	memcpy(key + KEY_CALLERS, s->frames + 1, (size_t)(s->n - 1) * 8);
	int added;
	struct chain *c = hash_get(&r->chains_seen, key, (size_t)(KEY_CALLERS + s->n - 1) * 8, &added);
	if (!c) goto oom;
	uint64_t off = sym ? s->frames[0] - sym->addr : 0;
	if (added) {
		c->known = sym != NULL;
		c->lo = c->hi = off;
	} else if (sym) {
		if (off < c->lo) c->lo = off;
		if (off > c->hi) c->hi = off;
	}
	c->count += n;
	r->total += n;
	if (s->offcpu) {
		r->off_by[s->offcpu % OC_NCLASS] += n;
		r->any_off = 1;
	}
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

static void fmt_leaf(const struct report *r, const struct hash_item *it, char *out, size_t cap)
{
	const struct chain *c = hash_value(it);
	uint64_t leaf = key_words(it)[KEY_LEAF], state = key_words(it)[KEY_STATE];
	const struct sym *s = c->known ? syms_lookup(r->syms, leaf) : NULL;
	if (!s) snprintf(out, cap, "0x%llx", (unsigned long long)leaf);
	else if (c->lo == c->hi) syms_name_off(s, c->lo, out, cap);
	else snprintf(out, cap, "%s+0x%llx..0x%llx%s%s%s", s->name, (unsigned long long)c->lo,
		      (unsigned long long)c->hi, s->mod ? " [" : "", s->mod ? s->mod : "", s->mod ? "]" : "");
	size_t len = strlen(out);
	if (state && len < cap) snprintf(out + len, cap - len, " [%s]", offcpu_class_frames[state]);
}

/* "off-cpu W periods, P% of the report, over N tasks: blocked B%, ..." (the states' shares of W). */
static void print_off(const struct report *r)
{
	static const int order[] = { OC_BLOCKED, OC_UNINTERRUPTIBLE, OC_RUNNABLE }; /* as the analyzer's STATES */
	uint64_t w = 0, tasks = 0;
	for (int i = 0; i < OC_NCLASS; i++) w += r->off_by[i];
	for (size_t i = 0; i < r->nt; i++) tasks += r->t[i].off > 0;
	fprintf(r->out, "off-cpu %llu periods, %.1f%% of the report, over %llu tasks", (unsigned long long)w,
		r->total ? 100.0 * (double)w / (double)r->total : 0.0, (unsigned long long)tasks);
	const char *sep = ": ";
	for (size_t i = 0; i < sizeof order / sizeof order[0]; i++) {
		if (!r->off_by[order[i]]) continue;
		fprintf(r->out, "%s%s %.1f%%", sep, offcpu_class_frames[order[i]] + strlen("off-cpu/"),
			100.0 * (double)r->off_by[order[i]] / (double)w);
		sep = ", ";
	}
	fputc('\n', r->out);
}

static int chaincmp(const void *a, const void *b, void *ctx)
{
	const struct hash_item *x = a, *y = b;
	const struct chain *cx = hash_value(x), *cy = hash_value(y);
	char fx[256], fy[256];
	if (cx->count != cy->count) return cx->count > cy->count ? -1 : 1;
	fmt_leaf(ctx, x, fx, sizeof fx);
	fmt_leaf(ctx, y, fy, sizeof fy);
	int c = strcmp(fx, fy);
	if (c) return c;
	const uint64_t *kx = key_words(x) + KEY_CALLERS, *ky = key_words(y) + KEY_CALLERS;
	int nx = key_ncallers(x), ny = key_ncallers(y);
	for (int i = 0; i < nx && i < ny; i++)
		if (kx[i] != ky[i]) return kx[i] < ky[i] ? -1 : 1;
	return nx - ny;
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
	if (r->offcpu) print_off(r);
	if (ri->attach) header_line(r->out, "attached ", ri->attach);
	if (ri->kernel) header_line(r->out, "", ri->kernel);
	print_tasks(r);
	if (!r->total) {
		if (ri->idle) fprintf(r->out, "no samples: all %llu were idle (--idle keeps them)\n",
				      (unsigned long long)ri->idle);
		else fprintf(r->out, "no samples\n");
	}
	hash_sort(&r->chains_seen, chaincmp, r); /* `top` keeps adding after a finish */
	size_t n = r->chains_seen.n, shown = n < (size_t)r->chains ? n : (size_t)r->chains;
	for (size_t i = 0; i < shown; i++) {
		const struct hash_item *it = hash_at(&r->chains_seen, i);
		const struct chain *c = hash_value(it);
		const uint64_t *exact = key_words(it) + KEY_EXACT, *callers = key_words(it) + KEY_CALLERS;
		fmt_leaf(r, it, buf, sizeof buf);
		fprintf(r->out, "%.1f%% %llu %s\n", 100.0 * (double)c->count / (double)r->total,
			(unsigned long long)c->count, buf);
		for (int k = 0; k < key_ncallers(it); k++) {
			fmt_caller(r->syms, callers[k], unwind_is_exact(exact, k + 1), buf, sizeof buf);
			fprintf(r->out, "        <- %s\n", buf);
		}
	}
	if (n > shown) fprintf(r->out, "(%zu more chains not shown)\n", n - shown);
	if (fflush(r->out) || ferror(r->out)) {
		ERR_SET(w, ERR_SYS, "writing the report: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void rep_free(struct writer *w)
{
	struct report *r = (struct report *)w;
	hash_free(&r->chains_seen);
	free(r->t);
	free(r);
}

struct writer *report_writer_new(FILE *out, const struct symtab *syms, int chains, int offcpu)
{
	struct report *r = calloc(1, sizeof *r);
	if (!r) return NULL;
	r->w.add = rep_add;
	r->w.finish = rep_finish;
	r->w.free = rep_free;
	r->out = out;
	r->syms = syms;
	r->chains = chains;
	r->offcpu = offcpu;
	hash_init(&r->chains_seen, sizeof(struct chain));
	return &r->w;
}
