/* SPDX-License-Identifier: MIT */
/* fold.c: folded-stack output ("task;root;...;leaf count", sorted) for flame graph tools. */
#include "writer.h"
#include "err.h"
#include "hash.h"
#include "offcpu.h"
#include <stdlib.h>

struct fold {
	struct writer w;            /* interface, first */
	FILE *out;                  /* destination */
	const struct symtab *syms;  /* may be NULL */
	int tf;                     /* TF_*: the root frame (TF_CPU: "cpuN", as without tasks) */
	struct hash lines;          /* distinct lines "cpu0;root;...;leaf" (key: the string and its NUL)
				     * -> uint64_t samples */
};

/* Frame name: the leaf's (and an interrupted pc's) own symbol; a caller's, the symbol holding
 * the call (return address - 1); a module's function as perf names it, "func [module]". */
static void name(const struct symtab *t, uint64_t a, int is_return, char *out, size_t cap)
{
	const struct sym *s = t ? syms_frame(t, a, is_return) : NULL;
	if (s) syms_name(s, out, cap);
	else snprintf(out, cap, "0x%llx", (unsigned long long)a);
}

static int fold_add(struct writer *w, const struct sample *s)
{
	struct fold *f = (struct fold *)w;
	char line[SAMPLE_MAX_FRAMES * 72 + 16], nm[256];
	size_t off;
	/* as perf's stackcollapse: the task is the root, user mode one [user] frame under it;
	 * firmware (riscv64 M-mode) is one [firmware] frame under any root -- its pc is never the
	 * kernel's to name */
	int label = (s->flags & SF_FIRMWARE) || (f->tf != TF_CPU && (s->flags & SF_USER));
	if (f->tf == TF_CPU) {
		off = (size_t)snprintf(line, sizeof line, "cpu%d", s->cpu);
	} else {
		task_root(f->tf, &s->task, s->has_task, nm, sizeof nm);
		off = (size_t)snprintf(line, sizeof line, "%s", nm);
	}
	if (s->offcpu) /* as qperf's analyzer: the off-CPU state under the task, then its stack */
		off += (size_t)snprintf(line + off, sizeof line - off, ";%s", offcpu_class_frames[s->offcpu % OC_NCLASS]);
	if (label)
		off += (size_t)snprintf(line + off, sizeof line - off, ";%s",
					s->flags & SF_FIRMWARE ? "[firmware]" : "[user]");
	for (int i = s->n - 1; i >= 0 && !label; i--) { /* root first */
		name(f->syms, s->frames[i], i > 0 && !unwind_is_exact(s->exact, i), nm, sizeof nm);
		off += (size_t)snprintf(line + off, sizeof line - off, ";%s", nm);
		if (off >= sizeof line) off = sizeof line - 1;
	}
	uint64_t *count = hash_get(&f->lines, line, strlen(line) + 1, NULL);
	if (!count) {
		ERR_SET(w, ERR_SYS, "out of memory");
		return -1;
	}
	*count += s->weight > 1 ? s->weight : 1; /* an off-CPU stack stands for its periods */
	return 0;
}

static int linecmp(const void *a, const void *b, void *ctx)
{
	(void)ctx;
	return strcmp(((const struct hash_item *)a)->key, ((const struct hash_item *)b)->key);
}

static int fold_finish(struct writer *w, const struct run_info *ri)
{
	struct fold *f = (struct fold *)w;
	(void)ri;
	hash_sort(&f->lines, linecmp, NULL);
	for (size_t i = 0; i < f->lines.n; i++) {
		const struct hash_item *it = hash_at(&f->lines, i);
		fprintf(f->out, "%s %llu\n", (const char *)it->key, (unsigned long long)*(uint64_t *)hash_value(it));
	}
	if (fflush(f->out) || ferror(f->out)) {
		ERR_SET(w, ERR_SYS, "writing folded output: %s", strerror(errno));
		return -1;
	}
	return 0;
}

static void fold_free(struct writer *w)
{
	struct fold *f = (struct fold *)w;
	hash_free(&f->lines);
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
	hash_init(&f->lines, sizeof(uint64_t));
	return &f->w;
}
