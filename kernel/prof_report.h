/* SPDX-License-Identifier: MIT */
/* prof_report.h: folding recorded samples into the text report shared with gdbsample. */
#ifndef PROF_REPORT_H
#define PROF_REPORT_H
#include <stdint.h>
#include "cpu.h"
#include "lib.h"
#include "pmu.h"
#include "profiler.h"

struct prof_record {
	int32_t pid;			/* task running when the sample was taken */
	uint8_t idle;			/* that task was an idle task */
	uint8_t n;			/* frames used */
	uint64_t frames[PROF_FRAMES];	/* [0] interrupted RIP, then return addresses */
};

struct prof_run {
	uint64_t ms;			/* the window asked for */
	uint64_t elapsed_ms;		/* guest time the window really took */
	enum pmu_kind kind;		/* PMU_NONE = tick source */
	int cpus;			/* CPUs that sampled */
	int pid;			/* only this pid, or -1 for every task */
	int chains;			/* chains to print */
	const struct prof_record *buf[MAX_CPUS];	/* each CPU's records */
	uint32_t count[MAX_CPUS];
	uint64_t dropped;		/* over all CPUs */
};

/* Folds and prints; the chain table is allocated on the heap here and freed before return. */
void prof_report(struct out *o, const struct prof_run *run);
#endif
