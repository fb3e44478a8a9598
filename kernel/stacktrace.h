/* SPDX-License-Identifier: MIT */
/* stacktrace.h: bounded frame-pointer walks that never fault. */
#ifndef STACKTRACE_H
#define STACKTRACE_H
#include <stdint.h>
#include "lib.h"

/*
 * Walks the RBP chain from fp (sp says which stack we start on) and stores up to max
 * return addresses in out. Stops at a misaligned or out-of-stack frame pointer, a
 * return address outside kernel text, a loop, or max. Returns the frames stored.
 */
int stacktrace_from(uint64_t fp, uint64_t sp, uint64_t *out, int max);
/*
 * Callers of code interrupted at rip with registers rbp/rsp: like stacktrace_from, but if rip
 * is at a function's `push %rbp` or just after it (the frame is not set up yet), the first
 * caller is read from [rsp] or [rsp + 8], so it is not lost. Reads kernel text at rip.
 */
int stacktrace_interrupted(uint64_t rip, uint64_t rbp, uint64_t rsp, uint64_t *out, int max);
/*
 * AArch64: callers of code interrupted at pc with x29 = fp, sp, x30 = lr. Before the function's
 * frame record is set up (its first instructions) and after the epilogue restored x29/x30, the
 * first caller is lr, read from the instructions at pc (and whether pc is a symbol's start).
 */
int stacktrace_interrupted_lr(uint64_t pc, uint64_t fp, uint64_t sp, uint64_t lr, uint64_t *out, int max);
int a64_frame_not_set_up(uint64_t pc, int at_entry);
/*
 * RISC-V (arch/riscv64/stackwalk.c): the same, where a frame record sits just below s0 and a
 * leaf function's holds only the caller's s0 (GCC saves no ra in a leaf): lr is the first caller
 * there too, and in a prologue before s0 is set or an epilogue after s0 is restored.
 */
int rv_frame_not_set_up(uint64_t pc, int at_entry);
/* The callers of the context a trap frame saved (the arch's trap.c picks the walk above). */
struct trapframe;
int stacktrace_trapframe(const struct trapframe *tf, uint64_t *out, int max);
/* Bounds [lo, hi) of the known stack (task, boot or IST) holding addr; 0 if none. */
int stack_bounds(uint64_t addr, uint64_t *lo, uint64_t *hi);
/* Prints "  #i 0x... sym+0xoff" lines for rip then the walk from fp. */
void backtrace_print(struct out *o, uint64_t rip, uint64_t fp, uint64_t sp);
void backtrace_print_lr(struct out *o, uint64_t pc, uint64_t fp, uint64_t sp, uint64_t lr);	/* aarch64 */
#endif
