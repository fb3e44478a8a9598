/* unwind.c: frame-pointer stack walk over the stack chunks read from one vCPU. */
#include "unwind.h"

const char *const unwind_stop_names[UW_NSTOPS] = {
	"end", "max-frames", "out-of-range", "unread", "misaligned", "loop", "out-of-stack",
};

static int read_byte(const struct unwind_in *in, uint64_t addr, uint8_t *b)
{
	for (int i = 0; i < in->nchunks; i++) {
		const struct unwind_chunk *c = &in->chunks[i];
		if (addr >= c->addr && addr - c->addr < c->len) {
			*b = c->data[addr - c->addr];
			return 0;
		}
	}
	return -1;
}

int unwind_read64(const struct unwind_in *in, uint64_t addr, uint64_t *val)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--) { /* bytewise, so a word may straddle two adjacent chunks */
		uint8_t b;
		if (read_byte(in, addr + (uint64_t)i, &b)) return -1;
		v = v << 8 | b;
	}
	*val = v;
	return 0;
}

/* A read during the walk also records the highest stack address touched (to size the next
 * sample's window). */
static int walk_read(const struct unwind_in *in, uint64_t addr, uint64_t *val, struct unwind_out *out)
{
	if (unwind_read64(in, addr, val)) return -1;
	if (addr + 8 > out->top) out->top = addr + 8;
	return 0;
}

static int in_kernel(const struct unwind_in *in, uint64_t a)
{
	return a >= in->klo && a <= in->khi;
}

/*
 * Frame records (x86_64 and aarch64: fp_prev 0, fp_ret 8; riscv64: -16, -8):
 *   [fp + fp_prev] = caller's fp, [fp + fp_ret] = return address into the caller.
 * Interrupt entry stubs build the same record from the interrupted rbp/rip, so the walk
 * continues into the interrupted code. Callers' frames are at higher addresses.
 */
void unwind_walk(const struct unwind_in *in, uint64_t *frames, struct unwind_out *out)
{
	uint64_t fp = in->fp, val, prev;
	int n = 0;
	out->need = 0;
	out->top = 0;
	frames[n++] = in->pc;
	if (!in_kernel(in, in->pc)) {
		out->stop = UW_RANGE;
		goto done;
	}
	/* In a prologue or at `ret` the frame record is not (or no longer) this function's: the
	 * return address sits at the stack pointer (or the link register), and fp is the caller's. */
	if (in->pc_kind != PC_BODY && n < in->max_frames) {
		if (in->has_lr && in->pc_kind == PC_AT_ENTRY) {
			val = in->lr;
		} else {
			uint64_t at = in->sp + (in->pc_kind == PC_AFTER_PUSH ? 8 : 0);
			if (walk_read(in, at, &val, out)) {
				out->stop = UW_UNREAD;
				out->need = at;
				goto done;
			}
		}
		if (!in_kernel(in, val)) {
			out->stop = val ? UW_RANGE : UW_END;
			goto done;
		}
		frames[n++] = val;
	}
	for (;;) {
		if (n >= in->max_frames) { out->stop = UW_MAXFRAMES; break; }
		if (fp == 0) { out->stop = UW_END; break; }
		if (fp & 7) { out->stop = UW_ALIGN; break; }
		uint64_t lo = fp + (uint64_t)(in->fp_prev < in->fp_ret ? in->fp_prev : in->fp_ret);
		if (lo < in->sp || lo - in->sp >= in->span) { out->stop = UW_SPAN; break; }
		if (walk_read(in, fp + (uint64_t)in->fp_ret, &val, out) ||
		    walk_read(in, fp + (uint64_t)in->fp_prev, &prev, out)) {
			out->stop = UW_UNREAD;
			out->need = lo;
			break;
		}
		if (val == 0) { out->stop = UW_END; break; }
		if (!in_kernel(in, val)) { out->stop = UW_RANGE; break; }
		frames[n++] = val;
		if (prev != 0 && prev <= fp) { out->stop = UW_LOOP; break; }
		fp = prev;
	}
done:
	out->n = n;
}
