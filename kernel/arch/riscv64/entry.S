/* SPDX-License-Identifier: MIT */
/* entry.S (riscv64): the trap entry (stvec, direct mode) and exit, unwindable by frames and CFI. */
/*
 * Every trap reserves a struct trapframe (trap.h) on the current stack -- the kernel runs in
 * S-mode only, so an interrupt lands on the interrupted task's own stack -- saves every
 * register, sepc/sstatus/scause/stval, and calls trap(frame).
 *
 * The frame-pointer chain across a trap: the frame's last two words are {interrupted s0,
 * sepc} and s0 points just above them (at the interrupted sp), as a RISC-V frame record sits
 * below its s0. To a walker that pair is the frame of a function "called" from the interrupted
 * instruction: trap -> the interrupted function (by its pc) -> its callers (by its s0).
 *
 * The exit path clears sstatus.SIE first: a task switch inside trap() may come back here with
 * interrupts on, and an interrupt must not land between restoring sepc/sstatus and sret.
 * tp (this hart's struct cpu) and gp are not restored: tasks never migrate, and tp must stay
 * this hart's even if the frame was saved before tp was set.
 *
 * CFI (for unwinders that read it): a signal frame whose CFA is the interrupted sp and whose
 * return column is 64 (no register of its own): the interrupted pc, in sepc (DWARF 4096 +
 * 0x141) until it is stored, then at its slot. Registers are "same value" until stored.
 */
#define TF_SIZE 304
#define TF_SEPC 256
#define TF_SSTATUS 264
#define TF_SCAUSE 272
#define TF_STVAL 280
#define TF_FRAME 288
#define DWARF_PC 64
#define DWARF_SEPC (4096 + 0x141)

	.text
	.balign 4
	.globl trap_entry
	.type trap_entry, %function
trap_entry:
	.cfi_startproc simple
	.cfi_signal_frame
	.cfi_return_column DWARF_PC
	.cfi_def_cfa sp, 0
	.cfi_register DWARF_PC, DWARF_SEPC
	addi sp, sp, -TF_SIZE
	.cfi_def_cfa_offset TF_SIZE
	.irp n, 1, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	sd x\n, \n * 8(sp)
	.cfi_offset x\n, \n * 8 - TF_SIZE
	.endr
	addi t0, sp, TF_SIZE
	sd t0, 16(sp)			/* x2: the interrupted sp */
	csrr t0, sepc
	csrr t1, sstatus
	csrr t2, scause
	csrr t3, stval
	sd t0, TF_SEPC(sp)
	.cfi_offset DWARF_PC, TF_SEPC - TF_SIZE
	sd t1, TF_SSTATUS(sp)
	sd t2, TF_SCAUSE(sp)
	sd t3, TF_STVAL(sp)
	sd s0, TF_FRAME(sp)		/* the frame record: interrupted s0, interrupted pc */
	sd t0, TF_FRAME + 8(sp)
	addi s0, sp, TF_SIZE		/* the CFA stays sp-based: s0 is for frame walkers */
	mv a0, sp
	call trap
	csrci sstatus, 2
	ld t0, TF_SEPC(sp)
	ld t1, TF_SSTATUS(sp)
	csrw sepc, t0
	csrw sstatus, t1
	.cfi_register DWARF_PC, DWARF_SEPC
	.irp n, 1, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27, 28, 29, 30, 31
	ld x\n, \n * 8(sp)
	.cfi_restore x\n
	.endr
	addi sp, sp, TF_SIZE
	.cfi_def_cfa_offset 0
	sret
	.cfi_endproc
	.size trap_entry, . - trap_entry
