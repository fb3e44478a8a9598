/* SPDX-License-Identifier: MIT */
/* layout.h (aarch64): QEMU virt's memory map as the kernel sees it: identity-mapped, RAM at 1 GiB. */
#ifndef LAYOUT_H
#define LAYOUT_H

#define RAM_BASE      0x40000000	/* QEMU virt; the DTB sits at its start for a non-Linux ELF */
#define RAM_USED_MB   128		/* the kernel uses this much RAM: run it with -m 128M or more */
#define KERNEL_LOAD   0x40080000	/* link and load address (kernel.ld), above the DTB */
#define DIRECTMAP     0			/* the MMU maps VA = PA */
#define DIRECTMAP_GB  4			/* 0-1 GiB device, 1-4 GiB normal memory */
#define BOOT_STACK_SIZE 16384

#define UART_BASE     0x09000000	/* PL011 */
#define GICD_BASE     0x08000000	/* GICv3 distributor */
#define GICR_BASE     0x080a0000	/* first redistributor: RD frame, then SGI frame at +64 KiB */

#ifndef __ASSEMBLER__
#include <stdint.h>
#define P2V(pa) ((void *)(uintptr_t)(pa))
#define V2P(va) ((uintptr_t)(va))
#define KV2P(va) ((uintptr_t)(va))
#endif
#endif
