/* SPDX-License-Identifier: MIT */
/* unwind_orc.c: the Linux ORC unwinder -- .orc_unwind_ip/.orc_unwind tables, lookup and step. */
#include "unwind_orc.h"
#include "bytes.h"
#include "err.h"
#include <stdlib.h>

const char *const orc_layout_names[] = { "unknown", "v1 (Linux <= 6.2)", "v2 (Linux 6.3)",
					 "v3 (Linux >= 6.4)" };

/*
 * struct orc_entry, 6 bytes, packed, little-endian bit-fields:
 *   0 s16 sp_offset   2 s16 bp_offset   4 bits 0-3 sp_reg, bits 4-7 bp_reg
 *   5 v1: bits 0-1 type (0 call, 1 regs, 2 regs-partial), bit 2 end
 *     v2: bits 0-1 type, bit 2 signal, bit 3 end
 *     v3: bits 0-2 type (0 undefined, 1 end-of-stack, 2 call, 3 regs, 4 regs-partial), bit 3 signal
 * v1/v2 mark "no information" as sp_reg undefined without end, and the end of a stack as sp_reg
 * undefined with end. In v1 the caller of a regs frame is an interrupted pc; v2/v3 say so with
 * the signal bit.
 *
 * v3 kernels carry .orc_header: the SHA-1 of orc_types.h. A hash we have not seen means a layout
 * we cannot vouch for: refuse rather than unwind with a guess.
 */
static const uint8_t known_v3[][20] = {
	/* Linux 6.4 to at least 6.12 (seen in Debian's 6.12.95 image) */
	{ 0xfe, 0x5d, 0x32, 0xbf, 0x58, 0x1b, 0xd6, 0x3b, 0x2c, 0xa9,
	  0xa5, 0xc6, 0x5b, 0xa5, 0xa6, 0x25, 0xea, 0xb3, 0xfe, 0x24 },
};

void orc_decode(enum orc_layout l, const uint8_t raw[6], struct orc_entry *o)
{
	o->sp_off = (int16_t)le16(raw);
	o->bp_off = (int16_t)le16(raw + 2);
	o->sp_reg = raw[4] & 15;
	o->bp_reg = raw[4] >> 4;
	uint8_t b = raw[5];
	if (l == ORC_LAYOUT_V3) {
		static const uint8_t types[8] = { ORC_UNDEF, ORC_END, ORC_CALL, ORC_REGS, ORC_REGS_PARTIAL,
						  ORC_UNDEF, ORC_UNDEF, ORC_UNDEF };
		o->type = types[b & 7];
		o->signal = (b >> 3) & 1;
		return;
	}
	int end = l == ORC_LAYOUT_V1 ? (b >> 2) & 1 : (b >> 3) & 1;
	static const uint8_t types[4] = { ORC_CALL, ORC_REGS, ORC_REGS_PARTIAL, ORC_UNDEF };
	o->type = types[b & 3];
	o->signal = l == ORC_LAYOUT_V1 ? o->type != ORC_CALL : (b >> 2) & 1;
	if (o->sp_reg == ORC_REG_UNDEFINED) o->type = end ? ORC_END : ORC_UNDEF;
}

/* The layout of a kernel without .orc_header: v2 is the only one that uses bit 3 (end), and
 * bits 4-7 were never used. */
static enum orc_layout guess_layout(const uint8_t *ents, size_t n)
{
	int bit3 = 0;
	for (size_t i = 0; i < n; i++) {
		uint8_t b = ents[6 * i + 5];
		if (b & 0xf0) return ORC_LAYOUT_UNKNOWN;
		bit3 |= (b >> 3) & 1;
	}
	return bit3 ? ORC_LAYOUT_V2 : ORC_LAYOUT_V1;
}

/* The tables once the layout is known. */
static int build(struct orc_table *t, const uint8_t *ips, size_t n, uint64_t ipaddr, const uint8_t *ents,
		 uint64_t text_lo, uint64_t text_hi)
{
	t->ip = malloc(n * sizeof *t->ip);
	t->e = malloc(n * 6);
	t->cache = calloc(ORC_CACHE, sizeof *t->cache);
	if (!t->ip || !t->e || !t->cache) {
		orc_free(t);
		ERR_SET(t, ERR_SYS, "out of memory");
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const uint8_t *p = ips + 4 * i;
		int32_t rel = (int32_t)le32(p);
		t->ip[i] = ipaddr + 4 * i + (uint64_t)(int64_t)rel;
		if (i && t->ip[i] < t->ip[i - 1]) {
			orc_free(t);
			ERR_SET(t, ERR_FORMAT, "ORC table not sorted (entry %zu)", i);
			return -1;
		}
	}
	memcpy(t->e, ents, n * 6);
	t->n = n;
	t->text_lo = text_lo;
	t->text_hi = text_hi;
	return 0;
}

