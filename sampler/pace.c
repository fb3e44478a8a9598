/* SPDX-License-Identifier: MIT */
/* pace.c: absolute-deadline pacer -- sampling cost never accumulates as drift; lateness measured. */
#include "pace.h"
#include "clock.h"
#include <time.h>

void pace_init(struct pace *p, int rate_hz, int64_t now_ns)
{
	*p = (struct pace){ 0 };
	p->period_ns = 1000000000LL / rate_hz;
	p->next_ns = now_ns + p->period_ns;
}

int64_t pace_deadline(const struct pace *p)
{
	return p->next_ns;
}

void pace_tick(struct pace *p, int64_t now_ns)
{
	int64_t late = now_ns - p->next_ns;
	if (late < 0) late = 0;
	p->late_total_ns += late;
	if (late > p->late_max_ns) p->late_max_ns = late;
	p->ticks++;
	p->next_ns += p->period_ns;
	/* Deadlines already in the past are dropped (counted) instead of served in a burst. */
	if (now_ns > p->next_ns) {
		int64_t behind = (now_ns - p->next_ns + p->period_ns - 1) / p->period_ns;
		p->skipped += (uint64_t)behind;
		p->next_ns += behind * p->period_ns;
	}
}

int pace_should_warn(struct pace *p, int64_t now_ns)
{
	if (p->skipped == p->skipped_at_warn) return 0;
	if (p->last_warn_ns && now_ns - p->last_warn_ns < 1000000000LL) return 0;
	p->last_warn_ns = now_ns;
	p->skipped_at_warn = p->skipped;
	return 1;
}

void pace_sleep(const struct pace *p)
{
	struct timespec ts = { p->next_ns / 1000000000LL, p->next_ns % 1000000000LL };
	clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL);
}

int64_t pace_now(void)
{
	return now_ns();
}
