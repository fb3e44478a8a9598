/* SPDX-License-Identifier: MIT */
/* clock.h: the one monotonic clock every deadline, pause and rate is measured on. */
#ifndef CLOCK_H
#define CLOCK_H
#include <stdint.h>
#include <time.h>

/* CLOCK_MONOTONIC in nanoseconds (since boot: comparable across processes on this host). */
static inline int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

/* The same clock in milliseconds, for the timeouts written in ms. */
static inline long long now_ms(void)
{
	return now_ns() / 1000000;
}

#endif
