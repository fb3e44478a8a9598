/* SPDX-License-Identifier: MIT */
/* record.h: the sampling loop shared by `record` and `top`. */
#ifndef RECORD_H
#define RECORD_H
#include <signal.h>
#include "pace.h"
#include "session.h"
#include "stats.h"
#include "writer.h"

extern volatile sig_atomic_t record_stop; /* set by SIGINT/SIGTERM: finish the sample, then leave */

/* Where each sample goes. */
struct sinks {
	struct writer *all;      /* gets every sample, idle included (capture), or NULL */
	struct writer *text;     /* gets non-idle samples (all with --idle), or NULL */
	/* Called every tick_ns (for `top`, `record`'s status line), or NULL. */
	void (*tick)(void *arg, const struct stats *st, const struct pace *p);
	void *tick_arg;          /* its argument */
	int64_t tick_ns;         /* how often tick is called at most; 0: once a second */
	/* 1 once the output's reader has gone (a closed pipe: output_gone), or NULL. Asked every
	 * round and when a writer fails: the run then ends as on SIGINT, and that failure is no error. */
	int (*gone)(void *arg);
	void *gone_arg;          /* its argument */
};

/* Install the SIGINT/SIGTERM handlers that set record_stop. */
void record_signals(void);
/* Sample at o->rate until -d elapses, record_stop or the output's reader has gone; -1 on a lost
 * connection or writer error (ss->err set; everything sampled so far has been given to the sinks). */
int record_loop(struct session *ss, struct sinks *k, struct stats *st, struct pace *p);

#endif
