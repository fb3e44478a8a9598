/* SPDX-License-Identifier: MIT */
/* wirestats.h: the sampler's counters of the wire -- trips, stop replies, Hg, refused requests. */
#ifndef WIRESTATS_H
#define WIRESTATS_H
#include <stdint.h>

/* Kept by sample.c (the plan keeps its own: plan.h's sampler_stats); all in the summary. */
struct wire_stats {
	uint64_t vcpu_samples;          /* vCPU samples produced */
	uint64_t trips;                 /* round trips in total */
	uint64_t no_stop_reply;         /* VM was already stopped (0x03 had no stop reply) */
	uint64_t hg_elided;             /* Hg packets saved because the stop vCPU was the one wanted */
	uint64_t hg_wrong;              /* ...of which the stop vCPU turned out different (redone) */
	uint64_t rejected;              /* requests NAKed or garbled (retried next trip) */
};

#endif
