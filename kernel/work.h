/* SPDX-License-Identifier: MIT */
/* work.h: workloads with a known answer (see docs/workloads.md), started by the shell. */
#ifndef WORK_H
#define WORK_H
#include "lib.h"

/* `work ...` with argv[0] == "work"; prints one line on success or one error line. */
void work_command(int argc, char **argv, struct out *o);
#endif
