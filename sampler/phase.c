/* SPDX-License-Identifier: MIT */
/* phase.c: record --phase -- a phase's occurrences from its BEGIN and END breakpoint hits (decisions only). */
#include "phase.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int name_ok(const char *s, size_t n)
{
	if (n < 1 || n >= PHASE_NAME) return 0;
	for (size_t i = 0; i < n; i++) {
		char c = s[i];
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '.' ||
		      c == '-'))
			return 0;
	}
	return 1;
}

static int sym_ok(const char *s, size_t n)
{
	if (n < 1 || n >= PHASE_SYM) return 0;
	for (size_t i = 0; i < n; i++)
		if ((unsigned char)s[i] < ' ' || s[i] == ':' || s[i] == '=' || s[i] == 0x7f) return 0;
	return 1;
}

int phase_parse(struct phase *ph, const char *spec, char *why, size_t cap)
{
	memset(ph, 0, sizeof *ph);
	const char *eq = strchr(spec, '='), *colon = eq ? strchr(eq + 1, ':') : NULL;
	if (!eq || !colon) {
		snprintf(why, cap, "--phase: expected NAME=BEGIN:END (function names or 0x addresses), got '%.60s'", spec);
		return -1;
	}
	size_t nn = (size_t)(eq - spec), nb = (size_t)(colon - eq - 1), ne = strlen(colon + 1);
	if (!name_ok(spec, nn)) {
		snprintf(why, cap, "--phase: the name '%.*s' must be 1-64 of A-Z a-z 0-9 _ . -", (int)(nn > 60 ? 60 : nn), spec);
		return -1;
	}
	if (!sym_ok(eq + 1, nb) || !sym_ok(colon + 1, ne)) {
		snprintf(why, cap, "--phase %.*s: BEGIN and END must each be a function name or 0x address (got '%.60s')",
			 (int)nn, spec, eq + 1);
		return -1;
	}
	memcpy(ph->name, spec, nn);
	memcpy(ph->begin_sym, eq + 1, nb);
	memcpy(ph->end_sym, colon + 1, ne);
	if (!strcmp(ph->begin_sym, ph->end_sym)) {
		snprintf(why, cap, "--phase %s: BEGIN and END are the same function; a phase runs from one to the other",
			 ph->name);
		return -1;
	}
	return 0;
}

static void open_occ(struct phase *ph, int cpu, int64_t t)
{
	ph->open = 1;
	ph->opened++;
	ph->open_since = t;
	ph->open_sampled = !ph->want || ph->opened == ph->want;
	if (ph->nocc == ph->cap && ph->cap < PHASE_OCC_MAX) {
		size_t nc = ph->cap ? ph->cap * 2 : 64;
		if (nc > PHASE_OCC_MAX) nc = PHASE_OCC_MAX;
		struct phase_occ *o = realloc(ph->occ, nc * sizeof *o);
		if (o) ph->occ = o, ph->cap = nc;
	}
	if (ph->nocc == ph->cap) {
		ph->unlisted++;
		return;
	}
	ph->occ[ph->nocc++] = (struct phase_occ){ .n = (uint32_t)ph->opened, .begin_ns = t, .end_ns = t,
						  .begin_cpu = cpu, .end_cpu = -1, .sampled = ph->open_sampled };
}

/* The open occurrence's entry, when it is listed. */
static struct phase_occ *listed_open(struct phase *ph)
{
	return ph->nocc && ph->occ[ph->nocc - 1].n == ph->opened ? &ph->occ[ph->nocc - 1] : NULL;
}

static void close_occ(struct phase *ph, int cpu, int64_t t, int done)
{
	struct phase_occ *o = listed_open(ph);
	if (o) {
		o->end_ns = t;
		o->end_cpu = done ? cpu : -1;
		o->done = done;
	}
	if (ph->open_sampled) ph->sampled_ns += t - ph->open_since;
	if (done) ph->closed++;
	ph->open = 0;
}

int phase_hit(struct phase *ph, uint64_t pc, int cpu, int64_t t)
{
	if (pc == ph->begin) {
		if (ph->open) {
			ph->reentries++;
			return PHASE_REENTRY;
		}
		open_occ(ph, cpu, t);
		return PHASE_OPENED;
	}
	if (pc == ph->end) {
		if (!ph->open) {
			ph->stray_ends++;
			return PHASE_STRAY_END;
		}
		close_occ(ph, cpu, t, 1);
		return PHASE_CLOSED;
	}
	return PHASE_NOT_OURS;
}

int phase_sampling(const struct phase *ph)
{
	return ph->open && ph->open_sampled;
}

int phase_done(const struct phase *ph)
{
	return ph->want && ph->closed >= ph->want;
}

