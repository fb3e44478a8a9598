/* SPDX-License-Identifier: MIT */
/* guard.h: a forked guard that resumes the guest if gdbsample dies while the VM is stopped, or
 * stalls (stopped by a signal or a debugger, starved by the host) longer than --max-pause. */
#ifndef GUARD_H
#define GUARD_H
#include "err.h"
#include <stdint.h>
#include <signal.h>
#include <sys/types.h>
#include "gdb.h"

#define GUARD_BP_MAX 64 /* breakpoints the guard removes (bpcount.h's BPC_MAX) */
#define GUARD_COMM "gdbsguard" /* the guard's process name (comm): not "gdbsample", nor containing it */

/* Who holds the VM (the low byte of guard_shared.word; guard.c has the transitions). */
enum {
	GUARD_RUNNING = 0, /* the VM runs (or the watchdog is not ours to run: attaching, detached) */
	GUARD_STOPPED,     /* the VM may be stopped by us: the watchdog times it */
	GUARD_WRITING,     /* ... and the parent is writing to the stub */
	GUARD_RESCUING,    /* the guard is resuming a STOPPED VM */
	GUARD_RESCUED,     /* ... has resumed it; the parent refuses to write until it acknowledges */
	GUARD_RACING,      /* the guard is resuming a VM the parent was writing to */
	GUARD_RACED,       /* ... has: the parent's write may have landed after the resume */
};

/* State shared with the guard through an anonymous shared mapping. Lock-free: either process
 * may be stopped (SIGSTOP, a debugger) at any instruction, and the other must still go on. */
struct guard_shared {
	volatile uint64_t word;      /* generation << 8 | GUARD_*; the generation grows with every
				      * guard_enter, so a rescue never applies to a later stop */
	volatile int done;           /* 1 once the parent detached cleanly: nothing left to do */
	volatile int64_t since_ns;   /* CLOCK_MONOTONIC start of the current stop (0: no watchdog,
				      * e.g. while attaching) */
	int64_t max_pause_ns;        /* the watchdog's limit (0: no watchdog) */
	volatile uint64_t rescues;   /* stops the watchdog ended */
	volatile int64_t longest_ns; /* the longest of those stops, when the watchdog ended it */
	volatile int64_t rescued_at_ns; /* CLOCK_MONOTONIC time of the last rescue */
	/* `count`'s breakpoints (guard_breakpoints): whenever the guard resumes the VM -- the parent
	 * gone, or the watchdog -- it removes them first, so none outlives gdbsample or stops the
	 * VM again behind a rescue. */
	volatile int nbp;              /* how many of bp[] may be inserted (0: none) */
	int bp_kind;                   /* the z0 packets' kind */
	uint64_t bp[GUARD_BP_MAX];     /* their addresses */
	volatile uint64_t bp_removed;  /* times the guard removed them (the parent inserts again) */
};

struct guard {
	pid_t pid;                  /* the guard process, 0 if none */
	int pipe_w;                 /* write end held by the parent: EOF tells the guard we are gone */
	struct guard_shared *sh;    /* shared state */
	uint64_t seen;              /* rescues the parent has acknowledged */
	int writing;                /* the parent marked the state WRITING (guard_gate) */
	int err;                    /* sticky error code */
	char errstr[ERR_MAX];           /* what went wrong */
};

/* Fork the guard in a session of its own (a signal to gdbsample's process group -- a closed
 * terminal, `timeout -s KILL` -- does not reach it) and let *it* connect to the gdbstub (host:port,
 * or the unix socket path), handing the connection to us in *gdb: so from the moment connecting
 * stops the VM, someone outside our process group holds the socket and can resume it.
 * resume_pkt is the framed packet that resumes ("$c#63"); max_pause_ns the watchdog's limit (0:
 * none). The VM is assumed stopped, without watchdog, until guard_leave. rescue(arg, ours), if set,
 * runs in the guard after that, whenever the parent did not finish cleanly (it closes a gdbstub
 * opened through the monitor; ours: the VM was stopped by us, and the guard resumed it); arg is
 * the parent's copy at fork time. We wait for the connection
 * until deadline_ms (CLOCK_MONOTONIC ms, 0: none) or until a signal sets *intr: then we leave the
 * guard to finish connecting alone -- it finds us gone and resumes the VM if it stopped it. -1:
 * the guard could not be started (g->errstr), or connecting failed (gdb->err/errstr). */
int guard_start(struct guard *g, struct gdb *gdb, const char *host, int port, const char *path,
		const char *resume_pkt, int64_t max_pause_ns, void (*rescue)(void *, int), void *arg,
		long long deadline_ms, volatile sig_atomic_t *intr);
/* The attach's stop is ours: the handshake found that connecting stopped a running VM. The
 * watchdog times it from now (before, the stop may be an operator's pause, which is not ours to
 * end). A no-op once guard_enter or guard_leave ran. */
void guard_arm(struct guard *g);
/* The VM is about to be stopped (the watchdog starts timing) / has been resumed. */
void guard_enter(struct guard *g);
void guard_leave(struct guard *g);
/* For struct gdb's write gate. enter = 1, before a write: -1 if the watchdog has resumed the VM
 * since guard_enter (write nothing). enter = 0, after it: -1 if the watchdog resumed the VM while
 * we were writing -- our bytes may have landed after its resume, so the VM state is unknown until
 * we resume it ourselves (gdb_resync). */
int guard_gate(void *g, int enter);
/* After a write was refused or raced (and resynced): the VM runs; acknowledge it. Returns the
 * rescues so far. */
uint64_t guard_acknowledge(struct guard *g);
/* The watchdog's decision, apart from its I/O (the unit tests drive it): if the VM has been
 * STOPPED (or WRITING) since longer than the limit at time now, claim the rescue (state RESCUING /
 * RACING, counted) and return 1; the caller then resumes the VM and calls guard_claimed (state
 * RESCUED / RACED). 0: nothing to do. */
int guard_claim(struct guard_shared *sh, int64_t now);
void guard_claimed(struct guard_shared *sh);
/* The breakpoints (addresses, kind) the parent may have inserted from now on: the guard removes
 * them before any resume. Called before inserting them (n > 0) and after removing them (n = 0). */
void guard_breakpoints(struct guard *g, const uint64_t *addr, int n, int kind);
/* The bytes the guard writes to resume the VM: '+', 0x03, a z0 packet for each breakpoint
 * listed, then pkt (the resume packet). Its length, or 0 if it does not fit in cap. Pure. */
size_t guard_resume_bytes(const struct guard_shared *sh, const char *pkt, char *out, size_t cap);
/* A stop reply with SIGTRAP (T05/S05): a step or breakpoint's, never an operator's stop. Pure. */
int guard_stop_is_trap(const char *pkt, size_t len);
/* Let the guard go and reap it: clean = we detached ourselves (the guard exits quietly);
 * otherwise it resumes the VM if a sample may be in flight, exactly as if we had died. */
void guard_finish(struct guard *g, int clean);

#endif
