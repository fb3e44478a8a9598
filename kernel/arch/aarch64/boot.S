/* SPDX-License-Identifier: MIT */
/* boot.S (aarch64): entry at EL1 from QEMU's ELF loader (boot CPU) or PSCI CPU_ON (the others). */
/*
 * Both paths turn the MMU on with one level-1 table mapping VA = PA in 1 GiB blocks (0-1 GiB
 * device memory: GIC, PL011; 1-4 GiB normal write-back memory: RAM), so C code runs with caches
 * and exclusive loads/stores (spinlocks) on normal memory. No C runs before the MMU is on.
 * The chain ends here: x29 = x30 = 0 before the first call, so frame walks stop.
 */
#include "layout.h"

#define MAIR_VALUE 0xff00		/* attr0 device nGnRnE, attr1 normal WB RA WA */
/* T0SZ 32 (4 GiB), walks inner/outer WB WA, inner shareable, 4 KiB granule, no TTBR1, IPS 40 bits */
#define TCR_VALUE ((32) | (1 << 8) | (1 << 10) | (3 << 12) | (1 << 23) | (2 << 32))
#define SCTLR_M (1 << 0)
#define SCTLR_A (1 << 1)
#define SCTLR_C (1 << 2)
#define SCTLR_I (1 << 12)
#define BLOCK_NORMAL 0x705		/* AF, inner shareable, attr1, block */
#define BLOCK_DEVICE 0x401		/* AF, attr0, block */
#define XN_BITS (3 << 53)		/* PXN, UXN */

	.section .boot.text, "ax"
	.globl _start
_start:
	mov x29, xzr
	mov x30, xzr
	adrp x0, boot_stack
	add x0, x0, #:lo12:boot_stack
	add sp, x0, #BOOT_STACK_SIZE
	bl mmu_on
	adrp x0, __bss_start
	add x0, x0, #:lo12:__bss_start
	adrp x1, __bss_end
	add x1, x1, #:lo12:__bss_end
1:	cmp x0, x1
	b.hs 2f
	str xzr, [x0], #8
	b 1b
2:	bl kmain
3:	wfi
	b 3b

/* PSCI CPU_ON's entry point: x0 is the context id smp.c passed, this CPU's stack top. */
	.globl secondary_entry
secondary_entry:
	mov x29, xzr
	mov x30, xzr
	mov sp, x0
	bl mmu_on
	bl ap_main
4:	wfi
	b 4b

mmu_on:
	ldr x0, =MAIR_VALUE
	msr mair_el1, x0
	ldr x0, =TCR_VALUE
	msr tcr_el1, x0
	adrp x0, boot_l1
	msr ttbr0_el1, x0
	isb
	tlbi vmalle1
	dsb nsh
	isb
	mrs x0, sctlr_el1
	orr x0, x0, #SCTLR_M
	orr x0, x0, #SCTLR_C
	orr x0, x0, #SCTLR_I
	bic x0, x0, #SCTLR_A
	msr sctlr_el1, x0
	isb
	ret

	.section .data
	.balign 4096
boot_l1:
	.quad 0x00000000 | BLOCK_DEVICE | XN_BITS
	.quad 0x40000000 | BLOCK_NORMAL
	.quad 0x80000000 | BLOCK_NORMAL
	.quad 0xc0000000 | BLOCK_NORMAL
	.fill 508, 8, 0

	.section .bss
	.balign 16
	.globl boot_stack
boot_stack:
	.space BOOT_STACK_SIZE
