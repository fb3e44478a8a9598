/* SPDX-License-Identifier: MIT */
/* insn.h: what the kernel's instructions say about a pc -- x86_64, aarch64, riscv64: where it sits in its
 * function's frame setup, whether the vCPU is idle there, whether a return address follows a call. */
#ifndef INSN_H
#define INSN_H
#include <stdint.h>
#include "unwind.h"

/* The text byte at addr, or -1 if unknown (the image's text, or blocks read from the guest). */
typedef int (*insn_byte_fn)(const void *arg, uint64_t addr);

/* Where pc sits in the frame setup of its function, which starts at fn (have_fn 0: unknown).
 * machine is the ELF e_machine (0 = unknown: x86_64's rules). *adj (may be NULL) gets how many
 * bytes above sp the caller's stack pointer is, for PC_AT_ENTRY on a link-register machine (an
 * aarch64 pc between `sub sp`/`stp x29, x30, [sp, #-N]!` and `mov x29, sp`, or after the
 * epilogue's `ldp x29, x30` with `add sp` still to come). */
enum unwind_pc insn_pc_kind(int machine, insn_byte_fn byte, const void *arg, uint64_t fn, int have_fn,
			    uint64_t pc, int *adj);
/* 1 if a vCPU stopped at pc is idle: x86_64 just after `hlt`; aarch64 at or just after `wfi` or
 * `wfe`; riscv64 at or just after `wfi`. 0 if not; -1 if the text is unknown, *need (may be NULL) then names a byte to fetch. */
int insn_idle(int machine, insn_byte_fn byte, const void *arg, uint64_t pc, uint64_t *need);
/* 1 if the instruction before ra is a call (ra is a return address); 0 if it is not (on aarch64:
 * a frame record whose "return address" is an interrupted pc -- an exception entry's ELR; on
 * riscv64 our kernel's trap frame record, holding sepc);
 * -1 if unknown (the text is not known, or x86_64, whose variable-length instructions cannot
 * be decoded backwards). */
int insn_after_call(int machine, insn_byte_fn byte, const void *arg, uint64_t ra);

/* The address aarch64 Linux's exception entry from EL0 loads SP_EL0 from (kernel_entry 0:
 * `adrp xN, sym; add xN, xN, #:lo12:sym; mrs xM, tpidr_el1; ldr xN, [xN, xM]; msr sp_el0, xN` --
 * the per-CPU __entry_task), scanning len bytes of text from fn: 0 with *addr, -1 if not there. */
int a64_sp_el0_source(insn_byte_fn byte, const void *arg, uint64_t fn, uint64_t len, uint64_t *addr);
/* arm64: the addresses the function at fn (len bytes) loads 64-bit words from through a base
 * register set by adrp (+ add): a static variable it reads (e.g. a list head's next). Up to max
 * into out, in code order; returns how many. */
int a64_static_loads(insn_byte_fn byte, const void *arg, uint64_t fn, uint64_t len, uint64_t *out, int max);

/* AArch64 decoding, exposed for the unit tests (Arm ARM C4, "A64 Instruction Set Encoding"). */
int a64_is_idle(uint32_t w);        /* wfi or wfe */
int a64_is_call(uint32_t w);        /* bl, blr, blraa/blrab(z) */
int a64_is_ret(uint32_t w);
/* The per-architecture forms the arch table (arch.c) points at: insn_pc_kind's, insn_idle's and
 * insn_after_call's questions for one machine (need and adj never NULL). */
enum unwind_pc x86_pc_kind(insn_byte_fn byte, const void *arg, uint64_t fn, int have_fn, uint64_t pc, int *adj);
enum unwind_pc a64_pc_kind(insn_byte_fn byte, const void *arg, uint64_t fn, int have_fn, uint64_t pc, int *adj);
int x86_idle(insn_byte_fn byte, const void *arg, uint64_t pc, uint64_t *need);
int a64_idle(insn_byte_fn byte, const void *arg, uint64_t pc, uint64_t *need);
int rv_idle(insn_byte_fn byte, const void *arg, uint64_t pc, uint64_t *need);
int a64_after_call(insn_byte_fn byte, const void *arg, uint64_t ra);
int rv_after_call(insn_byte_fn byte, const void *arg, uint64_t ra);

/* RISC-V decoding, for the unit tests: wfi; jal/jalr linking ra; c.jalr. */
int rv_is_idle(uint32_t w);
int rv_is_call(uint32_t w);
int rv_is_c_call(uint16_t h);
int a64_vector_prologue(uint32_t w); /* run by a Linux vector before its handler: regs but sp, x0 intact */         /* ret (x30), retaa, retab */

#endif
