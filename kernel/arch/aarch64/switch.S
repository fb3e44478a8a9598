/* SPDX-License-Identifier: MIT */
/* switch.S (aarch64): swtch(&old_sp, new_sp) saves the callee-saved registers and changes stacks. */
/*
 * The saved area is an ordinary frame: a frame record {x29, x30} at its bottom, then x19..x28,
 * so a frame walk of a switched-out task starts at swtch's caller. A new task's area (laid out by
 * arch_task_stack_init) "returns" to task_start, which branches to task_entry with
 * x29 = x30 = 0: task_entry's frame record holds zeros, so every walk ends at task_entry.
 */
	.text
	.globl swtch
	.type swtch, %function
swtch:
	.cfi_startproc
	stp x29, x30, [sp, #-96]!
	.cfi_def_cfa_offset 96
	.cfi_offset x29, -96
	.cfi_offset x30, -88
	mov x29, sp
	stp x19, x20, [sp, #16]
	stp x21, x22, [sp, #32]
	stp x23, x24, [sp, #48]
	stp x25, x26, [sp, #64]
	stp x27, x28, [sp, #80]
	mov x9, sp
	str x9, [x0]
	mov sp, x1			/* the same CFI now reads the new task's saved area */
1:					/* swtch_resume_pc: a switched-out task resumes here */
	ldp x19, x20, [sp, #16]
	ldp x21, x22, [sp, #32]
	ldp x23, x24, [sp, #48]
	ldp x25, x26, [sp, #64]
	ldp x27, x28, [sp, #80]
	ldp x29, x30, [sp], #96
	.cfi_def_cfa_offset 0
	.cfi_restore x29
	.cfi_restore x30
	ret
	.cfi_endproc
	.size swtch, . - swtch

	.globl task_start
	.type task_start, %function
task_start:
	.cfi_startproc
	.cfi_undefined x30
	mov x29, xzr
	mov x30, xzr
	b task_entry			/* not bl: task_entry's return address is the zero, as on x86_64 */
	.cfi_endproc
	.size task_start, . - task_start

/*
 * swtch_resume_pc: where every switched-out task resumes -- the instruction after the stack switch,
 * where swtch's CFI reads that task's saved area. An external profiler unwinds a task that is not
 * running from {pc = swtch_resume_pc, sp = its saved sp} (gdbsample record --off-cpu). Data, not
 * a label in swtch: a label would name the pops' frames after itself.
 */
	.section .rodata
	.balign 8
	.globl swtch_resume_pc
	.type swtch_resume_pc, %object
	.size swtch_resume_pc, 8
swtch_resume_pc:
	.quad 1b
