/* guard.h: a forked guard that resumes the guest if gdbsample dies while the VM is stopped. */
#ifndef GUARD_H
#define GUARD_H
#include <sys/types.h>

/* State shared with the guard through an anonymous shared mapping. */
struct guard_shared {
	volatile int in_flight; /* 1 while the VM may be stopped by us */
	volatile int done;      /* 1 once the parent detached cleanly: the guard has nothing to do */
};

struct guard {
	pid_t pid;                  /* the guard process, 0 if none */
	int pipe_w;                 /* write end held by the parent: EOF tells the guard we are gone */
	struct guard_shared *sh;    /* shared flags */
	int err;                    /* sticky error code */
	char errstr[128];           /* what went wrong */
};

/* Fork the guard sharing socket fd; resume_pkt is the framed packet that resumes ("$c#63").
 * The VM is assumed stopped (in flight) until guard_leave. */
/* rescue(arg), if set, runs in the guard after that, whenever the parent did not finish cleanly
 * (it closes a gdbstub opened through the monitor); arg is the parent's copy at fork time. */
int guard_start(struct guard *g, int sockfd, const char *resume_pkt, void (*rescue)(void *), void *arg);
/* The VM is about to be stopped / has been resumed. */
void guard_enter(struct guard *g);
void guard_leave(struct guard *g);
/* Let the guard go and reap it: clean = we detached ourselves (the guard exits quietly);
 * otherwise it resumes the VM if a sample may be in flight, exactly as if we had died. */
void guard_finish(struct guard *g, int clean);

#endif
