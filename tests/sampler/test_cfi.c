/* SPDX-License-Identifier: MIT */
/* test_cfi.c: the DWARF CFI unwinder through libdw on an ELF with known CFI
 * (tests/sampler/data/cfi_frames.S), over stacks built to match it. */
#include "check.h"
#include "../../sampler/files.h"
#include "../../sampler/symbols.h"
#include "../../sampler/unwind_cfi.h"
#include <stdlib.h>

#define S 0x7ff000001000ull /* the stack's base address in these tests */

static uint8_t mem[0x400];

static void put(uint64_t a, uint64_t v)
{
	for (int i = 0; i < 8; i++) mem[a - S + (uint64_t)i] = (uint8_t)(v >> (8 * i));
}

static uint64_t addr(const struct symtab *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->syms[i].name, name)) return t->syms[i].addr;
	return 0;
}

static struct unwinder cfiu;

static void setup(struct unwind_in *in, uint64_t pc, uint64_t sp, uint64_t bp)
{
	memset(in, 0, sizeof *in);
	in->arch = &uw_arch_x86_64;
	in->pc = pc;
	in->regs.r[7] = sp;
	in->regs.r[6] = bp;
	in->regs.r[3] = 0x3333; /* rbx */
	in->regs.valid = 1u << 7 | 1u << 6 | 1u << 3;
	in->klo = 0x400000;
	in->khi = 0x4fffff;
	in->span = 0x10000;
	in->max_frames = 16;
	in->nmethods = 1;
	in->methods[0] = &cfiu;
	in->nchunks = 1;
	in->chunks[0] = (struct unwind_chunk){ S, sizeof mem, mem };
}

/*
 * aarch64 (cfi_frames_a64.S): stopped in the exception entry, whose signal frame gives every
 * interrupted register; the interrupted leaf (frameless: its return address in x30) is looked up
 * at its pc as is, then GCC's sp-based rule for outer finds start.
 */
