/* unwind.c: the stack walk -- picks an unwinding method per frame and checks every step. */
#include "unwind.h"
#include <string.h>

const char *const unwind_method_names[UM_N] = { "fp", "cfi", "orc" };

const char *const unwind_stop_names[UW_NSTOPS] = {
	"end", "user", "max-frames", "out-of-range", "unread", "misaligned", "loop", "out-of-stack",
	"no-info", "bad-rule",
};

/* DWARF numbering: x86_64 psABI 3.6.2 (0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp,
 * 8-15 r8-r15, 16 return address); AArch64 DWARF ABI (0-30 x0-x30, 31 sp, 32 pc; the return
 * address column is x30); RISC-V ELF psABI (0-31 x0-x31: 1 ra, 2 sp, 8 s0/fp). */
const struct uw_arch uw_arch_x86_64 = { 7, 6, 16, -1, 0, 8, 17, 1 };
const struct uw_arch uw_arch_aarch64 = { 31, 29, 30, 30, 0, 8, 33, 0 };
const struct uw_arch uw_arch_riscv64 = { 2, 8, 1, 1, -16, -8, 32, 0 };

int unwind_read64_chunks(const struct unwind_chunk *ch, int n, uint64_t addr, uint64_t *val)
{
	for (int i = 0; i < n; i++) { /* the common case: the word lies in one chunk */
		if (addr >= ch[i].addr && addr - ch[i].addr <= (uint64_t)ch[i].len - 8 && ch[i].len >= 8) {
			const uint8_t *p = ch[i].data + (addr - ch[i].addr);
			uint64_t v = 0;
			for (int k = 7; k >= 0; k--) v = v << 8 | p[k];
			*val = v;
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
static int extent_of(struct uw_cursor *c, uint64_t addr, uint64_t span)
{
	for (int i = 0; i < c->next; i++)
		if (addr + EXTENT_BELOW >= c->ext[i].lo && addr - c->ext[i].lo < span) {
			if (addr < c->ext[i].lo) c->ext[i].lo = addr;
			return i;
		}
	if (c->next == UW_MAX_EXTENTS) return -1;
	c->ext[c->next] = (struct uw_extent){ addr, addr };
	return c->next++;
}

int uw_read(struct uw_cursor *c, uint64_t addr, uint64_t *val)
{
	if (unwind_read64_chunks(c->chunks, c->nchunks, addr, val)) {
		c->stop = UW_UNREAD;
		c->need = addr;
		return -1;
	}
	int e = extent_of(c, addr, c->span);
	if (e >= 0 && addr + 8 > c->ext[e].hi) c->ext[e].hi = addr + 8;
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
static enum unwind_stop check_step(const struct unwind_in *in, struct uw_cursor *c, uint64_t sp,
				   const struct uw_cursor *t, int *switches, uint32_t *left)
{
	const struct uw_arch *a = in->arch;
	if (!((t->regs.valid >> a->sp) & 1)) return UW_BADRULE;
	uint64_t nsp = t->regs.r[a->sp];
	if (nsp & 7) return UW_ALIGN;
	/* Up the same stack -- or not at all where nothing was pushed (a return address still in
	 * the link register), as long as the pc moved. */
	if (nsp > sp && nsp - sp < in->span) return UW_NSTOPS;
	if (nsp == sp && t->pc != c->pc) return UW_NSTOPS;
	if (nsp <= sp && sp - nsp < in->span) return UW_LOOP;
	if (++*switches > UW_MAX_SWITCHES) return UW_SPAN;
	*left |= 1u << c->cur;
	struct uw_cursor tmp = *t;
	int e = extent_of(&tmp, nsp, in->span);
	if (e < 0) return UW_SPAN;
	if ((*left >> e) & 1) return UW_LOOP; /* back to a stack it already left */
	c->next = tmp.next;
	memcpy(c->ext, tmp.ext, sizeof c->ext);
	c->cur = e;
	return UW_NSTOPS;
}

void unwind_walk(const struct unwind_in *in, uint64_t *frames, struct unwind_out *out)
{
	const struct uw_arch *a = in->arch;
	struct uw_cursor c;
	int n = 0, switches = 0;
	uint32_t left = 0;
	memset(out, 0, sizeof *out);
	memset(&c, 0, sizeof c);
	out->stop_method = -1;
	c.arch = a;
	c.span = in->span;
	c.pc = in->pc;
	c.exact = 1;
	c.regs = in->regs;
	c.chunks = in->chunks;
	c.nchunks = in->nchunks;
	if ((c.regs.valid >> a->sp) & 1) {
		c.ext[0] = (struct uw_extent){ c.regs.r[a->sp], c.regs.r[a->sp] };
		c.next = 1;
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
		uint64_t sp = c.regs.r[a->sp];
		struct uw_cursor t;
		enum uw_step r = US_NOINFO;
		int m = in->nmethods ? in->methods[0]->method : -1;
		for (int k = 0; k < in->nmethods && r == US_NOINFO; k++) {
			t = c;
			t.depth = n;
			r = in->methods[k]->step(in->methods[k]->ctx, &t);
			if (r != US_NOINFO) m = in->methods[k]->method;
		}
		out->stop_method = m;
		if (r == US_NOINFO) { out->stop = UW_NOINFO; break; }
		/* Whatever the step decided, the memory it read is part of the walk's extent. */
		c.next = t.next;
		memcpy(c.ext, t.ext, sizeof c.ext);
		if (r == US_END) { out->stop = UW_END; break; }
		if (r == US_USER) { out->stop = UW_USER; break; }
		if (r == US_STOP) {
			out->stop = t.stop;
			out->need = t.need;
			break;
		}
		if (t.pc == 0) { out->stop = UW_END; break; }
		if (!in_kernel(in, t.pc)) {
			/* An interrupt or exception frame whose context is outside the kernel interrupted
			 * user mode: that is where a kernel stack begins. A return address there is junk. */
			out->stop = t.exact ? UW_USER : UW_RANGE;
			break;
		}
		enum unwind_stop bad = check_step(in, &c, sp, &t, &switches, &left);
		if (bad != UW_NSTOPS) { out->stop = bad; break; }
		int cur = c.cur, next = c.next;
		struct uw_extent ext[UW_MAX_EXTENTS];
		memcpy(ext, c.ext, sizeof ext);
		c = t;
		c.cur = cur;
		c.next = next;
		memcpy(c.ext, ext, sizeof ext);
		if (c.exact) out->exact[n >> 6] |= 1ull << (n & 63);
		out->by_method[m]++;
		frames[n++] = c.pc;
	}
done:
	out->n = n;
	out->nextents = c.next;
	memcpy(out->ext, c.ext, sizeof out->ext);
	out->last_extent = c.cur;
}
