/* SPDX-License-Identifier: MIT */
/* kfind.h: a bare `gdbsample -p PORT` on a Linux guest -- the kernel found from a vCPU's pc in guest
 * memory: its kallsyms tables (names), then by those names its ORC and BTF, read in slices so that
 * no single stop of the VM lasts longer than KFIND_SLICE_MS. */
#ifndef KFIND_H
#define KFIND_H
#include <stdint.h>

#define KFIND_SLICE_MS 12         /* reading stops for a new slice after this long: with the
				   * packets in flight and the resume, each stop stays under 20 ms */
#define KFIND_RUN_MS 5            /* the VM runs this long between slices */
#define KFIND_SCAN_MAX (96u << 20) /* searched above the pc for the kallsyms tables */

struct session;

/* What reading the kernel from guest memory cost (for the summary and the benchmark). */
struct kfind_stats {
	int tried;             /* a bare -p looked for a kernel in guest memory */
	int found;             /* ...and found its kallsyms tables */
	unsigned stops;        /* stops of the VM it made (the first is the attach's) */
	int64_t first_ns;      /* the attach's stop: from connecting to the first resume (the handshake
				* and the first slice) */
	int64_t longest_ns;    /* the longest of the others, from its stop reply to the resume */
	unsigned over;         /* ...how many of them lasted longer than 20 ms (a loaded host) */
	unsigned rescued;      /* ...how many the pause watchdog ended (held up past --max-pause) */
	uint64_t bytes;        /* guest memory read */
	uint64_t most_bytes;   /* the most of it one stop read */
	int64_t left_stopped_ns; /* when the stop the session goes on in began (0: it runs) */
	int64_t elapsed_ns;    /* wall time from the attach's stop to the end */
	int orc, btf;          /* ORC / BTF read from guest memory too */
	int cached;            /* the names and tables came from the cache (checked against the guest) */
	int reread;            /* the probe's guess of where the tables start was wrong: read it all */
	int cache_written;     /* ...or were read cold and kept there */
};

/*
 * With no -e: if a vCPU runs in the kernel's upper half, find its kallsyms tables above the pc
 * and fill ss->img as a map of this boot would (names at the running addresses), with ORC and
 * BTF from memory when the names locate them. 0: found (ss->img.syms.n > 0), or no kernel to
 * look for / none found (ss->img.syms.n == 0, a warning said why); -1 on a connection error or
 * tables that are there but inconsistent (ss->err).
 */
int kfind_kernel(struct session *ss);

#endif
