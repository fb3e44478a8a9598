/* SPDX-License-Identifier: MIT */
/* prof_report.c: folds samples by chain (leaf by symbol with an offset span, callers by
 * return address) and prints the report format of docs/report-format.md. */
#include "prof_report.h"
#include "mem.h"
#include "symtab.h"

struct chain {
	uint64_t leaf;			/* leaf function's address, or the raw RIP if unknown */
	int known;			/* leaf symbol known */
	uint64_t lo, hi;		/* span of leaf offsets seen */
	uint64_t count;
	int n;				/* callers */
	uint64_t callers[PROF_FRAMES - 1];
};

static const char *leaf_of(uint64_t rip, uint64_t *func)
{
	uint64_t off;
	const char *name = symtab_resolve(rip, &off);
	*func = name ? rip - off : rip;
	return name;
}

static int chain_match(const struct chain *c, uint64_t leaf, const struct prof_record *r)
{
	return c->leaf == leaf && c->n == r->n - 1 &&
	       memcmp(c->callers, r->frames + 1, (size_t)c->n * sizeof(uint64_t)) == 0;
}

/* Sort order: most samples first; ties by leaf name, then by caller addresses (deterministic). */
static int chain_before(const struct chain *a, const struct chain *b)
{
	if (a->count != b->count)
		return a->count > b->count;
	uint64_t off;
	const char *na = a->known ? symtab_resolve(a->leaf, &off) : 0;
	const char *nb = b->known ? symtab_resolve(b->leaf, &off) : 0;
	int c = strcmp(na ? na : "", nb ? nb : "");
	if (c)
		return c < 0;
	if (a->leaf != b->leaf)
		return a->leaf < b->leaf;
	for (int i = 0; i < a->n && i < b->n; i++)
		if (a->callers[i] != b->callers[i])
			return a->callers[i] < b->callers[i];
	return a->n < b->n;
}

static void print_percent(struct out *o, uint64_t count, uint64_t total)
{
	uint64_t tenths = (count * 2000 / total + 1) / 2;	/* rounded to 0.1 % */
	out_printf(o, "%lu.%lu%% %lu ", tenths / 10, tenths % 10, count);
}

static void print_leaf(struct out *o, const struct chain *c)
{
	uint64_t off;
	const char *name = c->known ? symtab_resolve(c->leaf, &off) : 0;
	if (!name)
		out_printf(o, "0x%lx\n", c->leaf);
	else if (c->lo == c->hi)
		out_printf(o, "%s+0x%lx\n", name, c->lo);
	else
		out_printf(o, "%s+0x%lx..0x%lx\n", name, c->lo, c->hi);
}

/* A return address names the function holding the call (addr - 1); the offset printed is the
 * return address's own, as the panic backtrace prints it. */
static void print_caller(struct out *o, uint64_t ret)
{
	uint64_t off;
	const char *name = symtab_resolve(ret - 1, &off);
	if (name)
		out_printf(o, "        <- %s+0x%lx\n", name, off + 1);
	else
		out_printf(o, "        <- 0x%lx\n", ret);
}

static const char *source_name(const struct prof_run *run)
{
	return run->kind == PMU_NONE ? "tick 100 Hz" : pmu_source_name(run->kind);
}

void prof_report(struct out *o, const struct prof_run *run)
{
	struct chain *tab = kzalloc(PROF_MAX_CHAINS * sizeof(struct chain));	/* never on the stack */
	uint64_t total = 0, idle = 0, left_out = 0;
	uint64_t per_cpu[MAX_CPUS] = {0};	/* samples in the report, by the CPU that took them */
	int nchains = 0;
	if (!tab) {
		out_puts(o, "profile: out of memory for the chain table\n");
		return;
	}
	for (int cpu = 0; cpu < MAX_CPUS; cpu++) {
		for (uint32_t i = 0; run->buf[cpu] && i < run->count[cpu]; i++) {
			const struct prof_record *r = &run->buf[cpu][i];
			if (run->pid >= 0 && r->pid != run->pid)
				continue;
			if (r->idle) {
				idle++;
				continue;
			}
			total++;
			per_cpu[cpu]++;
			uint64_t leaf;
			const char *name = leaf_of(r->frames[0], &leaf);
			struct chain *c = 0;
			for (int k = 0; k < nchains && !c; k++)
				if (chain_match(&tab[k], leaf, r))
					c = &tab[k];
			if (!c) {
				if (nchains == PROF_MAX_CHAINS) {
					left_out++;
					continue;
				}
				c = &tab[nchains++];
				c->leaf = leaf;
				c->known = name != 0;
				c->lo = c->hi = r->frames[0] - leaf;
				c->n = r->n - 1;
				memcpy(c->callers, r->frames + 1, (size_t)c->n * sizeof(uint64_t));
			}
			uint64_t off = r->frames[0] - leaf;
			if (off < c->lo)
				c->lo = off;
			if (off > c->hi)
				c->hi = off;
			c->count++;
		}
	}
	for (int i = 1; i < nchains; i++)	/* insertion sort: at most 128 entries */
		for (int j = i; j > 0 && chain_before(&tab[j], &tab[j - 1]); j--) {
			struct chain t = tab[j];
			tab[j] = tab[j - 1];
			tab[j - 1] = t;
		}

	out_printf(o, "profiled %lu ms\n", run->ms);
	out_printf(o, "%lu samples on %d cpus, %lu dropped, source %s\n", total, run->cpus, run->dropped,
		   source_name(run));
	/* Each CPU's share: its guest time may have advanced unequally (its host thread waited), and
	 * `compare` weighs an external profile by these to compare like with like. */
	for (int cpu = 0; cpu < MAX_CPUS; cpu++)
		if (run->buf[cpu])
			out_printf(o, "cpu %d: %lu samples\n", cpu, per_cpu[cpu]);
	if (total == 0) {
		if (run->pid >= 0)
			out_printf(o, "no samples: pid %d did not run during the window (it may have slept the whole time)\n",
				   run->pid);
		else if (run->kind != PMU_NONE)
			out_puts(o, "no samples: the counter counts unhalted cycles, so an idle machine contributes nothing\n");
		else
			out_printf(o, "no samples: all %lu were idle\n", idle);
	}
	int shown = nchains < run->chains ? nchains : run->chains;
	for (int i = 0; i < shown; i++) {
		print_percent(o, tab[i].count, total);
		print_leaf(o, &tab[i]);
		for (int k = 0; k < tab[i].n; k++)
			print_caller(o, tab[i].callers[k]);
	}
	if (nchains > shown)
		out_printf(o, "(%d more chains not shown)\n", nchains - shown);
	if (left_out)
		out_printf(o, "(%lu samples left out: more than %d distinct chains)\n", left_out, PROF_MAX_CHAINS);
	kfree(tab, PROF_MAX_CHAINS * sizeof(struct chain));
}
