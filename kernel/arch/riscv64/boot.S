/* SPDX-License-Identifier: MIT */
/* boot.S (riscv64): entry in S-mode from OpenSBI (boot hart) or SBI HSM hart_start (the others). */
/*
 * OpenSBI's fw_dynamic jumps here with a0 = this hart's id, a1 = the DTB; hart_start enters
 * secondary_entry with a0 = the hart id, a1 = the opaque value smp.c passed (its stack top).
 * satp stays 0 (Bare): the kernel runs on physical addresses, and OpenSBI's PMP lets S-mode
 * reach all of RAM but the firmware's own 2 MiB. The chain ends here: s0 = ra = 0 before the
 * first call, so frame walks stop. gp is not used (no linker relaxation against it).
 */
#include "layout.h"

	.section .boot.text, "ax"
	.globl _start
_start:
	.option push
	.option norelax
	/*
	 * Only the first hart here boots. A second one is a hart that smp_boot started but that the
	 * firmware sent to its cold-boot address (_start, a1 = the DTB) instead of secondary_entry:
	 * OpenSBI's hart_start marks the hart START_PENDING before it stores the new address, so a
	 * waiting hart that wakes in between jumps to the old one. Clearing the bss and taking
	 * boot_stack again would wreck the boot hart (seen: its saved s0 zeroed, a second banner),
	 * so it starts as a secondary on the stack smp_boot published (ap_boot_sp, set before the
	 * call) -- it is the only hart being started.
	 */
	la t0, boot_claimed
	li t1, 1
	amoswap.w.aqrl t1, t1, (t0)
	bnez t1, late_secondary
	li s0, 0
	li ra, 0
	la sp, boot_stack
	li t0, BOOT_STACK_SIZE
	add sp, sp, t0
	mv s1, a0			/* the boot hart's id, past the bss clear */
	la t0, __bss_start
	la t1, __bss_end
1:	bgeu t0, t1, 2f
	sd zero, 0(t0)
	addi t0, t0, 8
	j 1b
2:	mv a0, s1
	call kmain
3:	wfi
	j 3b

	.globl secondary_entry
secondary_entry:
	li s0, 0
	li ra, 0
	mv sp, a1
	call ap_main
4:	wfi
	j 4b

late_secondary:
	fence r, r			/* ap_boot_sp after the boot hart's store (it fenced before hart_start) */
	la t0, ap_boot_sp
	ld sp, 0(t0)
	beqz sp, 5f			/* nothing published: no start was asked of this hart; park it */
	li s0, 0
	li ra, 0
	call ap_main			/* a0: this hart's id, as on both entries */
5:	wfi
	j 5b
	.option pop

	.section .data
	.balign 4
boot_claimed:				/* in .data: the bss clear must not reset it */
	.word 0

	.section .bss
	.balign 16
	.globl boot_stack
boot_stack:
	.space BOOT_STACK_SIZE