static void test_cfi_a64(void)
{
	struct symtab t;
	struct cfi_ctx c;
	uint8_t *buf;
	size_t len;
	char err[160];
	CHECK(file_read(CFI_FRAMES_A64_ELF, FILE_MAX_IMAGE, &buf, &len, err, sizeof err) == 0);
	if (!buf) {
		fprintf(stderr, "test_cfi: %s\n", err);
		return;
	}
	memset(&t, 0, sizeof t);
	CHECK(syms_add_elf(&t, "cfi_frames_a64.elf", buf, len) == 0);
	Elf *e = elf_memory((char *)buf, len);
	CHECK(e && cfi_open(&c, e, &uw_arch_aarch64) == 0);
	struct unwinder u = { UM_CFI, &c, cfi_step };
	uint64_t inner = addr(&t, "inner"), inner_body = addr(&t, "inner_body"), outer_ret = addr(&t, "outer_ret");
	uint64_t start_ret = addr(&t, "start_ret"), entry_body = addr(&t, "entry_body"), outer = addr(&t, "outer");
	CHECK(inner && inner_body && outer_ret && start_ret && entry_body && outer);
	CHECK(!addr(&t, "$x")); /* mapping symbols are not functions */

	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[16];
	memset(mem, 0, sizeof mem);
	uint64_t tf = S + 0x80;          /* the entry's frame */
	put(tf, 0x2929);                 /* interrupted x29 */
	put(tf + 8, outer_ret);          /* interrupted x30: inner was called from outer */
	put(tf + 16, S + 0x200);         /* interrupted sp */
	put(tf + 24, inner_body);        /* ELR_EL1 */
	put(S + 0x200, 0);               /* outer's record: start's x29, and the return address */
	put(S + 0x208, start_ret);
	memset(&in, 0, sizeof in);
	in.arch = &uw_arch_aarch64;
	in.pc = entry_body;
	in.regs.r[31] = tf;
	in.regs.r[29] = 0x7777;
	in.regs.valid = 1ull << 31 | 1ull << 29;
	in.klo = 0x40080000;
	in.khi = 0x400fffff;
	in.span = 0x10000;
	in.max_frames = 16;
	in.nmethods = 1;
	in.methods[0] = &u;
	in.nchunks = 1;
	in.chunks[0] = (struct unwind_chunk){ S, sizeof mem, mem };
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 4);
	CHECK(f[1] == inner_body && f[2] == outer_ret && f[3] == start_ret);
	CHECK(unwind_is_exact(out.exact, 1) && !unwind_is_exact(out.exact, 2));
	/* At an exception vector, before the entry saved anything: the interrupted pc is in
	 * ELR_EL1 (DWARF 33), outside QEMU's `g`. The walk asks for it, as for unread memory... */
	uint64_t vector_body = addr(&t, "vector_body");
	CHECK(vector_body != 0);
	in.pc = vector_body;
	in.regs.r[31] = S + 0x200 - 32;
	in.regs.r[29] = 0x2929;
	in.regs.r[30] = outer_ret;
	in.regs.valid = 1ull << 31 | 1ull << 29 | 1ull << 30;
	in.fetchable = 1ull << 33;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_UNREAD && out.need_reg == 33 && out.n == 1);
	/* ...and with it, goes on into the interrupted leaf (exact) and its callers */
	in.regs.r[33] = inner_body;
	in.regs.valid |= 1ull << 33;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 4 && f[1] == inner_body && f[2] == outer_ret && f[3] == start_ret);
	CHECK(unwind_is_exact(out.exact, 1) && out.need_reg == -1);
	/* A stub that cannot give it: the rule cannot be followed */
	in.regs.valid &= ~(1ull << 33);
	in.fetchable = 0;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_BADRULE && out.n == 1);
	in.pc = entry_body;
	in.regs.r[31] = tf;
	in.regs.r[29] = 0x7777;
	in.regs.valid = 1ull << 31 | 1ull << 29;

	const struct cfi_rule *ru = cfi_rule_at(&c, entry_body);
	CHECK(ru && ru->signal == 1 && ru->ra == 32 && ru->how[30] == CFI_AT_CFA && ru->how[31] == CFI_AT_CFA);
	/* GCC's rule in outer's body: CFA = sp + 32, x29 and x30 at its bottom */
	ru = cfi_rule_at(&c, outer_ret - 1);
	CHECK(ru && ru->usable && ru->cfa_reg == 31 && ru->cfa_off == 32 && ru->ra == 30);
	CHECK(ru->how[29] == CFI_AT_CFA && ru->arg[29] == -32 && ru->how[30] == CFI_AT_CFA && ru->arg[30] == -24);
	/* At outer's first instruction: the CIE's rule, the return address in x30 itself */
	ru = cfi_rule_at(&c, outer);
	CHECK(ru && ru->usable && ru->cfa_reg == 31 && ru->cfa_off == 0 && ru->how[30] == CFI_SAME);
	cfi_free(&c);
	elf_end(e);
	syms_free(&t);
	free(buf);
}

/* riscv64: a trap entry whose return column is 64 (kept in slot 32) -- through it into the
 * interrupted leaf (exact) and its callers; before it stored the pc (in sepc, a CSR) the rule
 * cannot be followed, which is not an outermost frame. */
