/* SPDX-License-Identifier: MIT */
/* bootinfo.c: copies the PVH start info into kernel memory before anything else can reuse it. */
#include "boot.h"
#include "layout.h"
#include "lib.h"
#include "panic.h"

struct boot_info boot_info;

void boot_info_init(const struct hvm_start_info *si)
{
	if (si->magic != HVM_START_MAGIC)
		panic("boot: bad hvm_start_info magic %x (not started through the PVH note?)", si->magic);
	boot_info.rsdp_paddr = si->rsdp_paddr;
	const struct memmap_entry *mm = P2V(si->memmap_paddr);
	uint32_t n = si->version >= 1 ? si->memmap_entries : 0;
	if (n > MAX_MEMMAP)
		n = MAX_MEMMAP;
	for (uint32_t i = 0; i < n; i++)
		boot_info.memmap[i] = mm[i];
	boot_info.nmemmap = (int)n;
	if (si->cmdline_paddr)
		strncpy0(boot_info.cmdline, P2V(si->cmdline_paddr), sizeof(boot_info.cmdline));
}
