/* SPDX-License-Identifier: MIT */
/* slice.h: guest memory read in slices -- the VM runs between them, so no single stop lasts long. */
#ifndef SLICE_H
#define SLICE_H
#include <stddef.h>
#include <stdint.h>

#define SLICE_BYTES (32u << 10)   /* bytes read in one stop at most (the bound tests check) ... */
#define SLICE_NS 8000000LL        /* ...and no new read after this long in one stop */
#define SLICE_CHUNK 4096u         /* bytes per read request: 2 `m` packets in one write */
#define SLICE_RUN_US 1000         /* the VM runs this long between slices */
#define SLICE_KERNEL_WAIT 50      /* re-stops tried to find a vCPU in kernel mode (KPTI) */

/* What the stops that read cost (the summary's longest_stop_us and longest_stop_bytes). */
struct slice_stats {
	uint64_t stops;          /* stops that read (each slice is one) */
	int64_t first_ns;        /* the first of them (locate's: the attach's, with its handshake) */
	int64_t longest_ns;      /* the longest of them, from its stop to its resume */
	uint64_t most_bytes;     /* the most bytes one of them read */
	uint64_t bytes;          /* bytes read in all */
};

/* The transport, so the decisions can be tested with a fake: each 0 ok, -1 connection error;
 * read also -2 unmapped; kernel_cpu a vCPU in kernel mode at this stop, -1 none, -2 error. Each
 * may also say -3: gdbsample was held up and the pause watchdog resumed the VM (the transport
 * has acknowledged it; the VM runs now) -- the reader stops it again and goes on. The transport
 * bounds how many rescues it acknowledges (then -1/-2). */
struct slice_io {
	int (*read)(void *arg, int cpu, uint64_t addr, void *buf, size_t len);
	int (*cont)(void *arg);  /* resume (and leave the watchdog) */
	int (*stop)(void *arg);  /* stop again (under the watchdog) */
	int (*kernel_cpu)(void *arg);
	int64_t (*now)(void *arg); /* a monotonic clock, ns */
	void *arg;
};

struct slice_reader {
	struct slice_io io;
	int cpu;                 /* the vCPU reads translate through (in kernel mode at this stop) */
	int may_run;             /* 0: the VM is not ours to resume (paused before we came): one stop */
	uint64_t since;          /* bytes read in this stop */
	int64_t stopped_ns;      /* when this stop began */
	struct slice_stats *st;  /* where its stops are counted */
	struct slice_stats *also; /* ...and here too while set (a part of the reading: the modules') */
	int rescued;             /* rescues its transport acknowledged (-3), which it bounds with this */
};

/* Start reading in a stop that began at stopped_ns with cpu in kernel mode. */
void slice_begin(struct slice_reader *s, int64_t stopped_ns, int cpu);
/* How many of len bytes to read now in a stop that read `since` bytes and lasted elapsed_ns:
 * 0 means end this stop first (pure: the bound lives here). */
size_t slice_take(uint64_t since, int64_t elapsed_ns, size_t len);
/* Read len bytes at addr, letting the VM run between slices: 0, -1 unmapped, -2 connection. */
int slice_read(struct slice_reader *s, uint64_t addr, void *buf, size_t len);
/* Let the VM run a moment (running: it runs already -- a rescue ended the stop) and stop it again
 * with a vCPU in kernel mode if one comes within SLICE_KERNEL_WAIT stops (s->cpu): 0, -2 error. */
int slice_restop(struct slice_reader *s, int running);
/* Count the stop in progress as ended now (the caller resumes, or a sample round does). */
void slice_end(struct slice_reader *s);

#endif
