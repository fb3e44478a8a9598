/* SPDX-License-Identifier: MIT */
/* sampler.h: the I/O half of sampling (sample.c) -- one sample of every selected vCPU in
 * (usually) one round trip to the gdbstub, as the plan (plan.h) asks. */
#ifndef SAMPLER_H
#define SAMPLER_H
#include <stdint.h>
#include "err.h"
#include "gdb.h"
#include "plan.h"
#include "wirestats.h"
#include "sample.h"

#define SAMPLE_MAX_TRIPS 4      /* round trips per sample: 1 normally, more on a missed prediction */
#define SAMPLE_GROUP 16         /* vCPUs per pipelined write (bounds unread reply bytes) */
#define SAMPLE_EXTRA_MAX 256    /* `m` requests of the caller's own reads one stop carries at most */

/* The sampler: the connection, the plan, and what one round trip learned about the stop. */
struct sampler {
	struct gdb *g;                  /* the connection */
	struct plan p;                  /* what to ask and what the answers mean */
	struct wire_stats st;           /* the wire's counters (the plan keeps its own in p.st) */
	int stop_tid;                   /* thread named by the last stop reply (-1 unknown): QEMU
					 * selects it for g/m after every stop, so its Hg can be left out */
	int64_t stopped_at_ns;          /* CLOCK_MONOTONIC when this round's stop reply was read (the
					 * VM is stopped from then on for sure); 0 if none came */
	int nv;                         /* vCPUs sampled */
	struct vcpu *v;                 /* their state */
	/* The caller's own reads, known before the stop (record --off-cpu's predicted ones): sent
	 * in the stop's first write behind the vCPUs' requests, through vCPU index xcpu -- no round
	 * trip of their own. Set before sampler_take; x_sent says they went (each block's ok its
	 * fate), else the caller reads them itself. */
	struct gdb_block *xb;
	int nxb, xcpu, x_sent;
	int err;                        /* sticky error code */
	char errstr[ERR_MAX];           /* what went wrong */
};

/* Prepare to sample the listed vCPU indexes. */
int sampler_init(struct sampler *s, struct gdb *g, const struct sampler_cfg *cfg, const int *cpus, int ncpus);
/* Stop the VM and sample every vCPU (VM left stopped); out gets s->nv entries, *nout the
 * number produced (failed vCPUs are counted and skipped). -1 on a connection error. */
int sampler_take(struct sampler *s, struct sample *out, int *nout);
/* Resume the VM. */
int sampler_resume(struct sampler *s);
void sampler_free(struct sampler *s);

#endif
