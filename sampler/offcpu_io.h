/* SPDX-License-Identifier: MIT */
/* offcpu_io.h: record --off-cpu's reads in a stop -- the task table and the saved stacks in one trip -- and their walks. */
#ifndef OFFCPU_IO_H
#define OFFCPU_IO_H
#include "offcpu.h"
#include "sample.h"
#include "session.h"
#include "summary.h"

/* The guest's tasks found (our test kernel's table, through its DWARF; a Linux guest's list,
 * through its BTF, walked once in stops of the session's slicer), *out allocated: 0, or -1 with
 * one line in err. */
int offcpu_open(struct session *ss, struct offcpu **out, char *err, size_t cap);
void offcpu_close(struct offcpu *oc);
/* Whether the image can say where the guest's tasks are (before connecting): 0, or -1 with one
 * line in err. */
struct image;
int offcpu_image_check(const struct image *im, char *err, size_t cap);
/* Before a stop: its reads planned -- the table's slice (a list's next tasks) and the predicted
 * saved stacks -- as oc->blocks, for the sampler to carry in the stop's own write through
 * oc->cpu (sampler.xb). How many. */
int offcpu_prepare(struct offcpu *oc);
/* In that stop, after the vCPUs' reads (sent: the sampler carried the blocks): the reads done in
 * a trip of their own through vCPU cpu if the sampler did not carry them, or if every one failed
 * through a vCPU that was in user mode (user; with KPTI it does not map the kernel) -- cpu is one
 * in kernel mode at this stop, -1 none (then nothing is read, counted) -- and the off-CPU stacks
 * walked into out (at most cap; their t_ns is the caller's). How many, or -1 when the reads failed (ss->g.err: ERR_RESCUED when the pause
 * watchdog took over, which the round recovers from, else a lost connection). */
int offcpu_take(struct session *ss, struct offcpu *oc, int sent, int cpu, int user, int64_t now, struct sample *out, int cap);
/* The run's end (no stop needed): each task still waiting, its last walked stack for the time
 * since its last visit (offcpu_flush), into out (at most cap); call until it returns 0. */
int offcpu_finish(struct offcpu *oc, int64_t now, struct sample *out, int cap);
/* The summary's off-CPU rows. */
void offcpu_summary(const struct offcpu *oc, struct summary *t);

#endif
