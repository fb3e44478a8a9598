/* SPDX-License-Identifier: MIT */
/* trampoline.S: AP start-up code, copied below 1 MiB: real mode -> long mode -> ap_main. */
#include "layout.h"

#define TR(x) ((x) - trampoline_start + AP_TRAMPOLINE_PA)

	.section .rodata
	.balign 16
	.code16
	.globl trampoline_start, trampoline_end, tr_cr3, tr_stack, tr_entry
trampoline_start:
	cli
	cld
	xor %ax, %ax
	mov %ax, %ds
	lgdtl TR(tr_gdtr)
	mov %cr0, %eax
	or $1, %eax			/* CR0.PE */
	mov %eax, %cr0
	ljmpl $0x08, $TR(tr_32)

	.code32
tr_32:
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	mov %cr4, %eax
	or $0x20, %eax			/* CR4.PAE */
	mov %eax, %cr4
	mov TR(tr_cr3), %eax		/* the BSP's page tables (identity map included) */
	mov %eax, %cr3
	mov $0xc0000080, %ecx		/* IA32_EFER */
	rdmsr
	or $0x100, %eax			/* LME */
	wrmsr
	mov %cr0, %eax
	or $0x80000000, %eax		/* CR0.PG: long mode active */
	mov %eax, %cr0
	ljmp $0x18, $TR(tr_64)

	.code64
tr_64:
	mov $0x10, %ax
	mov %ax, %ds
	mov %ax, %es
	mov %ax, %ss
	movabs TR(tr_stack), %rax
	mov %rax, %rsp
	movabs TR(tr_entry), %rax
	xor %ebp, %ebp			/* ends the frame-pointer chain of the AP's idle task */
	/*
	 * A zero return address for ap_main, which is jumped to, not called: a CFI unwinder ends
	 * a walk at a zero return address. Without it ap_main's "return address" is the word past
	 * the top of the AP's stack: today the lowest word of the AP's NMI stack, zero only
	 * because cpu_init happens to allocate that right after. It also gives ap_main the
	 * RSP % 16 == 8 of any function entry. This runs from the low copy, outside the ELF's
	 * addresses, so CFI here could not help.
	 */
	pushq $0
	jmp *%rax

	.balign 8
tr_gdt:
	.quad 0
	.quad 0x00cf9a000000ffff	/* 0x08: 32-bit code */
	.quad 0x00cf92000000ffff	/* 0x10: data */
	.quad 0x00af9a000000ffff	/* 0x18: 64-bit code */
tr_gdtr:
	.word 31
	.long TR(tr_gdt)
	.balign 8
tr_cr3:	.long 0				/* filled in by smp_boot before each SIPI */
	.long 0
tr_stack: .quad 0
tr_entry: .quad 0
trampoline_end:
