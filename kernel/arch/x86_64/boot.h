/* SPDX-License-Identifier: MIT */
/* boot.h: what the PVH loader told us (memory map, command line, ACPI RSDP), copied early. */
#ifndef BOOT_H
#define BOOT_H
#include <stdint.h>

#define HVM_START_MAGIC 0x336ec578
#define MEMMAP_RAM 1
#define MAX_MEMMAP 32

/* Xen's struct hvm_start_info (xen/include/public/arch-x86/hvm/start_info.h), version 1. */
struct hvm_start_info {
	uint32_t magic;
	uint32_t version;
	uint32_t flags;
	uint32_t nr_modules;
	uint64_t modlist_paddr;
	uint64_t cmdline_paddr;
	uint64_t rsdp_paddr;
	uint64_t memmap_paddr;
	uint32_t memmap_entries;
	uint32_t reserved;
};

struct memmap_entry {
	uint64_t addr;
	uint64_t size;
	uint32_t type;		/* 1 = RAM (E820 numbering) */
	uint32_t reserved;
};

struct boot_info {
	uint64_t rsdp_paddr;	/* 0 if the loader gave none */
	int nmemmap;
	struct memmap_entry memmap[MAX_MEMMAP];
	char cmdline[256];
};

extern struct boot_info boot_info;
void boot_info_init(const struct hvm_start_info *si);
#endif