static void test_cfi_rv(void)
{
	struct symtab t;
	struct cfi_ctx c;
	uint8_t *buf;
	size_t len;
	char err[160];
	CHECK(file_read(CFI_FRAMES_RV_ELF, FILE_MAX_IMAGE, &buf, &len, err, sizeof err) == 0);
	if (!buf) {
		fprintf(stderr, "test_cfi: %s\n", err);
		return;
	}
	memset(&t, 0, sizeof t);
	CHECK(syms_add_elf(&t, "cfi_frames_rv.elf", buf, len) == 0);
	Elf *e = elf_memory((char *)buf, len);
	CHECK(e && cfi_open(&c, e, &uw_arch_riscv64) == 0);
	struct unwinder u = { UM_CFI, &c, cfi_step };
	uint64_t inner_body = addr(&t, "inner_body"), outer_ret = addr(&t, "outer_ret");
	uint64_t start_ret = addr(&t, "start_ret"), entry_body = addr(&t, "entry_body");
	uint64_t entry_early = addr(&t, "entry_early");
	CHECK(inner_body && outer_ret && start_ret && entry_body && entry_early);

	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[16];
	memset(mem, 0, sizeof mem);
	uint64_t tf = S + 0x80;          /* the trap frame: interrupted ra, s0, pc */
	put(tf, outer_ret);              /* inner was called from outer */
	put(tf + 8, S + 0x200);          /* interrupted s0: outer's frame top */
	put(tf + 16, inner_body);        /* sepc */
	/* the interrupted sp is the CFA, tf + 32; outer's frame spans [tf + 32, + 32) */
	put(tf + 32 + 24, start_ret);    /* outer's saved ra */
	put(tf + 32 + 16, 0);            /* ...and start's s0 */
	memset(&in, 0, sizeof in);
	in.arch = &uw_arch_riscv64;
	in.pc = entry_body;
	in.regs.r[2] = tf;
	in.regs.r[8] = 0x8888;
	in.regs.valid = 1ull << 2 | 1ull << 8;
	in.klo = 0x80200000;
	in.khi = 0x802fffff;
	in.span = 0x10000;
	in.max_frames = 16;
	in.nmethods = 1;
	in.methods[0] = &u;
	in.nchunks = 1;
	in.chunks[0] = (struct unwind_chunk){ S, sizeof mem, mem };
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 4);
	CHECK(f[1] == inner_body && f[2] == outer_ret && f[3] == start_ret);
	CHECK(unwind_is_exact(out.exact, 1) && !unwind_is_exact(out.exact, 2));
	const struct cfi_rule *ru = cfi_rule_at(&c, entry_body);
	CHECK(ru && ru->usable && ru->signal == 1 && ru->ra == 32 && ru->how[32] == CFI_AT_CFA && ru->arg[32] == -16);
	ru = cfi_rule_at(&c, outer_ret - 1); /* GCC's rule in outer's body */
	CHECK(ru && ru->usable && ru->cfa_reg == 2 && ru->cfa_off == 32 && ru->ra == 1 && ru->how[1] == CFI_AT_CFA &&
	      ru->arg[1] == -8);
	in.pc = entry_early; /* the pc still in sepc (DWARF 4096 + 0x141, slot 33), outside `g` */
	in.regs.r[2] = tf;
	in.regs.r[1] = outer_ret;       /* ra and s0 still the interrupted ones ("same value") */
	in.regs.r[8] = S + 0x200;
	in.regs.valid = 1ull << 2 | 1ull << 1 | 1ull << 8;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_BADRULE && out.n == 1); /* a stub that cannot give it */
	in.fetchable = 1ull << 33;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_UNREAD && out.need_reg == 33 && out.n == 1); /* ask for it, as for memory */
	in.regs.r[33] = inner_body;
	in.regs.valid |= 1ull << 33;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 4 && f[1] == inner_body && f[2] == outer_ret && f[3] == start_ret);
	CHECK(unwind_is_exact(out.exact, 1));
	cfi_free(&c);
	elf_end(e);
	syms_free(&t);
	free(buf);
}

