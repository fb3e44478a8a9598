/* SPDX-License-Identifier: MIT */
/* switch.S (riscv64): swtch(&old_sp, new_sp) saves the callee-saved registers and changes stacks. */
/*
 * The saved area is an ordinary frame: ra and s0 at its top (the RISC-V record layout), then
 * s1..s11, so the CFI below describes both the old task's and the new one's. A new task's area
 * (laid out by arch_task_stack_init) "returns" to task_start, which jumps to task_entry with
 * s0 = ra = 0: task_entry's frame record holds zeros, so every walk ends at task_entry.
 */
#define SW_SIZE 112

	.text
	.globl swtch
	.type swtch, %function
swtch:
	.cfi_startproc
	addi sp, sp, -SW_SIZE
	.cfi_def_cfa_offset SW_SIZE
	sd ra, 104(sp)
	sd s0, 96(sp)
	.cfi_offset ra, -8
	.cfi_offset s0, -16
	sd s1, 0(sp)
	sd s2, 8(sp)
	sd s3, 16(sp)
	sd s4, 24(sp)
	sd s5, 32(sp)
	sd s6, 40(sp)
	sd s7, 48(sp)
	sd s8, 56(sp)
	sd s9, 64(sp)
	sd s10, 72(sp)
	sd s11, 80(sp)
	sd sp, 0(a0)
	mv sp, a1			/* the same CFI now reads the new task's saved area */
1:					/* swtch_resume_pc: a switched-out task resumes here */
	ld s1, 0(sp)
	ld s2, 8(sp)
	ld s3, 16(sp)
	ld s4, 24(sp)
	ld s5, 32(sp)
	ld s6, 40(sp)
	ld s7, 48(sp)
	ld s8, 56(sp)
	ld s9, 64(sp)
	ld s10, 72(sp)
	ld s11, 80(sp)
	ld s0, 96(sp)
	ld ra, 104(sp)
	.cfi_restore ra
	.cfi_restore s0
	addi sp, sp, SW_SIZE
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc
	.size swtch, . - swtch

	.globl task_start
	.type task_start, %function
task_start:
	.cfi_startproc
	.cfi_undefined ra
	li s0, 0
	li ra, 0
	j task_entry			/* not call: task_entry's return address is the zero, as on x86_64 */
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
	.dword 1b
