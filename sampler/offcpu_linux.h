/* SPDX-License-Identifier: MIT */
/* offcpu_linux.h: a Linux guest's task list for record --off-cpu, found through its BTF and kernel symbols. */
#ifndef OFFCPU_LINUX_H
#define OFFCPU_LINUX_H
#include <stddef.h>
#include "offcpu.h"
#include "symbols.h"

#define LINUX_THREAD_SIZE 16384 /* x86_64's and arm64's kernel stacks (THREAD_SIZE, 4 KiB pages, no KASAN) */

/* The task list's layout in an x86_64 or arm64 Linux kernel's btf (len bytes): what a visit reads of a
 * task_struct, where (image load time: the image's bytes are dropped after). 0, or -1 with one
 * line in err. */
int offcpu_linux_btf(const void *btf, size_t len, struct offcpu_layout *L, char *err, size_t cap);
/* ...placed by the kernel's symbols (relocated): the list's head (init_task; on arm64 L->table 0
 * when the symbols have no data: found in the guest, offcpu_io.c) and where a
 * switched-out task resumes (x86_64: in __switch_to_asm, right after it saved its stack pointer;
 * arm64: each at its own saved pc). 0, or
 * -1 with one line in err. */
int offcpu_linux_place(struct offcpu_layout *L, const struct symtab *syms, char *err, size_t cap);

#endif
