/* SPDX-License-Identifier: MIT */
/* test_unwind.c: the walk -- the frame-pointer method and the per-frame dispatcher -- on
 * synthetic stack memory. */
#include "check.h"
#include "../../sampler/unwind.h"

#define K(x) (0xffffffff80000000ull + (x)) /* kernel text addresses */
#define STACK 0xffff800000100000ull        /* synthetic stack base address */

static uint8_t mem[4096];

static void put64(uint64_t addr, uint64_t v)
{
	for (int i = 0; i < 8; i++) mem[addr - STACK + i] = (uint8_t)(v >> (8 * i));
}

static enum unwind_pc kind_now = PC_BODY; /* what the fake "text" says about every exact pc */
static int adj_now;                       /* ...and the caller's sp above sp (aarch64) */
static uint64_t kind_pc;                  /* if set, only this pc has kind_now (others PC_BODY) */
static enum unwind_pc kind_of(const void *arg, uint64_t pc, int *adj)
{
	(void)arg;
	*adj = adj_now;
	return !kind_pc || pc == kind_pc ? kind_now : PC_BODY;
}
static struct fp_ctx fpc = { .pc_kind = kind_of, .span = 16384 };
static struct unwinder fpu = { UM_FP, &fpc, fp_step };

static void set_reg(struct unwind_in *in, int r, uint64_t v)
{
	in->regs.r[r] = v;
	in->regs.valid |= 1ull << r;
}

static void setup_arch(struct unwind_in *in, const struct uw_arch *a, uint64_t pc, uint64_t sp, uint64_t fp)
{
	memset(in, 0, sizeof *in);
	in->arch = a;
	in->pc = pc;
	set_reg(in, a->sp, sp);
	set_reg(in, a->fp, fp);
	in->klo = 0xffffffff80000000ull;
	in->khi = ~0ull;
	in->span = 16384;
	in->max_frames = 64;
	in->nmethods = 1;
	in->methods[0] = &fpu;
	in->nchunks = 1;
	in->chunks[0] = (struct unwind_chunk){ STACK, sizeof mem, mem };
	kind_now = PC_BODY;
	adj_now = 0;
	kind_pc = 0;
}

static void setup(struct unwind_in *in, uint64_t pc, uint64_t sp, uint64_t fp)
{
	setup_arch(in, &uw_arch_x86_64, pc, sp, fp);
}

/* A normal three-deep chain ending in a zero frame pointer. */
static void build_chain(void)
{
	memset(mem, 0, sizeof mem);
	put64(STACK + 0x100, STACK + 0x140); put64(STACK + 0x108, K(0x1044)); /* leaf's frame */
	put64(STACK + 0x140, STACK + 0x200); put64(STACK + 0x148, K(0x2088)); /* caller's frame */
	put64(STACK + 0x200, 0);             put64(STACK + 0x208, K(0x30cc)); /* root's frame */
}

static void test_normal(void)
{
	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[64];
	build_chain();
	setup(&in, K(0x1a), STACK + 0xf0, STACK + 0x100);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END);
	CHECK(out.n == 4);
	CHECK(f[0] == K(0x1a) && f[1] == K(0x1044) && f[2] == K(0x2088) && f[3] == K(0x30cc));

	in.max_frames = 2; /* bounded by --max-frames */
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_MAXFRAMES && out.n == 2);
}

static void test_loop(void)
{
	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[64];
	build_chain();
	put64(STACK + 0x140, STACK + 0x100); /* caller's saved fp points back down: a loop */
	setup(&in, K(0x1a), STACK + 0xf0, STACK + 0x100);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_LOOP);
	CHECK(out.n == 3); /* the return address read from the looping record is still valid */
	put64(STACK + 0x140, STACK + 0x140); /* pointing at itself */
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_LOOP);
}

static void test_misaligned(void)
{
	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[64];
	build_chain();
	put64(STACK + 0x140, STACK + 0x203);
	setup(&in, K(0x1a), STACK + 0xf0, STACK + 0x100);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_ALIGN && out.n == 3);
}

