/* SPDX-License-Identifier: MIT */
/* bpcount.h: `gdbsample count` -- calls counted at function-entry breakpoints under a rate cap (decisions only: cmd_count.c does the I/O). */
#ifndef BPCOUNT_H
#define BPCOUNT_H
#include <stdint.h>
#include <stddef.h>

#define BPC_MAX 64                 /* functions one count watches (and the guard removes) */
#define BPC_NAME 128               /* a function's name as shown (longer: cut, marked "...") */
#define BPC_WINDOW_NS 1000000000LL /* the rate cap's window */

/*
 * Under TCG each breakpoint hit stops the whole VM and costs a few round trips (the stop reply,
 * the pc, a remove, one step, an insert, `c`) and QEMU flushes translated code when a breakpoint
 * comes or goes: a function called 100 000 times a second would all but stop the guest. So at
 * most `cap` hits a window: the one that reaches it takes every breakpoint out until the window
 * ends. Counts are exact while armed; the rate is hits over the armed time, which the summary
 * says next to the time disarmed.
 */
struct bpc_fn {
	char name[BPC_NAME]; /* as given (a name, or an address) */
	uint64_t addr;       /* the breakpoint's address in the running guest */
	uint64_t hits;       /* times a vCPU reached it while armed */
};

struct bpcount {
	struct bpc_fn fn[BPC_MAX];
	int n;
	uint64_t cap;          /* hits a window may take, all functions together (0: no cap) */
	int64_t win_start;     /* the current window's start (ns, caller's clock) */
	uint64_t win_hits;     /* hits in it */
	int armed;             /* the breakpoints are in */
	int64_t armed_since;   /* ...since then */
	int64_t armed_ns;      /* armed time before that */
	uint64_t armings;      /* times they went in: each a stretch of exact counts */
	uint64_t capped;       /* windows the cap cut short */
	uint64_t hits;         /* all hits */
	uint64_t foreign;      /* SIGTRAP stops at a pc none of ours (another debugger's breakpoint) */
};

/* Start: no functions, the cap, the first window at now, disarmed. */
void bpc_init(struct bpcount *c, uint64_t cap, int64_t now);
/* Add a function: 0, -1 when BPC_MAX are there, -2 when one has that address already. */
int bpc_add(struct bpcount *c, const char *name, uint64_t addr);
/* The function whose breakpoint is at pc, or -1. */
int bpc_find(const struct bpcount *c, uint64_t pc);
/* A vCPU stopped at function i's breakpoint at time now: counted. 1 if the window's cap is now
 * reached (take the breakpoints out: bpc_set_armed(c, 0, now) once done), else 0. */
int bpc_hit(struct bpcount *c, int i, int64_t now);
/* What is due at time now: 1 insert the breakpoints (a new window began while capped, or they
 * are out for no reason), 0 nothing. Rolls the window forward. */
int bpc_due(struct bpcount *c, int64_t now);
/* When the current window ends: the latest the caller should look again while capped. */
int64_t bpc_window_end(const struct bpcount *c);
/* The breakpoints went in (1) or out (0) at time now. */
void bpc_set_armed(struct bpcount *c, int armed, int64_t now);
/* Armed time in all up to now. */
int64_t bpc_armed_ns(const struct bpcount *c, int64_t now);
/* The functions' indexes by hits, most first, then by name: order holds c->n. */
void bpc_order(const struct bpcount *c, int *order);
/* The table for people: a header line, then "HITS HITS/S FUNCTION" rows in bpc_order, the rate
 * over armed_ns. Appended at out + strlen(out), cut at cap. */
void bpc_table(const struct bpcount *c, int64_t armed_ns, char *out, size_t cap);

#endif
