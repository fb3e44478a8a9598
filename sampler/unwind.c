/* SPDX-License-Identifier: MIT */
/* unwind.c: the stack walk -- picks an unwinding method per frame and checks every step. */
#include "unwind.h"
#include "bytes.h"
#include <string.h>

const char *const unwind_method_names[UM_N] = { "fp", "cfi", "orc" };

const char *const unwind_stop_names[UW_NSTOPS] = {
	"end", "user", "max-frames", "out-of-range", "unread", "misaligned", "loop", "out-of-stack",
	"no-info", "bad-rule",
};

/* The architectures' uw_arch values are in arch.c's table. */

int unwind_read64_chunks(const struct unwind_chunk *ch, int n, uint64_t addr, uint64_t *val)
{
	for (int i = 0; i < n; i++) { /* the common case: the word lies in one chunk */
		if (addr >= ch[i].addr && addr - ch[i].addr <= (uint64_t)ch[i].len - 8 && ch[i].len >= 8) {
			*val = le64(ch[i].data + (addr - ch[i].addr));
			return 0;
		}
	}
	uint64_t v = 0; /* bytewise: a word may straddle two adjacent chunks */
	for (int k = 7; k >= 0; k--) {
		uint64_t a = addr + (uint64_t)k;
		int found = 0;
		for (int i = 0; i < n && !found; i++)
			if (a >= ch[i].addr && a - ch[i].addr < ch[i].len) {
				v = v << 8 | ch[i].data[a - ch[i].addr];
				found = 1;
			}
		if (!found) return -1;
	}
	*val = v;
	return 0;
}

#define EXTENT_BELOW 512 /* a read this far below a stack's lowest byte so far is on that stack */

/* The extent (one stack) an address belongs to: one it lies within a stack span above (or a
 * little below), else a new one. -1 if all are taken. */
static int extent_of(struct uw_walk *w, uint64_t addr)
{
	for (int i = 0; i < w->next; i++)
		if (addr + EXTENT_BELOW >= w->ext[i].lo && addr - w->ext[i].lo < w->span) {
			if (addr < w->ext[i].lo) w->ext[i].lo = addr;
			return i;
		}
	if (w->next == UW_MAX_EXTENTS) return -1;
	w->ext[w->next] = (struct uw_extent){ addr, addr };
	return w->next++;
}

int uw_read(struct uw_walk *w, uint64_t addr, uint64_t *val)
{
	/* Reads cluster: try the chunk and the stack of the previous read first. */
	const struct unwind_chunk *ch = &w->chunks[w->last_chunk];
	if (w->last_chunk < w->nchunks && addr >= ch->addr && ch->len >= 8 && addr - ch->addr <= ch->len - 8) {
		*val = le64(ch->data + (addr - ch->addr));
	} else if (unwind_read64_chunks(w->chunks, w->nchunks, addr, val)) {
		w->stop = UW_UNREAD;
		w->need = addr;
		return -1;
	} else {
		for (int i = 0; i < w->nchunks; i++)
			if (addr >= w->chunks[i].addr && addr - w->chunks[i].addr < w->chunks[i].len) w->last_chunk = i;
	}
	struct uw_extent *e = &w->ext[w->cur];
	if (!(w->cur < w->next && addr >= e->lo && addr - e->lo < w->span)) {
		int k = extent_of(w, addr);
		if (k < 0) return 0;
		e = &w->ext[k];
	}
	if (addr + 8 > e->hi) e->hi = addr + 8;
	return 0;
}

static int in_kernel(const struct unwind_in *in, uint64_t a)
{
	return a >= in->klo && a <= in->khi;
}

/*
 * Checks that hold whatever method produced the caller's frame: its stack pointer is known and
 * aligned, and lies above the callee's on the same stack -- or on another stack (an interrupt
 * or exception frame switched stacks), at most UW_MAX_SWITCHES times and never back to a stack
 * the walk has left. Returns UW_NSTOPS if the step is sound.
 */
