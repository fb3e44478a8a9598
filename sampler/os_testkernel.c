/* SPDX-License-Identifier: MIT */
/* os_testkernel.c: our test kernel's current task -- struct cpu and struct task from its DWARF (libdw). */
#include "guestos.h"
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <stdio.h>
#include <string.h>

/*
 * The kernel's GS base is its struct cpu (kernel/cpu.h: `self` at gs:0), whose `current` points
 * at the running struct task (kernel/sched.h: `pid`, `name`). The offsets come from the image's
 * DWARF, as a debugger would find them: the sampler knows the names, never the layout.
 */

/* A member's byte offset in a struct DIE (and its size); -1 if absent. */
static long member(Dwarf_Die *st, const char *name, Dwarf_Word *size)
{
	Dwarf_Die m;
	if (dwarf_child(st, &m) != 0) return -1;
	do {
		const char *n = dwarf_diename(&m);
		if (dwarf_tag(&m) != DW_TAG_member || !n || strcmp(n, name)) continue;
		Dwarf_Attribute a;
		Dwarf_Word off;
		if (!dwarf_attr(&m, DW_AT_data_member_location, &a) || dwarf_formudata(&a, &off) != 0) return -1;
		Dwarf_Die type;
		if (!dwarf_attr(&m, DW_AT_type, &a) || !dwarf_formref_die(&a, &type) ||
		    dwarf_aggregate_size(&type, size) != 0)
			*size = 0;
		return (long)off;
	} while (dwarf_siblingof(&m, &m) == 0);
	return -1;
}

/* The first complete definition of `struct name` in any unit; 0 found. */
static int find_struct(Dwarf *dw, const char *name, Dwarf_Die *out)
{
	Dwarf_Off cu = 0, next;
	size_t hsize;
	while (dwarf_nextcu(dw, cu, &next, &hsize, NULL, NULL, NULL) == 0) {
		Dwarf_Die cudie, d;
		if (dwarf_offdie(dw, cu + hsize, &cudie) && dwarf_child(&cudie, &d) == 0) {
			do {
				const char *n = dwarf_diename(&d);
				if (dwarf_tag(&d) == DW_TAG_structure_type && n && !strcmp(n, name) &&
				    !dwarf_hasattr(&d, DW_AT_declaration)) {
					*out = d;
					return 0;
				}
			} while (dwarf_siblingof(&d, &d) == 0);
		}
		cu = next;
	}
	return -1;
}

int guestos_testkernel_dwarf(struct guestos *os, Elf *elf)
{
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	int rc = -1;
	if (!dw) {
		snprintf(os->why, sizeof os->why, "the image has no DWARF to find struct cpu and struct task in");
		os->os = OS_NONE;
		return -1;
	}
	Dwarf_Die cpu, task;
	Dwarf_Word csz = 0, psz = 0, nsz = 0;
	long cur = -1, pid = -1, name = -1;
	if (find_struct(dw, "cpu", &cpu) == 0 && find_struct(dw, "task", &task) == 0) {
		cur = member(&cpu, "current", &csz);
		pid = member(&task, "pid", &psz);
		name = member(&task, "name", &nsz);
	}
	if (cur < 0 || pid < 0 || name < 0 || csz != 8 || psz != 4 || nsz < 1) {
		snprintf(os->why, sizeof os->why, "the image's DWARF has no struct cpu.current and struct "
			 "task.pid/.name (not our test kernel)");
		os->os = OS_NONE;
		goto out;
	}
	os->os = OS_TESTKERNEL;
	os->cur_off = (uint64_t)cur;
	os->pid_off = os->tgid_off = (uint32_t)pid; /* no threads: the thread group is the task */
	os->comm_off = (uint32_t)name;
	os->comm_len = nsz > TASK_COMM_LEN ? TASK_COMM_LEN : (uint32_t)nsz;
	snprintf(os->what, sizeof os->what, "testkernel: DWARF, cpu.current at +0x%lx, task pid +%ld name +%ld",
		 cur, pid, name);
	os->why[0] = 0;
	rc = 0;
out:
	dwarf_end(dw);
	return rc;
}
