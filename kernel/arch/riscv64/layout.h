/* SPDX-License-Identifier: MIT */
/* layout.h (riscv64): QEMU virt's memory map as the kernel sees it: no MMU (satp Bare), RAM at 2 GiB. */
#ifndef LAYOUT_H
#define LAYOUT_H

#define RAM_BASE      0x80000000	/* QEMU virt; OpenSBI (-bios default) holds its first 2 MiB */
#define RAM_USED_MB   128		/* the kernel uses this much RAM: run it with -m 256M or more (the DTB sits near the top) */
#define KERNEL_LOAD   0x80200000	/* link and load address (kernel.ld): where fw_dynamic jumps */
#define DIRECTMAP     0			/* physical addresses: satp stays Bare */
#define DIRECTMAP_GB  4
#define BOOT_STACK_SIZE 16384

#define UART_BASE     0x10000000	/* NS16550A, byte-wide registers */
#define PLIC_BASE     0x0c000000	/* SiFive-compatible PLIC */

#ifndef __ASSEMBLER__
#include <stdint.h>
#define P2V(pa) ((void *)(uintptr_t)(pa))
#define V2P(va) ((uintptr_t)(va))
#define KV2P(va) ((uintptr_t)(va))
#endif
#endif
