/* SPDX-License-Identifier: MIT */
/* unwind_cfi.c: the DWARF CFI unwinder -- .eh_frame/.debug_frame through libdw, rules cached per pc. */
#include "unwind_cfi.h"
#include "err.h"
#include <dwarf.h>
#include <stdlib.h>

int cfi_open(struct cfi_ctx *c, Elf *elf, const struct uw_arch *a)
{
	memset(c, 0, sizeof *c);
	c->elf = elf;
	c->nregs = a->nregs;
	c->nalias = a->nalias;
	c->alias = a->alias;
	c->eh = dwarf_getcfi_elf(elf);
	c->dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL); /* NULL when the image has no DWARF */
	if (c->dw) c->dbg = dwarf_getcfi(c->dw);
	if (!c->eh && !c->dbg) {
		cfi_free(c);
		ERR_SET(c, ERR_FORMAT, "no .eh_frame or .debug_frame");
		return -1;
	}
	return 0;
}

void cfi_free(struct cfi_ctx *c)
{
	if (c->eh) dwarf_cfi_end(c->eh);
	if (c->dw) dwarf_end(c->dw); /* also ends dbg */
	free(c->keys);
	free(c->rules);
	c->eh = c->dbg = NULL;
	c->dw = NULL;
	c->keys = NULL;
	c->rules = NULL;
	c->n = c->cap = 0;
}

/*
 * libdw describes each register's rule as a short DWARF expression (libdw.h,
 * dwarf_frame_register): none with a null pointer = same value; none with ops_mem = undefined;
 * DW_OP_call_frame_cfa [DW_OP_plus_uconst N] = saved at CFA+N; ... DW_OP_stack_value = the
 * value CFA+N itself; DW_OP_regx R = in register R. Anything longer is a general expression,
 * which we do not evaluate: the register becomes unknown.
 */
/* The slot a DWARF register number is kept in: itself, an alias's, or -1 (none). */
static int slot_of(const struct cfi_ctx *c, Dwarf_Word dwarf)
{
	for (int i = 0; i < c->nalias; i++)
		if ((Dwarf_Word)c->alias[i].dwarf == dwarf) return c->alias[i].slot;
	return dwarf < (Dwarf_Word)c->nregs ? (int)dwarf : -1;
}

/* ...and the DWARF number a slot stands for. */
static int col_of(const struct cfi_ctx *c, int slot)
{
	for (int i = 0; i < c->nalias; i++)
		if (c->alias[i].slot == slot) return c->alias[i].dwarf;
	return slot;
}

static int compile_reg(Dwarf_Frame *fr, const struct cfi_ctx *c, int r, struct cfi_rule *ru)
{
	int col = col_of(c, r);
	Dwarf_Op mem[3], *ops;
	size_t nops;
	ru->how[r] = CFI_UNDEF;
	if (dwarf_frame_register(fr, col, mem, &ops, &nops) != 0) return 0;
	if (nops == 0) {
		ru->how[r] = ops ? CFI_UNDEF : CFI_SAME;
		return 0;
	}
	int val = ops[nops - 1].atom == DW_OP_stack_value;
	size_t k = nops - (size_t)val;
	if (ops[0].atom == DW_OP_call_frame_cfa && (k == 1 || (k == 2 && ops[1].atom == DW_OP_plus_uconst))) {
		int64_t off = k == 2 ? (int64_t)ops[1].number : 0; /* negative offsets arrive wrapped */
		if (off < INT32_MIN || off > INT32_MAX) return 0;
		ru->how[r] = val ? CFI_VAL_CFA : CFI_AT_CFA;
		ru->arg[r] = (int32_t)off;
	} else if (ops[0].atom == DW_OP_regx && nops == 1) {
		int src = slot_of(c, ops[0].number);
		if (src < 0) return 1; /* in a register we do not hold: not "undefined" */
		ru->how[r] = CFI_REG;
		ru->arg[r] = (int32_t)src;
	}
	return 0;
}

static void compile(struct cfi_ctx *c, uint64_t pc, struct cfi_rule *ru)
{
	Dwarf_Frame *fr = NULL;
	memset(ru, 0, sizeof *ru);
	if ((!c->eh || dwarf_cfi_addrframe(c->eh, pc, &fr) != 0) &&
	    (!c->dbg || dwarf_cfi_addrframe(c->dbg, pc, &fr) != 0))
		return; /* no FDE covers pc */
	ru->found = 1;
	c->compiled++;
	bool signal = false;
	int ra = dwarf_frame_info(fr, NULL, NULL, &signal);
	if (ra >= 0) ra = slot_of(c, (Dwarf_Word)ra); /* riscv64's 64 (a trap frame's) to its slot */
	Dwarf_Op *ops;
	size_t nops;
	if (ra >= 0 && ra < c->nregs && dwarf_frame_cfa(fr, &ops, &nops) == 0 && nops == 1) {
		int atom = ops[0].atom;
		if (atom == DW_OP_bregx && ops[0].number < (Dwarf_Word)c->nregs) {
			ru->cfa_reg = (uint8_t)ops[0].number;
			ru->cfa_off = (int64_t)ops[0].number2;
			ru->usable = 1;
		} else if (atom >= DW_OP_breg0 && atom <= DW_OP_breg31 && atom - DW_OP_breg0 < c->nregs) {
			ru->cfa_reg = (uint8_t)(atom - DW_OP_breg0);
			ru->cfa_off = (int64_t)ops[0].number;
			ru->usable = 1;
		}
	}
	ru->ra = (uint8_t)(ra >= 0 && ra < UW_NREGS ? ra : 0);
	ru->signal = signal;
	for (int r = 0; r < c->nregs; r++)
		if (compile_reg(fr, c, r, ru) && r == ru->ra)
			ru->usable = 0; /* the return address is in a register we cannot read */
	if (ru->usable && ru->how[ru->ra] == CFI_SAME && ra == 16 && c->nregs == 17)
		ru->usable = 0; /* x86_64's return-address column is not a register: "same" says nothing */
	free(fr);
}

