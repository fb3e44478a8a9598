/* cfi_frames_a64.S: aarch64 functions with known DWARF CFI -- a GCC-style frame record, a
 * frameless leaf, an exception entry described as a signal frame, and an exception vector whose
 * interrupted pc is still in ELR_EL1 -- linked into an ELF the
 * CFI unwinder's unit test reads (tests/sampler/test_cfi.c builds matching stacks by hand). */
	.text
	.globl start, outer, inner, entry, vector

/* The outermost frame: its return address is undefined, as at a task's entry. */
start:
	.cfi_startproc
	.cfi_undefined x30
	bl outer
start_ret:
	wfi
	.cfi_endproc

/* As GCC emits it: a 32-byte frame, the record at its bottom; CFA = sp + 32 in the body. */
outer:
	.cfi_startproc
	stp x29, x30, [sp, #-32]!
	.cfi_def_cfa_offset 32
	.cfi_offset x29, -32
	.cfi_offset x30, -24
	mov x29, sp
	bl inner
outer_ret:
	ldp x29, x30, [sp], #32
	.cfi_restore x30
	.cfi_restore x29
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc

/* A leaf without a frame: CFA = sp, the return address still in x30. */
inner:
	.cfi_startproc
	nop
inner_body:
	nop
	ret
	.cfi_endproc

/* An exception entry: the interrupted x29, x30, sp and pc (ELR_EL1) saved in a 32-byte frame at
 * sp, described as a signal frame whose return column is DWARF 32 (ELR_mode in the AArch64 DWARF
 * ABI), so x30 keeps a rule of its own and the interrupted pc is looked up as is. */
entry:
	.cfi_startproc simple
	.cfi_return_column 32
	.cfi_signal_frame
	.cfi_def_cfa sp, 32
	.cfi_offset x29, -32
	.cfi_offset x30, -24
	.cfi_offset sp, -16
	.cfi_offset 32, -8
	nop
entry_body:
	nop
	eret
	.cfi_endproc

/* An exception vector's first instructions: the interrupted pc still in ELR_EL1 (DWARF 33,
 * ELR_mode), the frame being made below the interrupted sp, x29 and x30 as interrupted. */
vector:
	.cfi_startproc simple
	.cfi_signal_frame
	.cfi_return_column 32
	.cfi_def_cfa sp, 0
	.cfi_register 32, 33
	.cfi_same_value x29
	.cfi_same_value x30
	sub sp, sp, #32
	.cfi_def_cfa_offset 32
vector_body:
	nop
	b entry
	.cfi_endproc
