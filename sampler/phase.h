/* SPDX-License-Identifier: MIT */
/* phase.h: record --phase -- a phase's occurrences from its BEGIN and END breakpoint hits (decisions only: record_phase.c does the I/O). */
#ifndef PHASE_H
#define PHASE_H
#include <stddef.h>
#include <stdint.h>
#include "summary.h"

#define PHASE_NAME 65          /* a phase's name: [A-Za-z0-9_.-], 1..64 characters, and a NUL */
#define PHASE_SYM 128          /* BEGIN or END as given */
#define PHASE_OCC_MAX 1000000  /* occurrences listed (past it: counted, not listed) */

/*
 * One phase, NAME=BEGIN:END. An occurrence opens when a vCPU enters BEGIN while none is open, and
 * closes when a vCPU enters END while one is -- any vCPU: a phase is the whole VM's stretch of
 * time, as perf's --control enable/disable is. BEGIN entered again while open is a re-entry, END
 * while closed a stray end: counted here, though record_phase.c never shows them (only the
 * breakpoint that can change the state is in). Times are ns since the run started, the
 * samples' clock. Samples are taken only while an occurrence is open -- with --phase-occurrence N
 * only while the Nth is -- so every sample of the run lies inside one.
 */
struct phase_occ {
	uint32_t n;        /* its number, from 1 */
	int64_t begin_ns;  /* when BEGIN's hit was handled */
	int64_t end_ns;    /* when END's was (an occurrence still open at the end: the run's end) */
	int begin_cpu;     /* the vCPU that entered BEGIN */
	int end_cpu;       /* ...END; -1 while open */
	int done;          /* closed by END */
	int sampled;       /* samples were taken during it (not skipped for --phase-occurrence) */
};

/* What keeping the bounds cost (record_phase.c counts, phase_summary says). */
struct phase_costs {
	uint64_t hits;             /* BEGIN and END breakpoint hits */
	int64_t hit_ns;            /* time the VM stood still handling them */
	uint64_t foreign;          /* SIGTRAP stops at no breakpoint of ours */
	uint64_t rescues;          /* the pause watchdog resumed the VM, the breakpoints out meanwhile:
				    * a hit then would have been missed */
	uint64_t heartbeats;       /* stops of ours to look (a signal, -d; the watchdog's epochs) */
	uint64_t on_bound;         /* vCPU samples found exactly on BEGIN or END: left out */
	uint64_t max_hits;         /* --max-hits */
	int capped;                /* a hit passed it: the run ended there */
};

struct phase {
	char name[PHASE_NAME];
	char begin_sym[PHASE_SYM], end_sym[PHASE_SYM]; /* as given */
	uint64_t begin, end;       /* the breakpoints' addresses */
	uint64_t want;             /* --phase-occurrence: sample only the Nth (0: every one) */
	int open;                  /* an occurrence is open: occ[nocc - 1] */
	struct phase_occ *occ;     /* the occurrences, in order (malloc'd; at most PHASE_OCC_MAX) */
	size_t nocc, cap;
	uint64_t opened, closed;   /* occurrences opened and closed (also past PHASE_OCC_MAX) */
	uint64_t unlisted;         /* opened past PHASE_OCC_MAX, or when memory ran out */
	uint64_t reentries;        /* BEGIN entered while open */
	uint64_t stray_ends;       /* END entered while closed */
	int64_t sampled_ns;        /* time open and sampled */
	int64_t open_since;        /* when the open occurrence began (kept past PHASE_OCC_MAX too) */
	int open_sampled;          /* ...and whether it is sampled */
	struct phase_costs cost;   /* the loop's counters */
};

/* Parse NAME=BEGIN:END into ph (zeroed first): 0, or -1 with one line in why. BEGIN and END are
 * symbol names or 0x addresses, each 1..PHASE_SYM-1 bytes with no ':' or '='; they may not be equal. */
int phase_parse(struct phase *ph, const char *spec, char *why, size_t cap);
/* What a hit at pc by vCPU cpu at time t did: PHASE_OPENED, PHASE_CLOSED, PHASE_REENTRY,
 * PHASE_STRAY_END, or PHASE_NOT_OURS (pc is neither breakpoint). */
enum { PHASE_NOT_OURS, PHASE_OPENED, PHASE_CLOSED, PHASE_REENTRY, PHASE_STRAY_END };
int phase_hit(struct phase *ph, uint64_t pc, int cpu, int64_t t);
/* 1 while samples are due: an occurrence is open and it is the one wanted. */
int phase_sampling(const struct phase *ph);
/* 1 once nothing more can be sampled: the occurrence --phase-occurrence wanted has closed. */
int phase_done(const struct phase *ph);
/* The run ended at t: an open occurrence ends there, not done. */
void phase_finish(struct phase *ph, int64_t t);
/* The capture's phases chunk text (docs/capture-format.md, v5): a "p" line, then an "o" line per
 * occurrence listed. malloc'd, or NULL when out of memory; *len its length. */
char *phase_text(const struct phase *ph, size_t *len);
/* The summary's rows: a line for people, the phase_* keys. */
void phase_summary(const struct phase *ph, struct summary *t);
void phase_free(struct phase *ph);

#endif