static enum unwind_stop check_step(const struct unwind_in *in, struct uw_walk *w, const struct uw_frame *f,
				   const struct uw_frame *t, int *switches, uint32_t *left)
{
	const struct uw_arch *a = in->arch;
	uint64_t sp = f->regs.r[a->sp];
	if (!((t->regs.valid >> a->sp) & 1)) return UW_BADRULE;
	uint64_t nsp = t->regs.r[a->sp];
	if (nsp & 7) return UW_ALIGN;
	/* Up the same stack -- or not at all where nothing was pushed (a return address still in
	 * the link register), as long as the pc moved. */
	if (nsp > sp && nsp - sp < in->span) return UW_NSTOPS;
	if (nsp == sp && t->pc != f->pc) return UW_NSTOPS;
	if (nsp <= sp && sp - nsp < in->span) return UW_LOOP;
	if (++*switches > UW_MAX_SWITCHES) return UW_SPAN;
	*left |= 1u << w->cur;
	int e = extent_of(w, nsp);
	if (e < 0) return UW_SPAN;
	if ((*left >> e) & 1) return UW_LOOP; /* back to a stack it already left */
	w->cur = e;
	return UW_NSTOPS;
}

void unwind_walk(const struct unwind_in *in, uint64_t *frames, struct unwind_out *out)
{
	const struct uw_arch *a = in->arch;
	struct uw_walk w = { .arch = a, .span = in->span, .chunks = in->chunks, .nchunks = in->nchunks,
			     .fetchable = in->fetchable, .need_reg = -1, .pac_mask = in->pac_mask };
	struct uw_frame buf[2], *f = &buf[0], *t = &buf[1]; /* the frame and its caller, swapped per step */
	int n = 0, switches = 0;
	uint32_t left = 0;
	memset(out->exact, 0, sizeof out->exact);
	memset(out->by_method, 0, sizeof out->by_method);
	out->stop_method = -1;
	out->need = 0;
	out->need_reg = -1;
	f->pc = in->pc;
	f->exact = 1;
	f->sp_low = 0;
	f->regs = in->regs;
	if ((f->regs.valid >> a->sp) & 1) {
		w.ext[0] = (struct uw_extent){ f->regs.r[a->sp], f->regs.r[a->sp] };
		w.next = 1;
	}
	frames[n++] = in->pc;
	if (in->user) {
		out->stop = UW_USER;
		goto done;
	}
	if (!in_kernel(in, in->pc)) {
		out->stop = UW_RANGE;
		goto done;
	}
	for (;;) {
		if (n >= in->max_frames) {
			out->stop = UW_MAXFRAMES;
			break;
		}
		enum uw_step r = US_NOINFO;
		int m = in->nmethods ? in->methods[0]->method : -1;
		w.depth = n - 1;
		for (int k = 0; k < in->nmethods && r == US_NOINFO; k++) {
			t->sp_low = 0;
			r = in->methods[k]->step(in->methods[k]->ctx, &w, f, t);
			if (r != US_NOINFO) m = in->methods[k]->method;
		}
		out->stop_method = m;
		if (r == US_NOINFO) { out->stop = UW_NOINFO; break; }
		if (r == US_END) { out->stop = UW_END; break; }
		if (r == US_USER) { out->stop = UW_USER; break; }
		if (r == US_STOP) {
			out->stop = w.stop;
			out->need = w.need;
			out->need_reg = w.need_reg;
			break;
		}
		t->pc = uw_strip(in->pac_mask, t->pc); /* a CFI step's x30 may be signed too */
		if (t->pc == 0) { out->stop = UW_END; break; }
		if (!in_kernel(in, t->pc)) {
			/* An interrupt or exception frame whose context is outside the kernel interrupted
			 * user mode: that is where a kernel stack begins. A return address there is junk. */
			out->stop = t->exact ? UW_USER : UW_RANGE;
			break;
		}
		enum unwind_stop bad = check_step(in, &w, f, t, &switches, &left);
		if (bad != UW_NSTOPS) { out->stop = bad; break; }
		if (t->exact) out->exact[n >> 6] |= 1ull << (n & 63);
		out->by_method[m]++;
		frames[n++] = t->pc;
		struct uw_frame *x = f; /* the caller is the next step's frame */
		f = t;
		t = x;
	}
done:
	out->n = n;
	out->nextents = w.next;
	memcpy(out->ext, w.ext, sizeof out->ext);
	out->last_extent = w.cur;
}
