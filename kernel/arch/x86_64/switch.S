/* SPDX-License-Identifier: MIT */
/* switch.S: swtch(&old_rsp, new_rsp) saves the callee-saved registers and changes stacks. */
/*
 * CFI: an ordinary function with six pushes. After `mov %rsi, %rsp` the same rules read the
 * new task's stack, which holds the same six registers and return address at the same
 * offsets (saved by its own swtch, or laid out by task_create), so a sample among the pops
 * unwinds into the task being switched to. The first switch to a new task "returns" to
 * task_start below, whose CFI says the chain ends there.
 */
	.text
	.globl swtch
swtch:
	.cfi_startproc
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbp, 0
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbx, 0
	push %r12
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r12, 0
	push %r13
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r13, 0
	push %r14
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r14, 0
	push %r15
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset r15, 0
	mov %rsp, (%rdi)
	mov %rsi, %rsp			/* CFA rules unchanged: see above */
1:					/* swtch_resume_pc: a switched-out task resumes here */
	pop %r15
	.cfi_adjust_cfa_offset -8
	.cfi_restore r15
	pop %r14
	.cfi_adjust_cfa_offset -8
	.cfi_restore r14
	pop %r13
	.cfi_adjust_cfa_offset -8
	.cfi_restore r13
	pop %r12
	.cfi_adjust_cfa_offset -8
	.cfi_restore r12
	pop %rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbx
	pop %rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbp
	ret
	.cfi_endproc

/*
 * task_start: where a new task's first swtch returns (task_create puts it on the stack); it goes
 * on to task_entry, whose own return address is the zero above it. An unwinder stopped in
 * swtch's pops finds task_start as swtch's return address and looks it up at task_start - 1
 * (a return address names the call before it): the nop puts that byte inside this frame,
 * whose return address is undefined -- the chain's end.
 */
	.cfi_startproc
	.cfi_undefined rip
	nop
	.globl task_start
task_start:
	jmp task_entry
	.cfi_endproc

/*
 * swtch_resume_pc: where every switched-out task resumes -- the instruction after the stack switch,
 * where swtch's CFI reads that task's saved area. An external profiler unwinds a task that is not
 * running from {pc = swtch_resume_pc, sp = its saved sp} (gdbsample record --off-cpu). Data, not
 * a label in swtch: a label would name the pops' frames after itself.
 */
	.section .rodata
	.balign 8
	.globl swtch_resume_pc
	.type swtch_resume_pc, @object
	.size swtch_resume_pc, 8
swtch_resume_pc:
	.quad 1b
