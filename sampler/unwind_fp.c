/* SPDX-License-Identifier: MIT */
/* unwind_fp.c: the frame-pointer unwinder -- one step along the saved frame-pointer chain. */
#include "unwind.h"

/*
 * Frame records (x86_64 and aarch64: fp_prev 0, fp_ret 8; riscv64: -16, -8):
 *   [fp + fp_prev] = caller's fp, [fp + fp_ret] = return address into the caller.
 * The caller's stack pointer is just above the record. In a prologue, or at `ret`, the record
 * is not (or no longer) this function's: the return address is at the stack pointer (or in
 * the link register) and fp is still the caller's -- possible only for an exact pc (the
 * stopped one, or one an interrupt frame gives), whose position the image's text tells.
 * Our kernel's interrupt entry builds a record from the interrupted rbp/rip (x86_64) or
 * x29/ELR_EL1 (aarch64), so the chain goes on into the interrupted code. On aarch64 the text
 * tells such a record apart: its "return address" does not follow a call (after_call), so the
 * caller is exact -- named by its own address, its rules looked up at it, not at pc - 1.
 * An aarch64 record sits at the bottom of its frame (`stp x29, x30, [sp, #-N]!`): the caller's
 * sp is only known to lie above it (sp_low), which the CFI method respects.
 * With pointer authentication (-mbranch-protection=pac-ret, Linux's CONFIG_ARM64_PTR_AUTH_KERNEL)
 * the saved x30 and x30 itself carry a code in the address's unused top bits: stripped
 * (uw_strip) before the address is used or decoded.
 * A stop on an exception vector's first instruction (QEMU takes a pending interrupt before it
 * honours a stop) has run nothing of the entry: the caller is the interrupted code itself, at
 * ELR_EL1 with every other register unchanged -- or user mode, for a vector from EL0. On aarch64
 * Linux an interrupt runs on the CPU's IRQ stack, whose first frame record links back to the
 * task stack (call_on_irq_stack): with switch_stacks such a record is followed, and the walk's
 * stack checks (at most UW_MAX_SWITCHES, never back to a stack it left) judge the switch.
 */
enum uw_step fp_step(void *ctx, struct uw_walk *w, const struct uw_frame *f, struct uw_frame *caller)
{
	const struct fp_ctx *x = ctx;
	const struct uw_arch *a = w->arch;
	uint64_t sp = f->regs.r[a->sp], fp = f->regs.r[a->fp], ra, prev;
	int have_sp = (f->regs.valid >> a->sp) & 1, have_fp = (f->regs.valid >> a->fp) & 1, adj = 0;
	int vec = f->exact && x && x->vector ? x->vector(x->arg, f->pc) : 0;
	if (vec) { /* the interrupted code, with all its registers: ELR_EL1's pc (user mode's too,
		    * for the sample to name) */
		if (!((f->regs.valid >> x->elr) & 1)) {
			if (!((w->fetchable >> x->elr) & 1)) goto bad;
			w->stop = UW_UNREAD; /* a register QEMU gives only with `p`: ask for it */
			w->need_reg = x->elr;
			return US_STOP;
		}
		if (vec == FP_VEC_USER) return US_USER;
		*caller = *f;
		caller->regs.valid &= ~(1ull << x->elr);
		if (vec == FP_VEC_KERNEL_MOVED) caller->regs.valid &= ~(1ull << a->sp | 1ull << 0); /* not the interrupted ones */
		caller->pc = f->regs.r[x->elr];
		caller->exact = 1;
		return US_OK;
	}
	enum unwind_pc kind = f->exact && x && x->pc_kind ? x->pc_kind(x->arg, f->pc, &adj) : PC_BODY;
	if (kind != PC_BODY) {
		if (!have_sp) goto bad;
		uint64_t nsp;
		if (a->lr >= 0 && kind == PC_AT_ENTRY) {
			/* unknown after a frame-record step (an interrupted prologue): the exception
			 * entry's record holds x29 and the pc, not x30 */
			if (!((f->regs.valid >> a->lr) & 1)) goto bad;
			ra = uw_strip(w->pac_mask, f->regs.r[a->lr]);
			nsp = sp + (uint64_t)adj;
		} else {
			uint64_t at = sp + (kind == PC_AFTER_PUSH ? 8 : 0);
			if (uw_read(w, at, &ra)) return US_STOP;
			ra = uw_strip(w->pac_mask, ra);
			nsp = at + 8;
		}
		if (!ra) return US_END;
		caller->regs.valid = (have_fp ? 1ull << a->fp : 0) | 1ull << a->sp;
		caller->regs.r[a->sp] = nsp;
		caller->regs.r[a->fp] = fp;
		caller->pc = ra;
		caller->exact = 0;
		caller->sp_low = f->sp_low;
		return US_OK;
	}
	if (!have_fp) goto bad;
	if (fp == 0) return US_END;
	if (fp & 7) {
		w->stop = UW_ALIGN;
		return US_STOP;
	}
	/* A frame record below the stack pointer points back down: a loop. One far above it is not
	 * on this stack (the frame-pointer chain never switches stacks; CFI and ORC do). */
	uint64_t span = x ? x->span : 32768;
	int other = x && x->switch_stacks && have_sp && (fp < sp ? sp - fp : fp - sp) >= span;
	if (have_sp && fp < sp && !other) {
		w->stop = sp - fp < span ? UW_LOOP : UW_SPAN;
		return US_STOP;
	}
	if (have_sp && fp - sp >= span && !other) {
		w->stop = UW_SPAN;
		return US_STOP;
	}
	if (uw_read(w, fp + (uint64_t)(int64_t)a->fp_ret, &ra) ||
	    uw_read(w, fp + (uint64_t)(int64_t)a->fp_prev, &prev)) {
		int lo = a->fp_prev < a->fp_ret ? a->fp_prev : a->fp_ret;
		w->need = fp + (uint64_t)(int64_t)lo; /* fetch the record from its lowest word */
		return US_STOP;
	}
	ra = uw_strip(w->pac_mask, ra); /* signed by `paciasp` before `stp x29, x30` (pac-ret) */
	if (!ra) return US_END;
	int hi = a->fp_prev > a->fp_ret ? a->fp_prev : a->fp_ret;
	caller->regs.valid = 1ull << a->sp | 1ull << a->fp;
	caller->regs.r[a->sp] = fp + (uint64_t)(int64_t)(hi + 8);
	caller->regs.r[a->fp] = prev;
	caller->pc = ra;
	caller->exact = x && x->after_call && x->after_call(x->arg, ra) == 0;
	caller->sp_low = a->rec_low;
	if (caller->exact && x->pt_valid && a->lr >= 0) {
		/* an exception entry's record, inside its register frame: the interrupted code's x30
		 * and sp too, so a leaf or prologue interrupted there goes on through x30 */
		uint64_t lr, psp;
		if (uw_read(w, fp + (uint64_t)(int64_t)x->pt_lr, &lr) || uw_read(w, fp + (uint64_t)(int64_t)x->pt_sp, &psp)) {
			w->need = fp + (uint64_t)(int64_t)(x->pt_lr < x->pt_sp ? x->pt_lr : x->pt_sp);
			return US_STOP;
		}
		caller->regs.r[a->lr] = lr;
		caller->regs.r[a->sp] = psp;
		caller->regs.valid |= 1ull << a->lr;
		caller->sp_low = 0;
	}
	return US_OK;
bad:
	w->stop = UW_BADRULE;
	return US_STOP;
}