static void test_out_of_range(void)
{
	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[64];
	build_chain();
	put64(STACK + 0x148, 0x401000); /* a user-space return address ends the kernel chain */
	setup(&in, K(0x1a), STACK + 0xf0, STACK + 0x100);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_RANGE && out.n == 2);

	setup(&in, 0x401000, STACK + 0xf0, STACK + 0x100); /* pc itself outside: nothing walked */
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_RANGE && out.n == 1 && f[0] == 0x401000);

	build_chain();
	put64(STACK + 0x140, STACK + 0x100000); /* fp far above the stack span */
	setup(&in, K(0x1a), STACK + 0xf0, STACK + 0x100);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_SPAN && out.n == 3);

	setup(&in, K(0x1a), STACK + 0x110, STACK + 0x100); /* fp below sp: points back down */
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_LOOP && out.n == 1);
}

static void test_chunks(void)
{
	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[64];
	build_chain();
	/* Only the first 0x180 bytes were read: the root's frame at 0x200 is outside. */
	setup(&in, K(0x1a), STACK + 0xf0, STACK + 0x100);
	in.chunks[0].len = 0x180;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_UNREAD && out.n == 3 && out.need == STACK + 0x200);

	/* A second chunk covering the rest lets the walk finish; a record straddling the two
	 * chunks (0x200..0x210 split at 0x204) is read bytewise across them. */
	in.chunks[0].len = 0x204;
	in.chunks[1] = (struct unwind_chunk){ STACK + 0x204, 0x100, mem + 0x204 };
	in.nchunks = 2;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 4 && f[3] == K(0x30cc));
}

static void test_prologue(void)
{
	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[64];
	build_chain();
	/* Interrupted at the first instruction of a function called from the "leaf" frame's
	 * function: its return address is at [sp], and fp is still the caller's frame. */
	put64(STACK + 0xe0, K(0x1055));
	setup(&in, K(0x5000), STACK + 0xe0, STACK + 0x100);
	kind_now = PC_AT_ENTRY;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 5);
	CHECK(f[0] == K(0x5000) && f[1] == K(0x1055) && f[2] == K(0x1044));

	/* After `push rbp`: the saved rbp is at [sp], the return address at [sp+8]. */
	put64(STACK + 0xd8, STACK + 0x100);
	setup(&in, K(0x5001), STACK + 0xd8, STACK + 0x100);
	kind_now = PC_AFTER_PUSH;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 5 && f[1] == K(0x1055));

	/* Without the pc kind the caller would be lost (walk starts at the caller's frame). */
	kind_now = PC_BODY;
	unwind_walk(&in, f, &out);
	CHECK(out.n == 4 && f[1] == K(0x1044));

	/* Link-register architectures take the return address from lr at entry. */
	setup_arch(&in, &uw_arch_aarch64, K(0x5000), STACK + 0xe0, STACK + 0x100);
	kind_now = PC_AT_ENTRY;
	set_reg(&in, 30, K(0x1077));
	unwind_walk(&in, f, &out);
	CHECK(out.n == 5 && f[1] == K(0x1077));

	/* The return-address slot itself not read: ask for it. */
	setup(&in, K(0x5000), STACK + 0x2000, STACK + 0x100);
	kind_now = PC_AT_ENTRY;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_UNREAD && out.need == STACK + 0x2000);
}

static void test_riscv_layout(void)
{
	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[64];
	memset(mem, 0, sizeof mem);
	/* riscv64: fp points just above the record: [fp-16] = saved fp, [fp-8] = ra. */
	put64(STACK + 0x100 - 16, STACK + 0x200); put64(STACK + 0x100 - 8, K(0x10));
	put64(STACK + 0x200 - 16, 0);             put64(STACK + 0x200 - 8, K(0x20));
	setup_arch(&in, &uw_arch_riscv64, K(0x1), STACK + 0x80, STACK + 0x100);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 3 && f[1] == K(0x10) && f[2] == K(0x20));
}

/* aarch64: "text" for after_call -- return addresses K(0x1044), K(0x2088) follow a call, K(0x7100)
 * (an exception's ELR) does not; every other address is unknown. */
static int after_call_of(const void *arg, uint64_t ra)
{
	(void)arg;
	return ra == K(0x7100) ? 0 : ra == K(0x1044) || ra == K(0x2088) ? 1 : -1;
}

