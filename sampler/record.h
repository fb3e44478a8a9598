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
/* record_phase.c: the same, sampling only while ph is open, its bounds kept at BEGIN's and END's
 * breakpoints (phase.h; ph's addresses resolved, the VM stopped as session_open left it). Ends
 * also when the occurrence ph->want closed, or a hit passed --max-hits. */
struct phase;
int record_phase_loop(struct session *ss, struct sinks *k, struct stats *st, struct pace *p, struct phase *ph);
/* record.c's shared steps: whether the output's reader has gone; a sample to the sinks (0, -1 on
 * a writer's error with ss->err set, 1 when the reader has gone); the sinks' tick when due. */
int record_sinks_gone(const struct sinks *k);
int record_deliver(struct session *ss, struct sinks *k, struct stats *st, const struct sample *s);
int record_deliver_offcpu(struct session *ss, struct sinks *k, const struct sample *s);
void record_tick_if_due(struct sinks *k, struct stats *st, const struct pace *p, int64_t now, int64_t every,
			int64_t *next);

#endif
