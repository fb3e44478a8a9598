/* SPDX-License-Identifier: MIT */
/* offcpu_dwarf.h: our test kernel's task table for record --off-cpu, found through its DWARF and ELF symbols. */
#ifndef OFFCPU_DWARF_H
#define OFFCPU_DWARF_H
#include <libelf.h>
#include <stddef.h>
#include "offcpu.h"

/* The task table of our test kernel's image elf: 0, or -1 with one line in err (not ours, or
 * built before it exported swtch_resume_pc). */
int offcpu_testkernel_layout(Elf *elf, struct offcpu_layout *L, char *err, size_t cap);

#endif
