/* cfi_frames.S: a few functions with known DWARF CFI, linked into an ELF the CFI unwinder's
 * unit test reads (tests/sampler/test_cfi.c builds matching stacks by hand). */
	.text
	.globl start, outer, inner, trapper

/* The outermost frame: its return address is undefined, as at a thread's entry. */
start:
	.cfi_startproc
	.cfi_undefined rip
	call outer
start_ret:
	hlt
	.cfi_endproc

/* Saves rbx, makes 32 bytes of room, calls inner: CFA = rsp + 48 at the return address. */
outer:
	.cfi_startproc
	push %rbx
	.cfi_adjust_cfa_offset 8
	.cfi_offset rbx, -16
	sub $32, %rsp
	.cfi_adjust_cfa_offset 32
	call inner
outer_ret:
	add $32, %rsp
	.cfi_adjust_cfa_offset -32
	pop %rbx
	.cfi_adjust_cfa_offset -8
	.cfi_restore rbx
	ret
	.cfi_endproc

/* A frame-pointer function: CFA = rbp + 16 in its body. */
inner:
	.cfi_startproc
	push %rbp
	.cfi_def_cfa_offset 16
	.cfi_offset rbp, -16
	mov %rsp, %rbp
	.cfi_def_cfa_register rbp
inner_body:
	nop
	nop
	pop %rbp
	.cfi_def_cfa rsp, 8
	ret
	.cfi_endproc

/* An interrupt entry: a hardware frame (rip, cs, rflags, rsp, ss) at rsp, marked as a signal
 * frame so the interrupted pc is used as is. */
trapper:
	.cfi_startproc simple
	.cfi_signal_frame
	.cfi_def_cfa rsp, 40
	.cfi_offset rip, -40
	.cfi_offset rsp, -16
	nop
	iretq
	.cfi_endproc