/* A fake CFI method: knows only K(0x1044)'s function, whose CFA is sp + 0x40 (as GCC describes
 * aarch64 functions), the return address and x29 saved at the CFA's bottom. */
static enum uw_step sp_rule_step(void *ctx, struct uw_walk *w, const struct uw_frame *f, struct uw_frame *caller)
{
	(void)ctx;
	if ((f->exact ? f->pc : f->pc - 1) >> 12 != K(0x1044) >> 12) return US_NOINFO;
	if (f->sp_low) return US_NOINFO; /* as cfi_step: an sp-based rule needs the real sp */
	uint64_t cfa = f->regs.r[31] + 0x40, ra, fp;
	if (uw_read(w, cfa - 0x40, &fp) || uw_read(w, cfa - 0x38, &ra)) return US_STOP;
	caller->regs.valid = 1ull << 31 | 1ull << 29;
	caller->regs.r[31] = cfa;
	caller->regs.r[29] = fp;
	caller->pc = ra;
	caller->exact = 0;
	return US_OK;
}

static void test_aarch64(void)
{
	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[64];
	struct fp_ctx a64 = { .pc_kind = kind_of, .span = 16384, .after_call = after_call_of };
	struct unwinder a64u = { UM_FP, &a64, fp_step };

	/* Between `sub sp, sp, #0x40; stp x29, x30, [sp]` and `mov x29, sp`: the return address in
	 * x30, x29 the caller's, the caller's sp 0x40 above -- where an sp-based rule (the fake CFI
	 * method, for K(0x1044)'s function) finds the caller's record. */
	struct unwinder cfi_like = { UM_CFI, NULL, sp_rule_step };
	build_chain();
	setup_arch(&in, &uw_arch_aarch64, K(0x5008), STACK + 0xc0, STACK + 0x100);
	in.nmethods = 2;
	in.methods[0] = &cfi_like;
	in.methods[1] = &a64u;
	set_reg(&in, 30, K(0x1077));
	kind_now = PC_AT_ENTRY;
	adj_now = 0x40;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 5 && f[1] == K(0x1077) && f[2] == K(0x1044) && f[3] == K(0x2088));
	CHECK(out.by_method[UM_CFI] == 2 && out.by_method[UM_FP] == 2);
	adj_now = 0; /* the caller's sp taken as the callee's: the rule reads below the record */
	unwind_walk(&in, f, &out);
	CHECK(out.n == 2 && out.stop == UW_END);

	/* An exception entry's record {interrupted x29, ELR}: its "return address" follows no call,
	 * so the interrupted pc is exact (named by itself, not pc - 1); the records after it are
	 * ordinary ones again. */
	build_chain();
	put64(STACK + 0x80, STACK + 0x100); put64(STACK + 0x88, K(0x7100)); /* the entry's record */
	setup_arch(&in, &uw_arch_aarch64, K(0x6010), STACK + 0x70, STACK + 0x80);
	in.methods[0] = &a64u;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 5 && f[1] == K(0x7100) && f[2] == K(0x1044));
	CHECK(unwind_is_exact(out.exact, 1) && !unwind_is_exact(out.exact, 2) && !unwind_is_exact(out.exact, 3));

	/* Interrupted in a prologue: the record gave x29 and the pc, not x30 -- the walk stops,
	 * counted, rather than skip the caller x30 held. */
	kind_now = PC_AT_ENTRY;
	kind_pc = K(0x7100);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_BADRULE && out.n == 2 && f[1] == K(0x7100));

	/* A record's caller has only a lower bound for sp (the record sits at the bottom of its
	 * frame): the sp-based rule passes, the frame pointer goes on... */
	build_chain();
	setup_arch(&in, &uw_arch_aarch64, K(0x6010), STACK + 0xf0, STACK + 0x100);
	in.nmethods = 2;
	in.methods[0] = &cfi_like;
	in.methods[1] = &a64u;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 4 && f[1] == K(0x1044) && f[2] == K(0x2088));
	CHECK(out.by_method[UM_FP] == 3 && out.by_method[UM_CFI] == 0);
	/* ...while from the real sp of K(0x1044)'s function the rule applies, frame after frame. */
	setup_arch(&in, &uw_arch_aarch64, K(0x1040), STACK + 0x100, STACK + 0x100);
	in.nmethods = 2;
	in.methods[0] = &cfi_like;
	in.methods[1] = &a64u;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 4 && f[1] == K(0x1044) && f[2] == K(0x2088) && f[3] == K(0x30cc));
	CHECK(out.by_method[UM_CFI] == 2 && out.by_method[UM_FP] == 1);
}

