/* SPDX-License-Identifier: MIT */
/* os_testkernel.c: our test kernel's current task -- a built-in task description, resolved through its DWARF. */
#include "guestos.h"
#include "taskdesc.h"
#include <stdio.h>
#include <string.h>

/*
 * The kernel's per-CPU base register (x86 gs_base, aarch64 TPIDR_EL1, riscv64 tp) points at its
 * struct cpu (kernel/cpu.h), whose `current` points at the running struct task (kernel/sched.h:
 * `pid`, `name`). That is said once, as data (TESTKERNEL_TASKS), and resolved through the image's
 * DWARF like any description given with --tasks: the sampler knows the names, never the layout.
 */
int guestos_testkernel_dwarf(struct guestos *os, Elf *elf)
{
	struct taskdesc d;
	char err[512];
	if (taskdesc_parse(TESTKERNEL_TASKS, strlen(TESTKERNEL_TASKS), &d, err, sizeof err) < 0 ||
	    guestos_desc_dwarf(os, elf, &d, err, sizeof err) < 0) {
		os->os = OS_NONE;
		snprintf(os->why, sizeof os->why, "not our test kernel: %s", err);
		return -1;
	}
	char what[sizeof os->what];
	snprintf(what, sizeof what, "testkernel: DWARF, %s", os->what);
	memcpy(os->what, what, sizeof what);
	os->os = OS_TESTKERNEL;
	return 0;
}
