/* SPDX-License-Identifier: MIT */
/* offcpu_io.h: record --off-cpu's reads in a stop -- the task table and the saved stacks in one trip -- and their walks. */
#ifndef OFFCPU_IO_H
#define OFFCPU_IO_H
#include "offcpu.h"
#include "sample.h"
#include "session.h"
#include "summary.h"

/* The guest's task table found (our test kernel's, through its DWARF), *out allocated: 0, or -1
 * with one line in err. */
int offcpu_open(struct session *ss, struct offcpu **out, char *err, size_t cap);
void offcpu_close(struct offcpu *oc);
/* In a stop (the VM stopped by us, after the vCPUs' reads): the table's slice and the predicted
 * saved stacks in one trip, the off-CPU stacks walked into out (at most cap; their t_ns is the
 * caller's). How many, or -1 when the reads failed (ss->g.err: ERR_RESCUED when the pause
 * watchdog took over, which the round recovers from, else a lost connection). */
int offcpu_take(struct session *ss, struct offcpu *oc, int64_t now, struct sample *out, int cap);
/* The run's end (no stop needed): each task still waiting, its last walked stack for the time
 * since its last visit (offcpu_flush), into out (at most cap); call until it returns 0. */
int offcpu_finish(struct offcpu *oc, int64_t now, struct sample *out, int cap);
/* The summary's off-CPU rows. */
void offcpu_summary(const struct offcpu *oc, struct summary *t);

#endif