static int vector_of(const void *arg, uint64_t pc)
{
	(void)arg;
	return pc == K(0x800) ? FP_VEC_KERNEL : pc == K(0xc00) ? FP_VEC_USER : 0;
}

/* arm64 Linux's rules on synthetic memory: signed return addresses, a stop on a vector, and an
 * exception record inside its pt_regs. */
static void test_aarch64_linux(void)
{
	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[64];
	struct fp_ctx a64 = { kind_of, NULL, 16384, after_call_of, vector_of, 33, 0, 0, 0, 1 };
	struct unwinder a64u = { UM_FP, &a64, fp_step };
	const uint64_t mask = 0xff7f800000000000ull; /* arch_pac_mask of a 48-bit upper-half text */

	/* Return addresses signed by paciasp (0xa5 and 0x12 in the code's bits): out of range
	 * unless stripped; stripped, the chain is the plain one. */
	build_chain();
	put64(STACK + 0x108, (K(0x1044) & ~mask) | 0xa5ull << 56 | 0x12ull << 48);
	put64(STACK + 0x148, (K(0x2088) & ~mask) | 0x3cull << 56 | 0x7full << 48);
	setup_arch(&in, &uw_arch_aarch64, K(0x6010), STACK + 0xf0, STACK + 0x100);
	in.methods[0] = &a64u;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_RANGE && out.n == 1);
	in.pac_mask = mask;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 4 && f[1] == K(0x1044) && f[2] == K(0x2088) && f[3] == K(0x30cc));
	/* ...x30 too, in a frameless leaf */
	set_reg(&in, 30, (K(0x1044) & ~mask) | 0x55ull << 56);
	kind_now = PC_AT_ENTRY;
	kind_pc = K(0x6010);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 5 && f[1] == K(0x1044) && f[2] == K(0x1044));

	/* A stop on a vector from EL1: the caller is ELR_EL1's pc with the same registers; until
	 * ELR_EL1 is read, the walk asks for it. From EL0: user mode. */
	build_chain();
	setup_arch(&in, &uw_arch_aarch64, K(0x800), STACK + 0xf0, STACK + 0x100);
	in.methods[0] = &a64u;
	in.fetchable = 1ull << 33;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_UNREAD && out.need_reg == 33 && out.n == 1);
	set_reg(&in, 33, K(0x5010));
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 5 && f[1] == K(0x5010) && f[2] == K(0x1044));
	CHECK(unwind_is_exact(out.exact, 1) && !unwind_is_exact(out.exact, 2));
	in.pc = K(0xc00);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_USER && out.n == 1);

	/* An exception record inside pt_regs: the interrupted pc is in a prologue (return address
	 * still in x30): x30 and sp come from the register frame, and the chain goes on. */
	build_chain();
	put64(STACK + 0x80, STACK + 0x100); put64(STACK + 0x88, K(0x7100)); /* the entry's record */
	put64(STACK + 0x40, K(0x1044));                                      /* pt_regs.regs[30] */
	put64(STACK + 0x48, STACK + 0xf0);                                   /* pt_regs.sp */
	setup_arch(&in, &uw_arch_aarch64, K(0x6010), STACK + 0x70, STACK + 0x80);
	in.methods[0] = &a64u;
	kind_now = PC_AT_ENTRY;
	kind_pc = K(0x7100);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_BADRULE && out.n == 2); /* without the frame's layout: x30 unknown */
	a64.pt_valid = 1;
	a64.pt_lr = -0x40;
	a64.pt_sp = -0x38;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 6 && f[1] == K(0x7100) && f[2] == K(0x1044) && f[3] == K(0x1044) &&
	      f[4] == K(0x2088));
}

void test_unwind(void)
{
	test_aarch64();
	test_aarch64_linux();
	test_normal();
	test_loop();
	test_misaligned();
	test_out_of_range();
	test_chunks();
	test_prologue();
	test_riscv_layout();
}
