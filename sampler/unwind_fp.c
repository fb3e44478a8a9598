/* unwind_fp.c: the frame-pointer unwinder -- one step along the saved frame-pointer chain. */
#include "unwind.h"

/*
 * Frame records (x86_64 and aarch64: fp_prev 0, fp_ret 8; riscv64: -16, -8):
 *   [fp + fp_prev] = caller's fp, [fp + fp_ret] = return address into the caller.
 * The caller's stack pointer is just above the record. In a prologue, or at `ret`, the record
 * is not (or no longer) this function's: the return address is at the stack pointer (or in
 * the link register) and fp is still the caller's -- possible only for an exact pc (the
 * stopped one, or one an interrupt frame gives), whose position the image's text tells.
 * Our kernel's interrupt entry builds a record from the interrupted rbp/rip, so the chain
 * goes on into the interrupted code.
 */
enum uw_step fp_step(void *ctx, struct uw_cursor *c)
{
	const struct fp_ctx *f = ctx;
	const struct uw_arch *a = c->arch;
	uint64_t sp = c->regs.r[a->sp], fp = c->regs.r[a->fp], ra, prev;
	int have_sp = (c->regs.valid >> a->sp) & 1, have_fp = (c->regs.valid >> a->fp) & 1;
	enum unwind_pc kind = c->exact && f && f->pc_kind ? f->pc_kind(f->arg, c->pc) : PC_BODY;
	if (kind != PC_BODY) {
		if (!have_sp) goto bad;
		uint64_t nsp;
		if (a->lr >= 0 && kind == PC_AT_ENTRY) {
			if (!((c->regs.valid >> a->lr) & 1)) goto bad;
			ra = c->regs.r[a->lr];
			nsp = sp;
		} else {
			uint64_t at = sp + (kind == PC_AFTER_PUSH ? 8 : 0);
			if (uw_read(c, at, &ra)) return US_STOP;
			nsp = at + 8;
		}
		if (!ra) return US_END;
		c->regs.valid = (have_fp ? 1ull << a->fp : 0) | 1ull << a->sp;
		c->regs.r[a->sp] = nsp;
		c->pc = ra;
		c->exact = 0;
		return US_OK;
	}
	if (!have_fp) goto bad;
	if (fp == 0) return US_END;
	if (fp & 7) {
		c->stop = UW_ALIGN;
		return US_STOP;
	}
	/* A frame record below the stack pointer points back down: a loop. One far above it is not
	 * on this stack (the frame-pointer chain never switches stacks; CFI and ORC do). */
	uint64_t span = f ? f->span : 32768;
	if (have_sp && fp < sp) {
		c->stop = sp - fp < span ? UW_LOOP : UW_SPAN;
		return US_STOP;
	}
	if (have_sp && fp - sp >= span) {
		c->stop = UW_SPAN;
		return US_STOP;
	}
	if (uw_read(c, fp + (uint64_t)(int64_t)a->fp_ret, &ra) ||
	    uw_read(c, fp + (uint64_t)(int64_t)a->fp_prev, &prev)) {
		int lo = a->fp_prev < a->fp_ret ? a->fp_prev : a->fp_ret;
		c->need = fp + (uint64_t)(int64_t)lo; /* fetch the record from its lowest word */
		return US_STOP;
	}
	if (!ra) return US_END;
	int hi = a->fp_prev > a->fp_ret ? a->fp_prev : a->fp_ret;
	c->regs.valid = 1ull << a->sp | 1ull << a->fp;
	c->regs.r[a->sp] = fp + (uint64_t)(int64_t)(hi + 8);
	c->regs.r[a->fp] = prev;
	c->pc = ra;
	c->exact = 0;
	return US_OK;
bad:
	c->stop = UW_BADRULE;
	return US_STOP;
}