void phase_finish(struct phase *ph, int64_t t)
{
	/* the run's end is capped at -d's, and a hit handled just past it may have opened the phase
	 * later: it ends where it began, never before (a loaded run wrote such an occurrence) */
	if (ph->open) close_occ(ph, -1, t > ph->open_since ? t : ph->open_since, 0);
}

char *phase_text(const struct phase *ph, size_t *len)
{
	size_t cap = 256 + ph->nocc * 96, n = 0;
	char *out = malloc(cap);
	if (!out) return NULL;
	n += (size_t)snprintf(out + n, cap - n, "p %s %llx %llx\n", ph->name, (unsigned long long)ph->begin,
			      (unsigned long long)ph->end);
	for (size_t i = 0; i < ph->nocc; i++) {
		const struct phase_occ *o = &ph->occ[i];
		char endcpu[16] = "-";
		if (o->done) snprintf(endcpu, sizeof endcpu, "%d", o->end_cpu);
		n += (size_t)snprintf(out + n, cap - n, "o %u %lld %lld %d %s %s %s\n", o->n, (long long)o->begin_ns,
				      (long long)o->end_ns, o->begin_cpu, endcpu, o->done ? "done" : "open",
				      o->sampled ? "sampled" : "skipped");
	}
	*len = n;
	return out;
}

void phase_summary(const struct phase *ph, struct summary *t)
{
	char line[512];
	const struct phase_occ *last = ph->nocc ? &ph->occ[ph->nocc - 1] : NULL;
	int incomplete = last && !last->done;
	snprintf(line, sizeof line, "gdbsample: phase %s (%s to %s): %llu occurrence%s, %llu complete%s, sampled %.3f s%s\n",
		 ph->name, ph->begin_sym, ph->end_sym, (unsigned long long)ph->opened, ph->opened == 1 ? "" : "s",
		 (unsigned long long)ph->closed, incomplete ? ", the last one incomplete (still open when the run ended)" : "",
		 ph->sampled_ns / 1e9,
		 ph->want && ph->opened < ph->want ? " -- the occurrence asked for never came" : "");
	summary_text(t, line);
	if (ph->reentries || ph->stray_ends) {
		snprintf(line, sizeof line, "gdbsample: phase %s: BEGIN entered %llu time%s while open, END %llu time%s while "
			 "closed (not phase bounds)\n", ph->name, (unsigned long long)ph->reentries, ph->reentries == 1 ? "" : "s",
			 (unsigned long long)ph->stray_ends, ph->stray_ends == 1 ? "" : "s");
		summary_text(t, line);
	}
	const struct phase_costs *c = &ph->cost;
	if (c->capped) {
		snprintf(line, sizeof line, "gdbsample: phase %s: its breakpoints were hit more than %llu times in a second "
			 "(--max-hits): the run ended there, as its bounds could not be kept without stopping the guest "
			 "that often; choose a rarer BEGIN and END, or raise --max-hits\n", ph->name,
			 (unsigned long long)c->max_hits);
		summary_text(t, line);
	}
	if (c->rescues) {
		snprintf(line, sizeof line, "gdbsample: phase %s: the pause watchdog resumed the guest %llu time%s, the "
			 "breakpoints out until gdbsample went on: a bound crossed meanwhile was missed\n", ph->name,
			 (unsigned long long)c->rescues, c->rescues == 1 ? "" : "s");
		summary_text(t, line);
	}
	summary_str(t, "phase", NULL, ph->name);
	summary_str(t, "phase_begin", NULL, ph->begin_sym);
	summary_str(t, "phase_end", NULL, ph->end_sym);
	summary_u64(t, "phase_occurrence_wanted", NULL, ph->want);
	summary_u64(t, "phase_occurrences", NULL, ph->opened);
	summary_u64(t, "phase_complete", NULL, ph->closed);
	summary_u64(t, "phase_incomplete", NULL, (uint64_t)incomplete);
	summary_u64(t, "phase_sampled_ns", NULL, (uint64_t)(ph->sampled_ns > 0 ? ph->sampled_ns : 0));
	summary_u64(t, "phase_unlisted", NULL, ph->unlisted);
	summary_u64(t, "phase_hits", NULL, c->hits);
	summary_real(t, "phase_hit_cost_us", NULL, 1, c->hits ? (double)c->hit_ns / 1e3 / (double)c->hits : 0);
	summary_u64(t, "phase_foreign_stops", NULL, c->foreign);
	summary_u64(t, "phase_rescues", NULL, c->rescues);
	summary_u64(t, "phase_heartbeats", NULL, c->heartbeats);
	summary_u64(t, "phase_on_bound", NULL, c->on_bound);
	summary_u64(t, "phase_max_hits", NULL, c->max_hits);
	summary_u64(t, "phase_capped", NULL, (uint64_t)c->capped);
}

void phase_free(struct phase *ph)
{
	free(ph->occ);
	ph->occ = NULL;
	ph->nocc = ph->cap = 0;
}
