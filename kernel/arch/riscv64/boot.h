/* SPDX-License-Identifier: MIT */
/* boot.h (riscv64): the memory map mem.c allocates from, set by kmain (no loader hands one over). */
#ifndef BOOT_H
#define BOOT_H
#include <stdint.h>

#define MEMMAP_RAM 1
#define MAX_MEMMAP 4

struct memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;
	uint32_t reserved;
};

struct boot_info {
	int nmemmap;
	struct memmap_entry memmap[MAX_MEMMAP];
};

extern struct boot_info boot_info;
#endif
