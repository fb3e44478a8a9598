/* SPDX-License-Identifier: MIT */
/* slice.c: guest memory read in slices -- the VM runs between them, so no single stop lasts long. */
#include "slice.h"
#include <unistd.h>

void slice_begin(struct slice_reader *s, int64_t stopped_ns, int cpu)
{
	s->since = 0;
	s->stopped_ns = stopped_ns;
	s->cpu = cpu;
}

size_t slice_take(uint64_t since, int64_t elapsed_ns, size_t len)
{
	if (since >= SLICE_BYTES || (since && elapsed_ns >= SLICE_NS)) return 0;
	size_t room = (size_t)(SLICE_BYTES - since), n = len < room ? len : room;
	return n < SLICE_CHUNK ? n : SLICE_CHUNK;
}

static void count(struct slice_stats *st, int64_t d, uint64_t bytes)
{
	if (!st->stops++) st->first_ns = d;
	if (d > st->longest_ns) st->longest_ns = d;
	if (bytes > st->most_bytes) st->most_bytes = bytes;
}

void slice_end(struct slice_reader *s)
{
	int64_t d = s->io.now(s->io.arg) - s->stopped_ns;
	count(s->st, d, s->since);
	if (s->also) count(s->also, d, s->since);
}

/* End this stop (unless a rescue ended it: running), let the VM run a moment, stop it with a vCPU
 * in kernel mode (with KPTI a vCPU in user mode does not map the kernel; if none comes, reads go
 * on through the previous one and fail if it does not map them). A rescue on the way leaves the
 * VM running: it is stopped again, as often as the transport acknowledges rescues. */
int slice_restop(struct slice_reader *s, int running)
{
	for (int tries = 0; tries < SLICE_KERNEL_WAIT || running; tries++) {
		if (!running) {
			slice_end(s);
			int rc = s->io.cont(s->io.arg);
			if (rc == -1) return -2; /* -3: the watchdog resumed it first; it runs anyway */
		}
		running = 1;
		usleep(SLICE_RUN_US);
		int rc = s->io.stop(s->io.arg);
		if (rc == -1) return -2;
		if (rc == -3) continue; /* not stopped: the watchdog resumed it under us */
		running = 0;
		slice_begin(s, s->io.now(s->io.arg), s->cpu);
		int cpu = s->io.kernel_cpu(s->io.arg);
		if (cpu == -2) return -2;
		if (cpu == -3) {
			running = 1;
			continue;
		}
		if (cpu >= 0) {
			s->cpu = cpu;
			return 0;
		}
	}
	return 0;
}

int slice_read(struct slice_reader *s, uint64_t addr, void *buf, size_t len)
{
	while (len) {
		size_t n = s->may_run ? slice_take(s->since, s->io.now(s->io.arg) - s->stopped_ns, len)
				      : len < SLICE_CHUNK ? len : SLICE_CHUNK;
		if (!n) {
			int rc = slice_restop(s, 0);
			if (rc) return rc;
			continue;
		}
		int rc = s->io.read(s->io.arg, s->cpu, addr, buf, n);
		if (rc == -3) { /* the watchdog ended this stop under us: stop again, read it again */
			if (!s->may_run || slice_restop(s, 1) < 0) return -2;
			continue;
		}
		if (rc == -1) return -2;
		if (rc) return -1;
		s->since += n;
		s->st->bytes += n;
		if (s->also) s->also->bytes += n;
		addr += n;
		buf = (uint8_t *)buf + n;
		len -= n;
	}
	return 0;
}