static int sizes_ok(struct orc_table *t, size_t iplen, size_t entlen)
{
	if (iplen % 4 || entlen % 6 || iplen / 4 != entlen / 6 || !iplen) {
		ERR_SET(t, ERR_FORMAT, "ORC tables disagree: %zu ip bytes, %zu entry bytes", iplen, entlen);
		return 0;
	}
	return 1;
}

int orc_load(struct orc_table *t, const uint8_t *ips, size_t iplen, uint64_t ipaddr,
	     const uint8_t *ents, size_t entlen, const uint8_t *hdr, size_t hdrlen,
	     uint64_t text_lo, uint64_t text_hi)
{
	memset(t, 0, sizeof *t);
	if (!sizes_ok(t, iplen, entlen)) return -1;
	size_t n = iplen / 4;
	if (hdr) {
		int known = 0;
		for (size_t k = 0; k < sizeof known_v3 / sizeof known_v3[0]; k++)
			known |= hdrlen == 20 && !memcmp(hdr, known_v3[k], 20);
		if (!known) {
			char hex[48] = "";
			for (size_t k = 0; k < hdrlen && k < 20; k++) snprintf(hex + 2 * k, 3, "%02x", hdr[k]);
			ERR_SET(t, ERR_FORMAT, "ORC tables of an unknown version (.orc_header %s); "
				"use --unwind cfi or fp", hex);
			return -1;
		}
		t->layout = ORC_LAYOUT_V3;
	} else if ((t->layout = guess_layout(ents, n)) == ORC_LAYOUT_UNKNOWN) {
		ERR_SET(t, ERR_FORMAT, "ORC tables of an unknown version (entry bits no known kernel sets); "
			"use --unwind cfi or fp");
		return -1;
	}
	return build(t, ips, n, ipaddr, ents, text_lo, text_hi);
}

int orc_load_as(struct orc_table *t, enum orc_layout l, const uint8_t *ips, size_t iplen, uint64_t ipaddr,
		const uint8_t *ents, size_t entlen, uint64_t text_lo, uint64_t text_hi)
{
	memset(t, 0, sizeof *t);
	if (!sizes_ok(t, iplen, entlen)) return -1;
	t->layout = l != ORC_LAYOUT_UNKNOWN ? l : guess_layout(ents, iplen / 4);
	if (t->layout == ORC_LAYOUT_UNKNOWN) {
		ERR_SET(t, ERR_FORMAT, "ORC tables of an unknown version (entry bits no known kernel sets)");
		return -1;
	}
	return build(t, ips, iplen / 4, ipaddr, ents, text_lo, text_hi);
}

int orc_find(struct orc_table *t, uint64_t pc, struct orc_entry *out)
{
	t->lookups++;
	struct orc_hit *h = t->cache ? &t->cache[(pc * 0x9e3779b97f4a7c15ull) >> 52 & (ORC_CACHE - 1)] : NULL;
	if (h && h->pc == pc + 1) {
		if (!h->found) t->misses++;
		*out = h->e;
		return h->found ? 0 : -1;
	}
	int found = t->n && pc >= t->text_lo && pc < t->text_hi && pc >= t->ip[0];
	if (found) {
		size_t lo = 0, hi = t->n; /* the last entry starting at or below pc */
		while (hi - lo > 1) {
			size_t mid = lo + (hi - lo) / 2;
			if (t->ip[mid] <= pc) lo = mid;
			else hi = mid;
		}
		orc_decode(t->layout, t->e + 6 * lo, out);
	} else {
		t->misses++;
	}
	if (h) *h = (struct orc_hit){ pc + 1, found, found ? *out : (struct orc_entry){ 0 } };
	return found ? 0 : -1;
}

void orc_free(struct orc_table *t)
{
	free(t->ip);
	free(t->e);
	free(t->cache);
	t->ip = NULL;
	t->e = NULL;
	t->cache = NULL;
	t->n = 0;
}

/* struct pt_regs (arch/x86/include/asm/ptrace.h): byte offset of each DWARF register. */
static const int ptregs_off[16] = {
	80, 96, 88, 40, 104, 112, 32, 152, /* rax rdx rcx rbx rsi rdi rbp rsp */
	72, 64, 56, 48, 24, 16, 8, 0,      /* r8 .. r15 */
};
#define PT_IP 128
#define PT_CS 136
#define IRET_IP 0   /* the hardware frame: ip, cs, flags, sp, ss */
#define IRET_CS 8
#define IRET_SP 24
enum { R_DX = 1, R_DI = 5, R_BP = 6, R_SP = 7, R_R10 = 10, R_R13 = 13 };

static int reg(const struct uw_frame *f, int r, uint64_t *v)
{
	if (!((f->regs.valid >> r) & 1)) return -1;
	*v = f->regs.r[r];
	return 0;
}

