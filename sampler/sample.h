/* SPDX-License-Identifier: MIT */
/* sample.h: the record that flows between stages -- one vCPU's stack at one instant, its flags
 * and its task -- as the sampler makes it and writers, the capture and tests take it. */
#ifndef SAMPLE_H
#define SAMPLE_H
#include <stdint.h>
#include "task.h"

#define SAMPLE_MAX_FRAMES 255   /* frames per sample (the capture stores a u8 count) */

/* Sample flags (also the capture's flag bits). SF_UNRELIABLE: the walk did not end at a stack's
 * natural bottom (an end marker, user mode, --max-frames), or a frame came from a fallback method
 * (the frame-pointer guess where ORC or CFI had nothing) -- the kernel's "unreliable" stack.
 * SF_FIRMWARE: the vCPU ran firmware below the kernel (riscv64 M-mode: OpenSBI), only the pc
 * is recorded (the firmware's registers lead to no kernel frame). */
enum { SF_IDLE = 1, SF_IRQOFF = 2, SF_USER = 4, SF_PARTIAL = 8, SF_UNRELIABLE = 16, SF_FIRMWARE = 32 };

/* One vCPU's sample. */
struct sample {
	uint64_t t_ns;                         /* time since the run started */
	uint16_t cpu;                          /* vCPU index */
	uint8_t flags;                         /* SF_* */
	uint8_t n;                             /* frames used: frames[0] = pc, then return addresses */
	uint64_t exact[4];                     /* bit i: frames[i] (i > 0) is an interrupted pc (an
						* interrupt or exception frame's), not a return address */
	uint8_t offcpu;                        /* record --off-cpu: 0 an on-CPU sample; else the
						* task's OC_* class (offcpu.h): frames[0] is where it
						* resumes, and it stands for weight sample periods */
	uint32_t weight;                       /* periods it stands for (on-CPU samples: 1 or 0) */
	int has_task;                          /* task holds who ran (attribution on and read) */
	struct task_id task;                   /* ...who it was (task.h) */
	uint64_t frames[SAMPLE_MAX_FRAMES];    /* the chain, leaf first */
};

#endif
