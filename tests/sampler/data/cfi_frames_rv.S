/* cfi_frames_rv.S: riscv64 functions with known DWARF CFI -- a GCC-style frame (ra and s0 saved
 * at the top of the frame), a frameless leaf, and a trap entry described as our kernel's is
 * (kernel/arch/riscv64/entry.S): a signal frame whose return column is 64 (the psABI's alternate
 * frame return column), the interrupted pc in sepc until it is stored -- linked into an ELF the
 * CFI unwinder's unit test reads (tests/sampler/test_cfi.c builds matching stacks by hand). */
	.option norvc
	.text
	.globl start, outer, inner, entry

/* The outermost frame: its return address is undefined, as at a task's entry. */
start:
	.cfi_startproc
	.cfi_undefined ra
	call outer
start_ret:
	wfi
	.cfi_endproc

/* As GCC emits it: a 32-byte frame, ra at CFA - 8, s0 at CFA - 16. */
outer:
	.cfi_startproc
	addi sp, sp, -32
	.cfi_def_cfa_offset 32
	sd ra, 24(sp)
	sd s0, 16(sp)
	.cfi_offset ra, -8
	.cfi_offset s0, -16
	addi s0, sp, 32
	call inner
outer_ret:
	ld ra, 24(sp)
	ld s0, 16(sp)
	.cfi_restore ra
	.cfi_restore s0
	addi sp, sp, 32
	.cfi_def_cfa_offset 0
	ret
	.cfi_endproc

/* A leaf without a frame: CFA = sp, the return address still in ra. */
inner:
	.cfi_startproc
	nop
inner_body:
	nop
	ret
	.cfi_endproc

/* A trap entry: a 32-byte frame at sp holding the interrupted ra, s0 and pc; before the pc is
 * stored it is in sepc (DWARF 4096 + 0x141 = 4417), a CSR read with `p`. */
entry:
	.cfi_startproc simple
	.cfi_signal_frame
	.cfi_return_column 64
	.cfi_def_cfa sp, 0
	.cfi_register 64, 4417
	addi sp, sp, -32
	.cfi_def_cfa_offset 32
entry_early:
	sd ra, 0(sp)
	.cfi_offset ra, -32
	sd s0, 8(sp)
	.cfi_offset s0, -24
	csrr t0, sepc
	sd t0, 16(sp)
	.cfi_offset 64, -16
entry_body:
	nop
	sret
	.cfi_endproc
