/* entry.S: interrupt/exception entry stubs that keep the frame-pointer chain intact. */
/*
 * Every vector has a stub that pushes a dummy error code (if the CPU pushed none) and its
 * vector number, then jumps to trap_common, which saves the general registers as a
 * struct trapframe.
 *
 * How the frame-pointer chain survives an interrupt: before calling trap(), trap_common
 * pushes the interrupted RIP and then the interrupted RBP, and points RBP at that pair.
 * To a frame-pointer walker this pair looks exactly like the frame of a function that was
 * "called" from the interrupted instruction:
 *
 *     [rbp + 8] = interrupted RIP   (the "return address")
 *     [rbp + 0] = interrupted RBP   (the "caller's saved RBP")
 *
 * So a walker stopped anywhere inside trap() or its callees steps trap -> trap_common's
 * pair -> the interrupted function (reported by its RIP) -> that function's callers
 * through the interrupted RBP. The same holds on the NMI and #DF IST stacks: the pair
 * sits on the IST stack and its saved RBP leads back to the interrupted task's stack.
 * Stack alignment: the CPU aligns RSP to 16 before pushing its 5 words; 2 + 15 + 2 more
 * words keep RSP 16-aligned at the call.
 */
#include "layout.h"

	.text
	.globl trap_common
trap_common:
	push %r15
	push %r14
	push %r13
	push %r12
	push %r11
	push %r10
	push %r9
	push %r8
	push %rbp
	push %rdi
	push %rsi
	push %rdx
	push %rcx
	push %rbx
	push %rax
	mov %rsp, %rdi			/* struct trapframe * */
	pushq 17*8(%rsp)		/* interrupted RIP: the pair's "return address" */
	push %rbp			/* interrupted RBP: the pair's "saved RBP" */
	mov %rsp, %rbp
	cld
	call trap
	add $16, %rsp			/* drop the pair */
	pop %rax
	pop %rbx
	pop %rcx
	pop %rdx
	pop %rsi
	pop %rdi
	pop %rbp
	pop %r8
	pop %r9
	pop %r10
	pop %r11
	pop %r12
	pop %r13
	pop %r14
	pop %r15
	add $16, %rsp			/* vector, error code */
	iretq

/* Vectors where the CPU pushes an error code: #DF #TS #NP #SS #GP #PF #AC #CP #VC #SX. */
.macro VECTOR n
	.balign 16
vector\n:
	.if (\n == 8) || (\n >= 10 && \n <= 14) || (\n == 17) || (\n == 21) || (\n == 29) || (\n == 30)
	.else
	pushq $0
	.endif
	pushq $\n
	jmp trap_common
.endm

	.balign 16
	.globl vectors_start
vectors_start:
.altmacro
.set i, 0
.rept 256
	VECTOR %i
	.set i, i + 1
.endr

	.section .rodata
	.balign 8
	.globl vector_table
vector_table:
.macro VADDR n
	.quad vector\n
.endm
.set i, 0
.rept 256
	VADDR %i
	.set i, i + 1
.endr
