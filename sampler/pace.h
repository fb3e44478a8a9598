/* SPDX-License-Identifier: MIT */
/* pace.h: absolute-deadline pacer -- sampling cost never accumulates as drift; lateness measured. */
#ifndef PACE_H
#define PACE_H
#include <stdint.h>

struct pace {
	int64_t period_ns;      /* 1e9 / rate */
	int64_t next_ns;        /* the next deadline (CLOCK_MONOTONIC) */
	int64_t late_total_ns;  /* sum of lateness over all ticks */
	int64_t late_max_ns;    /* worst lateness */
	uint64_t ticks;         /* deadlines served */
	uint64_t skipped;       /* deadlines dropped because we were more than a period behind */
	int64_t last_warn_ns;   /* when we last warned about falling behind (0 = never) */
	uint64_t skipped_at_warn; /* skipped count at that warning */
};

/* Start pacing at rate_hz with the first deadline one period after now_ns. */
void pace_init(struct pace *p, int rate_hz, int64_t now_ns);
/* The deadline to sleep until before the next sample. */
int64_t pace_deadline(const struct pace *p);
/* A sample starts at now_ns (after sleeping): account lateness, advance the deadline,
 * skipping whole periods we are behind by. */
void pace_tick(struct pace *p, int64_t now_ns);
/* 1 if we should warn now ("falling behind, lower -r"): at most once a second, only if deadlines
 * were skipped since the last warning. */
int pace_should_warn(struct pace *p, int64_t now_ns);
/* Sleep until pace_deadline (TIMER_ABSTIME, CLOCK_MONOTONIC); returns early on a signal. */
void pace_sleep(const struct pace *p);
/* now_ns() (clock.h), the clock the pacer runs on. */
int64_t pace_now(void);

#endif
