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
static enum unwind_pc kind_of(const void *arg, uint64_t pc)
{
	(void)arg;
	(void)pc;
	return kind_now;
}
static struct fp_ctx fpc = { kind_of, NULL, 16384 };
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

void test_unwind(void)
{
	test_normal();
	test_loop();
	test_misaligned();
	test_out_of_range();
	test_chunks();
	test_prologue();
	test_riscv_layout();
}
