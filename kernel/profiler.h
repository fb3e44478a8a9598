/* SPDX-License-Identifier: MIT */
/* profiler.h: the in-guest sampling profiler (`profile`): PMU/NMI source or the timer tick. */
#ifndef PROFILER_H
#define PROFILER_H
#include "lib.h"

struct trapframe;

#define PROF_FRAMES 8		/* frames per sample: the interrupted RIP + 7 callers */
#define PROF_BUF 4096		/* records per CPU buffer: 4 s of a 1 kHz PMU source */
#define PROF_MAX_CHAINS 128	/* distinct chains folded at report time */
#define PROF_MAX_MS 2000

void prof_tick(struct trapframe *tf);	/* timer interrupt: arm/disarm, or sample (tick source) */
int prof_nmi(struct trapframe *tf);	/* NMI: 1 if it was our counter's overflow (sampled) */
void profile_command(int argc, char **argv, struct out *o);	/* the shell's `profile` */
void prof_lscpu(struct out *o);		/* lscpu's lines about the PMU decision */
#endif
