/* SPDX-License-Identifier: MIT */
/* entry.S (shape guest): the boot hart from OpenSBI, the others from SBI HSM hart_start. */
/*
 * Both enter with a0 = the hart id. tp holds it from then on, as xv6 keeps it (cpus[$tp]); the
 * boot hart takes its stack from the hart id, a started hart from a1 (hart_start's opaque).
 * s0 = ra = 0 before the first call, so frame walks end here.
 */
#define STACK_SIZE 16384

	.section .text.entry, "ax"
	.globl _start
_start:
	mv tp, a0
	li s0, 0
	li ra, 0
	la sp, stacks
	addi t0, a0, 1
	li t1, STACK_SIZE
	mul t0, t0, t1
	add sp, sp, t0
	la t0, __bss_start
	la t1, __bss_end
1:	bgeu t0, t1, 2f
	sd zero, 0(t0)
	addi t0, t0, 8
	j 1b
2:	call boot_main
3:	wfi
	j 3b

	.globl secondary_entry
secondary_entry:
	mv tp, a0
	mv sp, a1
	li s0, 0
	li ra, 0
	call hart_main
4:	wfi
	j 4b

	.section .stacks, "aw", @nobits
	.balign 16
	.globl stacks
stacks:
	.space STACK_SIZE * 4
