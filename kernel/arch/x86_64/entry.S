/* SPDX-License-Identifier: MIT */
/* entry.S: interrupt and exception entry stubs, unwindable by frame pointer and by CFI alike. */
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
 *
 * How a DWARF unwinder gets through (kernel-nofp.elf has no RBP chain to follow): the stubs
 * and trap_common carry CFI, exact at every instruction, that describes the interrupted
 * context rather than a caller. The CFA is the address just above the CPU's iret frame, so
 *
 *     CFA - 40 = interrupted RIP   (the return-address column)
 *     CFA - 32 = CS,  CFA - 24 = RFLAGS
 *     CFA - 16 = interrupted RSP   (read from the frame: the CPU aligned RSP down, or
 *                                   switched to an IST stack, so no CFA offset gives it)
 *     CFA - 8  = SS
 *
 * and the CFA is RSP + 40 at a stub's first instruction (+ 8 when the CPU pushed an error
 * code), growing by 8 with every push. Each general register is "same value" until it is
 * pushed, then saved at its trapframe slot, then "same value" again once popped. Every FDE
 * here is a signal frame (.cfi_signal_frame, augmentation "S"): the interrupted RIP is the
 * next instruction to run, not a return address past a call, so unwinders must look it up
 * as is and not at RIP - 1 (which, at a function's first instruction, is another function).
 */
#include "layout.h"

/*
 * The CFI state at a vector stub's first instruction: RSP points \extra bytes (0, or 8 for a
 * CPU-pushed error code) below the iret frame. `.cfi_startproc simple` leaves out the usual
 * "return address at RSP" rules, which are wrong here; gas moves these rules into the CIE,
 * so the 256 stubs share a few CIEs.
 */
.macro IRET_FRAME_CFI extra
	.cfi_signal_frame
	.cfi_def_cfa rsp, 5*8 + \extra
	.cfi_offset rip, -5*8
	.cfi_offset cs, -4*8
	.cfi_offset rflags, -3*8
	.cfi_offset rsp, -2*8
	.cfi_offset ss, -1*8
	/* Nothing has touched them yet: explicit, since an unwinder may take "unspecified"
	   caller-saved registers as undefined (libdw does). */
	.irp reg, rax, rbx, rcx, rdx, rsi, rdi, rbp, r8, r9, r10, r11, r12, r13, r14, r15
	.cfi_same_value \reg
	.endr
.endm

/* push %reg, and say where the interrupted value now is. */
.macro PUSH_CFI reg
	push %\reg
	.cfi_adjust_cfa_offset 8
	.cfi_rel_offset \reg, 0
.endm

/* pop %reg: the register holds the interrupted value again. */
.macro POP_CFI reg
	pop %\reg
	.cfi_adjust_cfa_offset -8
	.cfi_same_value \reg
.endm

	.text
	.globl trap_common
trap_common:
	/* Reached by jmp from a stub: vector number and error code (the CPU's or the stub's
	   dummy) sit below the iret frame, so every vector looks the same from here on. */
	.cfi_startproc simple
	IRET_FRAME_CFI 16
	PUSH_CFI r15
	PUSH_CFI r14
	PUSH_CFI r13
	PUSH_CFI r12
	PUSH_CFI r11
	PUSH_CFI r10
	PUSH_CFI r9
	PUSH_CFI r8
	PUSH_CFI rbp
	PUSH_CFI rdi
	PUSH_CFI rsi
	PUSH_CFI rdx
	PUSH_CFI rcx
	PUSH_CFI rbx
	PUSH_CFI rax
	mov %rsp, %rdi			/* struct trapframe * */
	pushq 17*8(%rsp)		/* interrupted RIP: the pair's "return address" */
	.cfi_adjust_cfa_offset 8	/* a copy: the RIP rule stays on the iret frame */
	push %rbp			/* interrupted RBP: the pair's "saved RBP" */
	.cfi_adjust_cfa_offset 8	/* a copy too: RBP's rule stays on its trapframe slot */
	mov %rsp, %rbp			/* the CFA stays RSP-based: RBP is only for FP walkers */
	cld
	/* Inside trap, this frame is found from trap's return address: at it as is (GDB, since a
	   signal frame's pc is exact) or at it - 1, inside this call (libdw). The -16 below is
	   placed after the add, so both addresses see the state of the call. */
	call trap
	add $16, %rsp			/* drop the pair */
	.cfi_adjust_cfa_offset -16
	POP_CFI rax
	POP_CFI rbx
	POP_CFI rcx
	POP_CFI rdx
	POP_CFI rsi
	POP_CFI rdi
	POP_CFI rbp
	POP_CFI r8
	POP_CFI r9
	POP_CFI r10
	POP_CFI r11
	POP_CFI r12
	POP_CFI r13
	POP_CFI r14
	POP_CFI r15
	add $16, %rsp			/* vector, error code */
	.cfi_adjust_cfa_offset -16	/* back to the stub's entry state: RSP -> iret frame */
	iretq
	.cfi_endproc

/* Vectors where the CPU pushes an error code: #DF #TS #NP #SS #GP #PF #AC #CP #VC #SX. */
.macro VECTOR n
	.balign 16
vector\n:
	.cfi_startproc simple		/* one FDE per stub: the padding between stubs has none */
	.if (\n == 8) || (\n >= 10 && \n <= 14) || (\n == 17) || (\n == 21) || (\n == 29) || (\n == 30)
	IRET_FRAME_CFI 8		/* the CPU pushed the error code */
	.else
	IRET_FRAME_CFI 0
	pushq $0
	.cfi_adjust_cfa_offset 8
	.endif
	pushq $\n
	.cfi_adjust_cfa_offset 8
	jmp trap_common
	.cfi_endproc
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
