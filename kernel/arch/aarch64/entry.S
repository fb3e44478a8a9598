/* SPDX-License-Identifier: MIT */
/* entry.S (aarch64): the exception vector table and the common entry/exit, unwindable by frames. */
/*
 * Every vector entry reserves a struct trapframe (trap.h) on the current stack (SP_EL1: tasks
 * run at EL1h, so an interrupt lands on the interrupted task's own stack), saves x0/x1 and
 * branches to trap_common with the entry's number in x0.
 *
 * The frame-pointer chain across an exception: trap_common stores {interrupted x29,
 * interrupted pc (ELR_EL1)} as the frame's last two words and points x29 at them before it
 * calls trap(). To a walker that pair is the frame of a function "called" from the interrupted
 * instruction: trap -> the interrupted function (by its pc) -> its callers (by its x29). The
 * pc is exact, not a return address: walkers must not look it up at pc - 4.
 *
 * ICC_PMR_EL1 (the "interrupts off" mask, arch.h) is saved here -- from this CPU's copy of it
 * (a64.h: under TCG a GIC register access takes QEMU's global lock) -- and restored on the way
 * out when it changed, so whatever trap() or a task switched to from it leaves in PMR, the
 * interrupted code gets its own back. The exit path sets PSTATE.I first: a task switch inside trap() may come back here
 * with interrupts open, and an interrupt must not land between restoring ELR/SPSR and eret.
 *
 * CFI (for unwinders that read it): a signal frame whose CFA is the interrupted SP (the frame's
 * top) and whose return column is 32, the pc. Until trap_common stores ELR_EL1, the interrupted
 * pc is in that register (DWARF 33, ELR_mode); each general register is "same value" until it is
 * stored, then at its slot; after the frame is popped, registers again. x30 keeps its own rule.
 */
#define TF_SIZE 320
#define TF_SP 248
#define TF_ELR 256
#define TF_SPSR 264
#define TF_PMR 272
#define TF_KIND 280
#define TF_ESR 288
#define TF_FRAME 304
#define ICC_PMR_EL1 s3_0_c4_c6_0
#define CPU_PMR 24			/* offsetof(struct cpu, pmr): a64.h, checked in cpu.c */

/* The state every entry starts in: pc in ELR_EL1, every register as interrupted. */
.macro ENTRY_CFI cfa_offset
	.cfi_signal_frame
	.cfi_return_column 32
	.cfi_def_cfa sp, \cfa_offset
	.cfi_register 32, 33
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
	.cfi_same_value x\n
	.endr
.endm

/* stp of two interrupted registers into their slots, and the rules that say so. */
.macro STP_CFI a, b
	stp x\a, x\b, [sp, #\a * 8]
	.cfi_offset x\a, \a * 8 - TF_SIZE
	.cfi_offset x\b, \b * 8 - TF_SIZE
.endm

	.text
	.globl trap_common
	.type trap_common, %function
trap_common:
	.cfi_startproc simple
	ENTRY_CFI TF_SIZE
	.cfi_offset x0, -TF_SIZE	/* stored by the vector entry */
	.cfi_offset x1, 8 - TF_SIZE
	STP_CFI 2, 3
	STP_CFI 4, 5
	STP_CFI 6, 7
	STP_CFI 8, 9
	STP_CFI 10, 11
	STP_CFI 12, 13
	STP_CFI 14, 15
	STP_CFI 16, 17
	STP_CFI 18, 19
	STP_CFI 20, 21
	STP_CFI 22, 23
	STP_CFI 24, 25
	STP_CFI 26, 27
	STP_CFI 28, 29
	str x30, [sp, #240]
	.cfi_offset x30, 240 - TF_SIZE
	add x1, sp, #TF_SIZE
	str x1, [sp, #TF_SP]
	mrs x1, elr_el1
	mrs x2, spsr_el1
	stp x1, x2, [sp, #TF_ELR]
	.cfi_offset 32, TF_ELR - TF_SIZE	/* the pc from its slot from now on */
	mrs x2, tpidr_el1		/* the mask from this CPU's copy (a64.h): no GIC access */
	ldr x2, [x2, #CPU_PMR]
	stp x2, x0, [sp, #TF_PMR]
	mrs x2, esr_el1
	mrs x3, far_el1
	stp x2, x3, [sp, #TF_ESR]
	stp x29, x1, [sp, #TF_FRAME]	/* the frame record: interrupted x29, interrupted pc */
	add x29, sp, #TF_FRAME		/* the CFA stays SP-based: x29 is for frame walkers */
	mov x0, sp
	bl trap
	msr daifset, #2
	ldr x1, [sp, #TF_PMR]		/* the interrupted mask, written only if it changed */
	mrs x2, tpidr_el1
	ldr x3, [x2, #CPU_PMR]
	cmp x1, x3
	b.eq 1f
	msr ICC_PMR_EL1, x1
	str x1, [x2, #CPU_PMR]
1:
	ldp x1, x2, [sp, #TF_ELR]
	msr elr_el1, x1
	msr spsr_el1, x2
	ldp x0, x1, [sp, #0]
	ldp x2, x3, [sp, #16]
	ldp x4, x5, [sp, #32]
	ldp x6, x7, [sp, #48]
	ldp x8, x9, [sp, #64]
	ldp x10, x11, [sp, #80]
	ldp x12, x13, [sp, #96]
	ldp x14, x15, [sp, #112]
	ldp x16, x17, [sp, #128]
	ldp x18, x19, [sp, #144]
	ldp x20, x21, [sp, #160]
	ldp x22, x23, [sp, #176]
	ldp x24, x25, [sp, #192]
	ldp x26, x27, [sp, #208]
	ldp x28, x29, [sp, #224]
	ldr x30, [sp, #240]
	add sp, sp, #TF_SIZE
	.cfi_def_cfa_offset 0
	.cfi_register 32, 33		/* ELR_EL1 was restored above */
	.irp n, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30
	.cfi_same_value x\n
	.endr
	eret
	.cfi_endproc
	.size trap_common, . - trap_common

/* One vector entry (0x80 bytes): a frame, x0/x1 saved, the entry's number in x0. */
.macro VENTRY n
	.balign 0x80
	.cfi_startproc simple
	ENTRY_CFI 0
	sub sp, sp, #TF_SIZE
	.cfi_def_cfa_offset TF_SIZE
	stp x0, x1, [sp, #0]
	.cfi_offset x0, -TF_SIZE
	.cfi_offset x1, 8 - TF_SIZE
	mov x0, #\n
	b trap_common
	.cfi_endproc
.endm

	.balign 2048
	.globl vectors
vectors:
	VENTRY 0
	VENTRY 1
	VENTRY 2
	VENTRY 3
	VENTRY 4
	VENTRY 5
	VENTRY 6
	VENTRY 7
	VENTRY 8
	VENTRY 9
	VENTRY 10
	VENTRY 11
	VENTRY 12
	VENTRY 13
	VENTRY 14
	VENTRY 15
