/* SPDX-License-Identifier: MIT */
/* layout.h: the kernel's virtual memory layout, shared by assembly and C. */
#ifndef LAYOUT_H
#define LAYOUT_H

#define KERNBASE     0xffffffff80000000	/* kernel image: KERNBASE + pa, first 1 GiB */
#define DIRECTMAP    0xffff800000000000	/* all physical memory below 4 GiB: DIRECTMAP + pa */
#define DIRECTMAP_GB 4			/* GiB covered by the direct map (and the boot identity map) */
#define BOOT_STACK_SIZE 16384
#define AP_TRAMPOLINE_PA 0x8000		/* SIPI start page for application processors */

#ifndef __ASSEMBLER__
#include <stdint.h>
#define P2V(pa) ((void *)((uintptr_t)(pa) + DIRECTMAP))
#define V2P(va) ((uintptr_t)(va) - DIRECTMAP)
#define KV2P(va) ((uintptr_t)(va) - KERNBASE)	/* for symbols of the kernel image */
#endif
#endif