/*
 * One step, as the kernel's own unwinder takes it (arch/x86/kernel/unwind_orc.c): find the
 * caller's stack pointer from the entry's base register, then its pc -- the return address
 * below that stack pointer (call), or the pc of the register frame there (regs: a full
 * pt_regs; regs-partial: the hardware iret frame) -- then its frame pointer.
 */
enum uw_step orc_step(void *ctx, struct uw_walk *w, const struct uw_frame *c, struct uw_frame *caller)
{
	struct orc_table *t = ctx, *kernel = ctx;
	struct orc_entry o;
	uint64_t sp, nbp, at = c->exact ? c->pc : c->pc - 1;
	if (!w->arch->is_x86) return US_NOINFO;
	if (t->more && (at - t->bias < t->text_lo || at - t->bias >= t->text_hi)) { /* a module's pc */
		struct orc_table *m = t->more(t->more_arg, at);
		if (m) t = m;
	}
	if (orc_find(t, at - t->bias, &o)) return US_NOINFO;
	if (o.type == ORC_END) return US_END;
	if (o.type == ORC_UNDEF) goto bad; /* objtool marked it: no valid unwind state here */
	uint64_t osp = 0, obp = 0;
	int have_sp = !reg(c, R_SP, &osp), have_bp = !reg(c, R_BP, &obp);
	switch (o.sp_reg) {
	case ORC_REG_SP: if (!have_sp) goto bad; sp = osp + (uint64_t)(int64_t)o.sp_off; break;
	case ORC_REG_BP: if (!have_bp) goto bad; sp = obp + (uint64_t)(int64_t)o.sp_off; break;
	case ORC_REG_SP_INDIRECT:
		if (!have_sp) goto bad;
		if (uw_read(w, osp, &sp)) goto stop;
		sp += (uint64_t)(int64_t)o.sp_off;
		break;
	case ORC_REG_BP_INDIRECT:
		if (!have_bp) goto bad;
		if (uw_read(w, obp + (uint64_t)(int64_t)o.sp_off, &sp)) goto stop;
		break;
	case ORC_REG_R10: if (reg(c, R_R10, &sp)) goto bad; break;
	case ORC_REG_R13: if (reg(c, R_R13, &sp)) goto bad; break;
	case ORC_REG_DI: if (reg(c, R_DI, &sp)) goto bad; break;
	case ORC_REG_DX: if (reg(c, R_DX, &sp)) goto bad; break;
	default: goto bad;
	}
	struct uw_regs *n = &caller->regs;
	uint64_t pc, cs = 0;
	n->valid = 0;
	int have_cs = 0;
	switch (o.type) {
	case ORC_CALL:
		if (uw_read(w, sp - 8, &pc)) goto stop;
		n->r[R_SP] = sp;
		n->valid = 1ull << R_SP;
		break;
	case ORC_REGS: /* the whole pt_regs: every register of the interrupted context */
		if (uw_read(w, sp + PT_IP, &pc) || uw_read(w, sp + PT_CS, &cs)) goto stop;
		if ((cs & 3) == 3) return US_USER; /* a syscall or interrupt from user mode: the end */
		for (int r = 0; r < 16; r++) {
			if (uw_read(w, sp + (uint64_t)ptregs_off[r], &n->r[r])) goto stop;
			n->valid |= 1ull << r;
		}
		have_cs = 1;
		break;
	case ORC_REGS_PARTIAL: /* only the iret frame: the other registers are still the callee's */
		*n = c->regs;
		if (uw_read(w, sp + IRET_IP, &pc) || uw_read(w, sp + IRET_CS, &cs) ||
		    uw_read(w, sp + IRET_SP, &n->r[R_SP]))
			goto stop;
		n->valid |= 1ull << R_SP;
		have_cs = 1;
		break;
	default:
		goto bad;
	}
	switch (o.bp_reg) {
	case ORC_REG_UNDEFINED: /* unchanged -- or, after a full register frame, the saved one */
		if (o.type == ORC_REGS) break;
		if (have_bp) {
			n->r[R_BP] = obp;
			n->valid |= 1ull << R_BP;
		}
		break;
	case ORC_REG_PREV_SP:
		if (uw_read(w, sp + (uint64_t)(int64_t)o.bp_off, &nbp)) goto stop;
		n->r[R_BP] = nbp;
		n->valid |= 1ull << R_BP;
		break;
	case ORC_REG_BP:
		if (!have_bp) goto bad;
		if (uw_read(w, obp + (uint64_t)(int64_t)o.bp_off, &nbp)) goto stop;
		n->r[R_BP] = nbp;
		n->valid |= 1ull << R_BP;
		break;
	default:
		goto bad;
	}
	caller->pc = pc;
	caller->exact = o.signal || (kernel->fork_ret && pc == kernel->fork_ret);
	if (have_cs && (cs & 3) == 3) return US_USER; /* the frame interrupted user mode */
	return US_OK;
bad:
	w->stop = UW_BADRULE;
	return US_STOP;
stop:
	return US_STOP; /* uw_read set UW_UNREAD and the address */
}
