/* SPDX-License-Identifier: MIT */
/* stats.h: run statistics -- pause histogram, counters, and their rows of the end-of-run summary. */
#ifndef STATS_H
#define STATS_H
#include <stddef.h>
#include <stdint.h>
#include "gdb.h"
#include "pace.h"
#include "plan.h"
#include "wirestats.h"
#include "summary.h"

#define STATS_HIST_US 100000 /* pauses are binned per microsecond up to 100 ms */

struct stats {
	uint32_t hist[STATS_HIST_US + 1]; /* pause counts by microsecond; last bin = longer */
	uint64_t stops;                    /* stop/resume cycles (samples of the whole VM) */
	int64_t paused_ns;                 /* total of the pauses (stop written to resume written) */
	int64_t stopped_ns;                /* total time the VM surely stood still (stop reply read to
					    * resume written): a lower bound of the guest's loss, as
					    * paused_ns is an upper one (QEMU freezes the guest's
					    * clock somewhere between our stop byte and its stop reply) */
	int64_t max_pause_ns;              /* longest pause */
	int64_t start_ns, end_ns;          /* run start and end (CLOCK_MONOTONIC) */
	uint64_t kept;                     /* vCPU samples given to the output */
	uint64_t idle;                     /* idle vCPU samples */
	uint64_t dropped;                  /* vCPU samples lost (registers unreadable) */
	uint64_t filtered;                 /* vCPU samples --pid/--comm left out */
	uint64_t unnamed_frames;           /* frames of kept samples no symbol names (-e given):
					    * shown as addresses */
	uint64_t firmware;                 /* kept samples in firmware (riscv64 M-mode): [firmware] */
	uint64_t failed_stops;             /* sample rounds that failed outright */
	uint64_t rescues;                  /* stops the pause watchdog ended (gdbsample held up) */
	int64_t rescue_max_ns;             /* the longest of them, as the watchdog saw it */
	uint64_t rescued_samples;          /* sample rounds lost to those rescues */
};

void stats_init(struct stats *st, int64_t now_ns);
/* One stop/resume cycle: its latency (stop written to resume written) and the time the VM surely
 * stood still (stop reply read to resume written). */
void stats_pause(struct stats *st, int64_t pause_ns, int64_t stopped_ns);
/* Pause percentile (0..100) in microseconds. */
double stats_pause_pct(const struct stats *st, double pct);
/* The run's rows of the summary table (summary.h): what people read on stderr at the end, and
 * the key value lines of the capture's trailer. */
void stats_summary(const struct stats *st, const struct sampler_stats *ss, const struct wire_stats *ws,
		   const struct gdb_stats *gs,
		   const struct pace *p, int ncpu, int rate_hz, int keep_idle, struct summary *t);

#endif
