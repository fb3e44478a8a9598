/* guard.h: a forked guard that resumes the guest if gdbsample dies while the VM is stopped, or
 * stalls (stopped by a signal or a debugger, starved by the host) longer than --max-pause. */
#ifndef GUARD_H
#define GUARD_H
#include <pthread.h>
#include <stdint.h>
#include <sys/types.h>
#include "gdb.h"

/* Who holds the VM. */
enum { GUARD_RUNNING = 0, GUARD_STOPPED, GUARD_RESCUED };

/* State shared with the guard through an anonymous shared mapping. */
struct guard_shared {
	pthread_mutex_t lock;        /* held around every write to the gdbstub, by either process
				      * (process-shared, robust: a dead holder does not block the other) */
	volatile int state;          /* GUARD_*: STOPPED while the VM may be stopped by us */
	volatile int done;           /* 1 once the parent detached cleanly: nothing left to do */
	volatile int64_t since_ns;   /* CLOCK_MONOTONIC start of the current stop (0: no watchdog,
				      * e.g. while attaching) */
	int64_t max_pause_ns;        /* the watchdog's limit (0: no watchdog) */
	volatile uint64_t rescues;   /* stops the watchdog ended */
	volatile int64_t longest_ns; /* the longest of those stops, when the watchdog ended it */
	volatile int64_t rescued_at_ns; /* CLOCK_MONOTONIC time of the last rescue */
};

struct guard {
	pid_t pid;                  /* the guard process, 0 if none */
	int pipe_w;                 /* write end held by the parent: EOF tells the guard we are gone */
	struct guard_shared *sh;    /* shared state */
	uint64_t seen;              /* rescues the parent has acknowledged */
	int err;                    /* sticky error code */
	char errstr[128];           /* what went wrong */
};

/* Fork the guard in a session of its own (a signal to gdbsample's process group -- a closed
 * terminal, `timeout -s KILL` -- does not reach it) and let *it* connect to the gdbstub (host:port,
 * or the unix socket path), handing the connection to us in *gdb: so from the moment connecting
 * stops the VM, someone outside our process group holds the socket and can resume it.
 * resume_pkt is the framed packet that resumes ("$c#63"); max_pause_ns the watchdog's limit (0:
 * none). The VM is assumed stopped, without watchdog, until guard_leave. rescue(arg), if set,
 * runs in the guard after that, whenever the parent did not finish cleanly (it closes a gdbstub
 * opened through the monitor); arg is the parent's copy at fork time. -1: the guard could not be
 * started (g->errstr), or connecting failed (gdb->err/errstr). */
int guard_start(struct guard *g, struct gdb *gdb, const char *host, int port, const char *path,
		const char *resume_pkt, int64_t max_pause_ns, void (*rescue)(void *), void *arg);
/* The VM is about to be stopped (the watchdog starts timing) / has been resumed. */
void guard_enter(struct guard *g);
void guard_leave(struct guard *g);
/* For struct gdb's write gate: lock (enter = 1; -1 if the watchdog has resumed the VM since
 * guard_enter) or unlock (enter = 0) the socket. */
int guard_gate(void *g, int enter);
/* After a write was refused: the watchdog resumed the VM; acknowledge it (the VM runs). Returns
 * the rescues so far. */
uint64_t guard_acknowledge(struct guard *g);
/* Let the guard go and reap it: clean = we detached ourselves (the guard exits quietly);
 * otherwise it resumes the VM if a sample may be in flight, exactly as if we had died. */
void guard_finish(struct guard *g, int clean);

#endif