static uint64_t mix(uint64_t k)
{
	k ^= k >> 33;
	k *= 0xff51afd7ed558ccdull;
	return k ^ (k >> 33);
}

static int grow(struct cfi_ctx *c)
{
	size_t ncap = c->cap ? c->cap * 2 : 4096;
	uint64_t *nk = calloc(ncap, sizeof *nk);
	struct cfi_rule *nr = malloc(ncap * sizeof *nr);
	if (!nk || !nr) {
		free(nk);
		free(nr);
		return -1;
	}
	for (size_t i = 0; i < c->cap; i++) {
		if (!c->keys[i]) continue;
		size_t j = mix(c->keys[i]) & (ncap - 1);
		while (nk[j]) j = (j + 1) & (ncap - 1);
		nk[j] = c->keys[i];
		nr[j] = c->rules[i];
	}
	free(c->keys);
	free(c->rules);
	c->keys = nk;
	c->rules = nr;
	c->cap = ncap;
	return 0;
}

const struct cfi_rule *cfi_rule_at(struct cfi_ctx *c, uint64_t pc)
{
	if ((c->n + 1) * 2 > c->cap && grow(c) < 0) return NULL;
	uint64_t key = pc + 1;
	size_t j = mix(key) & (c->cap - 1);
	for (; c->keys[j]; j = (j + 1) & (c->cap - 1))
		if (c->keys[j] == key) {
			c->hits++;
			return &c->rules[j];
		}
	compile(c, pc, &c->rules[j]);
	c->keys[j] = key;
	c->n++;
	return &c->rules[j];
}

/* The caller's value of register r under rule ru, given the CFA; 1 known, 0 unknown, -1 the
 * stack word is not read yet (the walk set up for US_STOP). */
static int value(struct uw_walk *w, const struct uw_frame *f, const struct cfi_rule *ru, int r, uint64_t cfa,
		 uint64_t *v)
{
	switch (ru->how[r]) {
	case CFI_SAME:
		*v = f->regs.r[r];
		return (int)((f->regs.valid >> r) & 1);
	case CFI_AT_CFA:
		return uw_read(w, cfa + (uint64_t)(int64_t)ru->arg[r], v) ? -1 : 1;
	case CFI_VAL_CFA:
		*v = cfa + (uint64_t)(int64_t)ru->arg[r];
		return 1;
	case CFI_REG:
		*v = f->regs.r[ru->arg[r]];
		return (int)((f->regs.valid >> ru->arg[r]) & 1);
	}
	return 0;
}

/*
 * One step: CFA from the rule's register and offset, each register of the caller by its rule
 * (the stack pointer is the CFA unless the rule says otherwise -- an interrupt frame restores
 * it from the hardware frame), the caller's pc from the return-address column. A frame whose
 * return address is undefined is the outermost one.
 */
enum uw_step cfi_step(void *ctx, struct uw_walk *w, const struct uw_frame *f, struct uw_frame *caller)
{
	struct cfi_ctx *x = ctx;
	const struct uw_arch *a = w->arch;
	uint64_t at = f->exact ? f->pc : f->pc - 1;
	struct cfi_ctx *o = x->more ? x->more(x->more_arg, at) : NULL;
	if (o) x = o;
	else if (!x->eh && !x->dbg) return US_NOINFO; /* only modules' tables (a distro kernel's) */
	const struct cfi_rule *ru = cfi_rule_at(x, at - x->bias);
	if (!ru || !ru->found) return US_NOINFO;
	if (f->sp_low && ru->cfa_reg == a->sp) return US_NOINFO; /* after an aarch64 frame-record step */
	if (!ru->usable || !((f->regs.valid >> ru->cfa_reg) & 1)) goto bad;
	if (ru->how[ru->ra] == CFI_UNDEF) return US_END;
	uint64_t cfa = f->regs.r[ru->cfa_reg] + (uint64_t)ru->cfa_off, v;
	struct uw_regs *n = &caller->regs;
	n->valid = 0;
	for (int r = 0; r < x->nregs; r++) {
		if (ru->how[r] == CFI_UNDEF) continue;
		int k = value(w, f, ru, r, cfa, &v);
		if (k < 0) return US_STOP;
		if (k) {
			n->r[r] = v;
			n->valid |= 1ull << r;
		}
	}
	if (!((n->valid >> ru->ra) & 1)) {
		/* An exception entry before it saved the interrupted pc: in ELR_EL1 (`.cfi_register
		 * 32, 33`), which QEMU gives only with `p`: ask for it, as for unread memory. */
		int src = ru->arg[ru->ra];
		if (ru->how[ru->ra] != CFI_REG || !((w->fetchable >> src) & 1)) goto bad;
		w->stop = UW_UNREAD;
		w->need_reg = src;
		return US_STOP;
	}
	if (ru->how[a->sp] == CFI_UNDEF || ru->how[a->sp] == CFI_SAME) { /* by definition */
		n->r[a->sp] = cfa;
		n->valid |= 1ull << a->sp;
	}
	caller->pc = n->r[ru->ra];
	caller->exact = ru->signal;
	return US_OK;
bad:
	w->stop = UW_BADRULE;
	return US_STOP;
}