void test_cfi(void)
{
	test_cfi_a64();
	test_cfi_rv();
	struct symtab t;
	struct cfi_ctx c;
	uint8_t *buf;
	size_t len;
	char err[160];
	CHECK(file_read(CFI_FRAMES_ELF, FILE_MAX_IMAGE, &buf, &len, err, sizeof err) == 0);
	if (!buf) {
		fprintf(stderr, "test_cfi: %s\n", err);
		return;
	}
	memset(&t, 0, sizeof t);
	elf_version(EV_CURRENT);
	CHECK(syms_add_elf(&t, "cfi_frames.elf", buf, len) == 0);
	Elf *e = elf_memory((char *)buf, len);
	CHECK(e && cfi_open(&c, e, &uw_arch_x86_64) == 0);
	cfiu = (struct unwinder){ UM_CFI, &c, cfi_step };
	uint64_t inner = addr(&t, "inner"), inner_body = addr(&t, "inner_body"), outer_ret = addr(&t, "outer_ret");
	uint64_t start_ret = addr(&t, "start_ret"), trapper = addr(&t, "trapper");
	CHECK(inner && inner_body && outer_ret && start_ret && trapper);

	/* inner's body (frame pointer set up) <- outer (rbx saved, 32 bytes of room) <- start,
	 * whose return address is undefined: the end. */
	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[16];
	memset(mem, 0, sizeof mem);
	put(S + 0x100, 0x5555);          /* inner's saved rbp */
	put(S + 0x108, outer_ret);       /* inner's return address */
	put(S + 0x110 + 32, 0xb0b0);     /* outer's saved rbx (outer's CFA is S + 0x140) */
	put(S + 0x110 + 40, start_ret);  /* outer's return address (CFA - 8) */
	setup(&in, inner_body, S + 0x100, S + 0x100);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 3);
	CHECK(f[0] == inner_body && f[1] == outer_ret && f[2] == start_ret);
	CHECK(out.by_method[UM_CFI] == 2 && out.stop_method == UM_CFI);
	CHECK(out.nextents == 1 && out.ext[0].hi == S + 0x140);
	/* Each pc's rule came from libdw once; the same walk again asks libdw nothing. */
	uint64_t compiled = c.compiled, hits = c.hits;
	CHECK(compiled == 3);
	unwind_walk(&in, f, &out);
	CHECK(out.n == 3 && c.compiled == compiled && c.hits == hits + 3);
	/* The rule at outer's return address restores rbx from its slot. */
	const struct cfi_rule *ru = cfi_rule_at(&c, outer_ret - 1);
	CHECK(ru && ru->found && ru->usable && ru->cfa_reg == 7 && ru->cfa_off == 48);
	CHECK(ru->how[3] == CFI_AT_CFA && ru->arg[3] == -16 && ru->how[16] == CFI_AT_CFA && ru->arg[16] == -8);

	/* An interrupt (signal frame) at inner + 1, after its push but before rbp is set: the
	 * interrupted pc must be looked up as is (CFA = rsp + 16 there); as a return address
	 * (pc - 1, CFA = rsp + 8) the walk would read the saved rbp as a return address. */
	memset(mem, 0, sizeof mem);
	uint64_t tf = S + 0x40;          /* the hardware frame */
	put(tf, inner + 1);              /* rip */
	put(tf + 8, 0x10);               /* cs */
	put(tf + 24, S + 0x100);         /* rsp: inner's, after its push */
	put(S + 0x100, 0x5555);
	put(S + 0x108, outer_ret);
	put(S + 0x110 + 32, 0xb0b0);
	put(S + 0x110 + 40, start_ret);
	setup(&in, trapper, tf, 0x7777);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 4);
	CHECK(f[1] == inner + 1 && f[2] == outer_ret && f[3] == start_ret);
	CHECK(unwind_is_exact(out.exact, 1) && !unwind_is_exact(out.exact, 2));
	CHECK(cfi_rule_at(&c, trapper)->signal == 1);

	/* No FDE covers the pc: no information (another method may know it). */
	setup(&in, 0x401f00, S + 0x100, 0);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_NOINFO && out.n == 1);
	/* The return address's slot not read yet: the walk asks for it. */
	setup(&in, inner_body, S + 0x100, S + 0x100);
	in.chunks[0].len = 0x108;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_UNREAD && out.need == S + 0x108);

	cfi_free(&c);
	elf_end(e);
	syms_free(&t);
	free(buf);
}
