/* SPDX-License-Identifier: MIT */
/* msr_safe.S: rdmsr/wrmsr that return -1 instead of dying when the MSR raises #GP. */
/*
 * Each possibly-faulting instruction has an entry (instruction address, fixup address) in
 * the .extable section; trap() looks a #GP's RIP up there (extable_fixup) and resumes at
 * the fixup, which returns -1. Used to probe PMU MSRs a hypervisor may not implement.
 * CFI: a frame-pointer prologue; the fixup path runs with the body's frame, so its state is
 * the one remembered before the first return.
 */
	.text
	.globl msr_read_safe		/* int msr_read_safe(uint32_t msr, uint64_t *out) */
msr_read_safe:
	.cfi_startproc
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbp, 0
	mov %rsp, %rbp
	mov %edi, %ecx
1:	rdmsr
	shl $32, %rdx
	or %rdx, %rax
	mov %rax, (%rsi)
	xor %eax, %eax
	.cfi_remember_state
	pop %rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbp
	ret
	.cfi_restore_state
2:	mov $-1, %eax
	pop %rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbp
	ret
	.cfi_endproc
	.section .extable, "a"
	.quad 1b, 2b
	.text

	.globl msr_write_safe		/* int msr_write_safe(uint32_t msr, uint64_t v) */
msr_write_safe:
	.cfi_startproc
	push %rbp
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset rbp, 0
	mov %rsp, %rbp
	mov %edi, %ecx
	mov %rsi, %rax
	mov %rsi, %rdx
	shr $32, %rdx
3:	wrmsr
	xor %eax, %eax
	.cfi_remember_state
	pop %rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbp
	ret
	.cfi_restore_state
4:	mov $-1, %eax
	pop %rbp
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbp
	ret
	.cfi_endproc
	.section .extable, "a"
	.quad 3b, 4b
