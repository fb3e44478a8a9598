/* SPDX-License-Identifier: MIT */
/* fold.c: folded-stack output ("task;root;...;leaf count", sorted) for flame graph tools. */
#include "writer.h"
#include "err.h"
#include <stdlib.h>

/* One distinct stack line. */
struct entry {
	char *line;      /* "cpu0;root;...;leaf" */
	uint64_t hash;   /* of line */
	uint64_t count;  /* samples */
};

struct fold {
	struct writer w;            /* interface, first */
	FILE *out;                  /* destination */
	const struct symtab *syms;  /* may be NULL */
	int tf;                     /* TF_*: the root frame (TF_CPU: "cpuN", as without tasks) */
	struct entry *e;            /* distinct lines */
	size_t n, cap;              /* used / allocated */
	size_t *tab;                /* open-addressing index (+1) */
	size_t tabcap;              /* power of two */
};

static uint64_t strhash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ull;
	while (*s) h = (h ^ (uint8_t)*s++) * 0x100000001b3ull;
	return h;
}

/* Frame name: the leaf's (and an interrupted pc's) own symbol; a caller's, the symbol holding
 * the call (return address - 1); a module's function as perf names it, "func [module]". */
static void name(const struct symtab *t, uint64_t a, int is_return, char *out, size_t cap)
{
	const struct sym *s = t ? syms_frame(t, a, is_return) : NULL;
	if (s) syms_name(s, out, cap);
	else snprintf(out, cap, "0x%llx", (unsigned long long)a);
}

static int rehash(struct fold *f)
{
	size_t ncap = f->tabcap ? f->tabcap * 2 : 1024;
	size_t *nt = calloc(ncap, sizeof *nt);
	if (!nt) return -1;
	for (size_t i = 0; i < f->n; i++) {
		size_t k = f->e[i].hash & (ncap - 1);
		while (nt[k]) k = (k + 1) & (ncap - 1);
		nt[k] = i + 1;
	}
	free(f->tab);
	f->tab = nt;
	f->tabcap = ncap;
	return 0;
}

static int fold_add(struct writer *w, const struct sample *s)
{
	struct fold *f = (struct fold *)w;
	char line[SAMPLE_MAX_FRAMES * 72 + 16], nm[256];
	size_t off;
	if (f->tf == TF_CPU) {
		off = (size_t)snprintf(line, sizeof line, "cpu%d", s->cpu);
	} else { /* as perf's stackcollapse: the task is the root, user mode one [user] frame */
		task_root(f->tf, &s->task, s->has_task, nm, sizeof nm);
		off = (size_t)snprintf(line, sizeof line, "%s%s", nm, s->flags & SF_USER ? ";[user]" : "");
	}
	for (int i = s->n - 1; i >= 0 && !(f->tf != TF_CPU && s->flags & SF_USER); i--) { /* root first */
		name(f->syms, s->frames[i], i > 0 && !unwind_is_exact(s->exact, i), nm, sizeof nm);
		off += (size_t)snprintf(line + off, sizeof line - off, ";%s", nm);
		if (off >= sizeof line) off = sizeof line - 1;
	}
	uint64_t h = strhash(line);
	if (f->n * 2 >= f->tabcap && rehash(f) < 0) goto oom;
	size_t k = h & (f->tabcap - 1);
	for (; f->tab[k]; k = (k + 1) & (f->tabcap - 1)) {
		struct entry *e = &f->e[f->tab[k] - 1];
		if (e->hash == h && !strcmp(e->line, line)) {
			e->count++;
			return 0;
		}
	}
	if (f->n == f->cap) {
		size_t ncap = f->cap ? f->cap * 2 : 256;
		struct entry *ne = realloc(f->e, ncap * sizeof *ne);
		if (!ne) goto oom;
		f->e = ne;
		f->cap = ncap;
	}
	f->e[f->n] = (struct entry){ strdup(line), h, 1 };
	if (!f->e[f->n].line) goto oom;
	f->tab[k] = ++f->n;
	return 0;
oom:
	ERR_SET(w, ERR_SYS, "out of memory");
	return -1;
}

static int linecmp(const void *a, const void *b)
{
	return strcmp(((const struct entry *)a)->line, ((const struct entry *)b)->line);
}

static int fold_finish(struct writer *w, const struct run_info *ri)
{
	struct fold *f = (struct fold *)w;
	(void)ri;
	qsort(f->e, f->n, sizeof *f->e, linecmp);
	for (size_t i = 0; i < f->n; i++)
		fprintf(f->out, "%s %llu\n", f->e[i].line, (unsigned long long)f->e[i].count);
	if (fflush(f->out) || ferror(f->out)) {
		ERR_SET(w, ERR_SYS, "writing folded output: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void fold_free(struct writer *w)
{
	struct fold *f = (struct fold *)w;
	for (size_t i = 0; i < f->n; i++) free(f->e[i].line);
	free(f->e);
	free(f->tab);
	free(f);
}

struct writer *fold_writer_new(FILE *out, const struct symtab *syms, int tf)
{
	struct fold *f = calloc(1, sizeof *f);
	if (!f) return NULL;
	f->w.add = fold_add;
	f->w.finish = fold_finish;
	f->w.free = fold_free;
	f->out = out;
	f->syms = syms;
	f->tf = tf;
	return &f->w;
}
