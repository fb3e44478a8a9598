/* SPDX-License-Identifier: MIT */
/* test_orc.c: the ORC unwinder -- table layouts and versions, lookup, and each kind of step
 * (call, full and partial register frames, indirect stack pointers, ends) on synthetic stacks. */
#include "check.h"
#include "../../sampler/unwind_orc.h"
#include <stdlib.h>

#define T(x) (0xffffffff81000000ull + (x)) /* kernel text */
#define STK 0xffffc90000010000ull          /* a stack */
#define STK2 0xffffc90000100000ull         /* another (an IRQ stack) */
#define USER_CS 0x33
#define KERNEL_CS 0x10

static uint8_t mem[0x1000], mem2[0x1000];

static void put(uint64_t a, uint64_t v)
{
	uint8_t *m = a >= STK2 ? mem2 + (a - STK2) : mem + (a - STK);
	for (int i = 0; i < 8; i++) m[i] = (uint8_t)(v >> (8 * i));
}

/* A raw v1 entry (Linux <= 6.2): sp_reg/bp_reg nibbles, type bits 0-1, end bit 2. */
static void ent_v1(uint8_t *e, int sp_reg, int sp_off, int bp_reg, int bp_off, int type, int end)
{
	e[0] = (uint8_t)sp_off; e[1] = (uint8_t)(sp_off >> 8);
	e[2] = (uint8_t)bp_off; e[3] = (uint8_t)(bp_off >> 8);
	e[4] = (uint8_t)(sp_reg | bp_reg << 4);
	e[5] = (uint8_t)(type | end << 2);
}

/* Build a table at ipaddr from absolute ips (stored as s32 offsets from each slot). */
static void table(struct orc_table *t, const uint64_t *ips, const uint8_t (*ents)[6], size_t n,
		  const uint8_t *hdr, int expect)
{
	uint64_t ipaddr = T(0x800000);
	uint8_t *ipb = malloc(4 * n), *eb = malloc(6 * n);
	for (size_t i = 0; i < n; i++) {
		int32_t rel = (int32_t)(ips[i] - (ipaddr + 4 * i));
		for (int k = 0; k < 4; k++) ipb[4 * i + (size_t)k] = (uint8_t)((uint32_t)rel >> (8 * k));
		memcpy(eb + 6 * i, ents[i], 6);
	}
	int rc = orc_load(t, ipb, 4 * n, ipaddr, eb, 6 * n, hdr, hdr ? 20 : 0, T(0), T(0x10000));
	CHECK(rc == expect);
	if (rc != expect) fprintf(stderr, "orc_load: %s\n", t->errstr);
	free(ipb);
	free(eb);
}

/* The kernel's functions in this test:
 *   0x1000 leaf:    sp+8 (call: return address at sp), bp unchanged
 *   0x2000 framed:  bp+16 (frame pointer set up), bp saved at prev_sp-16
 *   0x3000 entry:   regs at sp (a full pt_regs)
 *   0x4000 iret:    regs-partial at sp+8 (a hardware iret frame above one pushed word)
 *   0x5000 onirq:   sp indirect: the previous stack pointer saved at [sp], then +8
 *   0x6000 bottom:  end of stack
 *   0x7000 nothing: undefined */
static void build_table(struct orc_table *t)
{
	static const uint64_t ips[] = { T(0x1000), T(0x2000), T(0x3000), T(0x4000), T(0x5000), T(0x6000), T(0x7000) };
	uint8_t e[7][6];
	ent_v1(e[0], ORC_REG_SP, 8, ORC_REG_UNDEFINED, 0, 0, 0);
	ent_v1(e[1], ORC_REG_BP, 16, ORC_REG_PREV_SP, -16, 0, 0);
	ent_v1(e[2], ORC_REG_SP, 0, ORC_REG_UNDEFINED, 0, 1, 0);
	ent_v1(e[3], ORC_REG_SP, 8, ORC_REG_UNDEFINED, 0, 2, 0);
	ent_v1(e[4], ORC_REG_SP_INDIRECT, 8, ORC_REG_UNDEFINED, 0, 0, 0);
	ent_v1(e[5], ORC_REG_UNDEFINED, 0, ORC_REG_UNDEFINED, 0, 0, 1);
	ent_v1(e[6], ORC_REG_UNDEFINED, 0, ORC_REG_UNDEFINED, 0, 0, 0);
	table(t, ips, (const uint8_t (*)[6])e, 7, NULL, 0);
}

static struct unwinder orcu;

static void setup(struct unwind_in *in, uint64_t pc, uint64_t sp, uint64_t bp)
{
	memset(in, 0, sizeof *in);
	in->arch = &uw_arch_x86_64;
	in->pc = pc;
	in->regs.r[7] = sp;
	in->regs.r[6] = bp;
	in->regs.valid = 1u << 7 | 1u << 6;
	in->klo = 0xffff800000000000ull;
	in->khi = ~0ull;
	in->span = 0x10000;
	in->max_frames = 32;
	in->nmethods = 1;
	in->methods[0] = &orcu;
	in->nchunks = 2;
	in->chunks[0] = (struct unwind_chunk){ STK, sizeof mem, mem };
	in->chunks[1] = (struct unwind_chunk){ STK2, sizeof mem2, mem2 };
}

static void test_layouts(void)
{
	struct orc_table t;
	struct orc_entry o;
	uint8_t raw[6];
	ent_v1(raw, ORC_REG_SP, 8, ORC_REG_UNDEFINED, 0, 1, 0);
	orc_decode(ORC_LAYOUT_V1, raw, &o);
	CHECK(o.type == ORC_REGS && o.signal == 1 && o.sp_off == 8 && o.sp_reg == ORC_REG_SP);
	ent_v1(raw, ORC_REG_UNDEFINED, 0, 0, 0, 0, 1);
	orc_decode(ORC_LAYOUT_V1, raw, &o);
	CHECK(o.type == ORC_END);
	raw[5] = 0;
	orc_decode(ORC_LAYOUT_V1, raw, &o);
	CHECK(o.type == ORC_UNDEF);
	/* v2 (6.3): signal is bit 2 and end bit 3 */
	raw[4] = ORC_REG_SP;
	raw[5] = 1 | 4;
	orc_decode(ORC_LAYOUT_V2, raw, &o);
	CHECK(o.type == ORC_REGS && o.signal == 1);
	raw[4] = 0;
	raw[5] = 8;
	orc_decode(ORC_LAYOUT_V2, raw, &o);
	CHECK(o.type == ORC_END);
	/* v3 (6.4+): type 0-2 is 3 bits, signal bit 3 */
	raw[4] = ORC_REG_SP;
	raw[5] = 4 | 8;
	orc_decode(ORC_LAYOUT_V3, raw, &o);
	CHECK(o.type == ORC_REGS_PARTIAL && o.signal == 1);
	raw[5] = 1;
	orc_decode(ORC_LAYOUT_V3, raw, &o);
	CHECK(o.type == ORC_END);
	raw[5] = 2;
	orc_decode(ORC_LAYOUT_V3, raw, &o);
	CHECK(o.type == ORC_CALL && o.signal == 0);

	/* Which layout: v1 without bit 3 anywhere, v2 with it, refused with bits 4-7. */
	uint64_t ips[2] = { T(0x100), T(0x200) };
	uint8_t e[2][6];
	ent_v1(e[0], ORC_REG_SP, 8, 0, 0, 0, 0);
	ent_v1(e[1], ORC_REG_SP, 8, 0, 0, 1, 0);
	table(&t, ips, (const uint8_t (*)[6])e, 2, NULL, 0);
	CHECK(t.layout == ORC_LAYOUT_V1);
	orc_free(&t);
	e[1][5] |= 8;
	table(&t, ips, (const uint8_t (*)[6])e, 2, NULL, 0);
	CHECK(t.layout == ORC_LAYOUT_V2);
	orc_free(&t);
	e[1][5] = 0x40;
	table(&t, ips, (const uint8_t (*)[6])e, 2, NULL, -1);
	CHECK(strstr(t.errstr, "unknown version") != NULL);
	/* A .orc_header we know (Debian's 6.12) means v3; another hash is refused. */
	static const uint8_t known[20] = { 0xfe, 0x5d, 0x32, 0xbf, 0x58, 0x1b, 0xd6, 0x3b, 0x2c, 0xa9,
					   0xa5, 0xc6, 0x5b, 0xa5, 0xa6, 0x25, 0xea, 0xb3, 0xfe, 0x24 };
	uint8_t other[20];
	memcpy(other, known, 20);
	other[0] ^= 1;
	e[1][5] = 3;
	table(&t, ips, (const uint8_t (*)[6])e, 2, known, 0);
	CHECK(t.layout == ORC_LAYOUT_V3);
	orc_free(&t);
	table(&t, ips, (const uint8_t (*)[6])e, 2, other, -1);
	CHECK(strstr(t.errstr, "unknown version (.orc_header ff5d32bf") != NULL);
	/* Inconsistent sizes and an unsorted table are refused. */
	CHECK(orc_load(&t, (const uint8_t *)"abcd", 4, T(0), (const uint8_t *)"abcdefghijkl", 12, NULL, 0, 0, ~0ull) == -1);
	uint64_t rev[2] = { T(0x200), T(0x100) };
	table(&t, rev, (const uint8_t (*)[6])e, 2, NULL, -1);
	CHECK(strstr(t.errstr, "not sorted") != NULL);
}

static void test_lookup(void)
{
	struct orc_table t;
	struct orc_entry o;
	build_table(&t);
	CHECK(orc_find(&t, T(0x1000), &o) == 0 && o.sp_off == 8);
	CHECK(orc_find(&t, T(0x1fff), &o) == 0 && o.sp_off == 8);   /* up to the next entry */
	CHECK(orc_find(&t, T(0x2000), &o) == 0 && o.sp_reg == ORC_REG_BP);
	CHECK(orc_find(&t, T(0xfff), &o) == -1);                    /* below the first entry */
	CHECK(orc_find(&t, T(0x10000), &o) == -1);                  /* outside the text the table covers */
	CHECK(t.lookups == 5 && t.misses == 2);
	orc_free(&t);
}

static void test_steps(void)
{
	struct orc_table t;
	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[32];
	build_table(&t);
	orcu = (struct unwinder){ UM_ORC, &t, orc_step };

	/* leaf (call frame) <- framed (bp-based) <- bottom (end of stack). */
	memset(mem, 0, sizeof mem);
	put(STK + 0x100, T(0x2010));     /* leaf's return address into framed */
	put(STK + 0x140, 0x1234);        /* framed's caller's bp, saved at prev_sp - 16 */
	put(STK + 0x148, T(0x6010));     /* framed's return address into bottom */
	setup(&in, T(0x1004), STK + 0x100, STK + 0x140);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 3 && f[1] == T(0x2010) && f[2] == T(0x6010));
	CHECK(out.by_method[UM_ORC] == 2 && out.stop_method == UM_ORC);
	CHECK(out.exact[0] == 0);

	/* A full register frame (kernel mode): the interrupted pc is exact and its registers come
	 * from pt_regs -- here bp, which the next (bp-based) frame needs. */
	memset(mem, 0, sizeof mem);
	uint64_t regs = STK + 0x200;
	put(regs + 128, T(0x2020));      /* ip: interrupted in framed */
	put(regs + 136, KERNEL_CS);
	put(regs + 152, STK + 0x300);    /* sp */
	put(regs + 32, STK + 0x340);     /* bp */
	put(STK + 0x340, 0);
	put(STK + 0x348, T(0x6020));
	setup(&in, T(0x3000), regs, 0);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 3 && f[1] == T(0x2020) && f[2] == T(0x6020));
	CHECK(unwind_is_exact(out.exact, 1) && !unwind_is_exact(out.exact, 2));

	/* The same frame from user mode ends the kernel stack there. */
	put(regs + 136, USER_CS);
	put(regs + 128, 0x401000);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_USER && out.n == 1);

	/* A partial register frame (iret frame above one word): ip, cs, sp from it. */
	memset(mem, 0, sizeof mem);
	put(STK + 0x108, T(0x1010));     /* ip: interrupted in leaf */
	put(STK + 0x110, KERNEL_CS);
	put(STK + 0x120, STK + 0x180);   /* sp */
	put(STK + 0x180, T(0x6030));     /* leaf's return address, just below its sp+8 */
	setup(&in, T(0x4000), STK + 0x100, 0);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 3 && f[1] == T(0x1010) && f[2] == T(0x6030));
	CHECK(unwind_is_exact(out.exact, 1));

	/* An IRQ stack: the previous stack pointer is saved at its top; the walk switches stacks
	 * and reads both, each an extent of its own. */
	memset(mem, 0, sizeof mem);
	memset(mem2, 0, sizeof mem2);
	put(STK2 + 0x800, STK + 0x180);  /* onirq: [sp] = the task stack's sp ... */
	put(STK + 0x180, T(0x1020));     /* ... +8 - 8: the return address there */
	put(STK + 0x188, T(0x6040));     /* leaf (sp 0x188) returns into bottom */
	setup(&in, T(0x5000), STK2 + 0x800, 0);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 3 && f[1] == T(0x1020) && f[2] == T(0x6040));
	CHECK(out.nextents == 2 && out.ext[0].lo == STK2 + 0x800 && out.ext[1].hi == STK + 0x190);

	/* A new task's first switch returns to the fork entry's first instruction, whose ORC says end
	 * of stack; at pc - 1 is the code before it (here indirect: a wrong rule). Linux takes that
	 * return address as exact, and so does the walk once it knows where the entry is. */
	memset(mem, 0, sizeof mem);
	put(STK + 0x100, T(0x6000));     /* leaf "returns" into bottom's first instruction */
	setup(&in, T(0x1004), STK + 0x100, 0);
	unwind_walk(&in, f, &out);
	CHECK(out.stop != UW_END);       /* looked up at 0x5fff: the indirect rule there */
	t.fork_ret = T(0x6000);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 2 && f[1] == T(0x6000) && unwind_is_exact(out.exact, 1));
	t.fork_ret = 0;

	/* No entry for the pc (outside the table's text): no information, the walk stops. */
	setup(&in, T(0x20000), STK + 0x100, 0);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_NOINFO && out.n == 1);
	/* An entry objtool marked undefined: a bad rule, not a guess. */
	setup(&in, T(0x7000), STK + 0x100, 0);
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_BADRULE && out.n == 1);
	/* A bp-based entry without a known bp. */
	setup(&in, T(0x2004), STK + 0x100, 0);
	in.regs.valid = 1u << 7;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_BADRULE);
	/* A return address not read yet: the walk says which address it needs. */
	setup(&in, T(0x1004), STK + 0xff0, 0);
	in.nchunks = 0;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_UNREAD && out.need == STK + 0xff0);
	orc_free(&t);
}

/* ORC first, the frame pointer where ORC has nothing: each frame counts for its method. */
static void test_fallback(void)
{
	struct orc_table t;
	struct unwind_in in;
	struct unwind_out out;
	uint64_t f[32];
	struct fp_ctx fc = { .span = 0x10000 };
	struct unwinder fpu = { UM_FP, &fc, fp_step };
	build_table(&t);
	orcu = (struct unwinder){ UM_ORC, &t, orc_step };
	memset(mem, 0, sizeof mem);
	put(STK + 0x100, T(0x20010));    /* leaf returns into code ORC does not cover (a module) */
	put(STK + 0x200, STK + 0x240);   /* which keeps a frame pointer */
	put(STK + 0x208, T(0x2030));     /* ... returning into framed (ORC again) */
	put(STK + 0x240, 0x77);          /* framed's caller's bp (at prev_sp - 16 = 0x250 - 16) */
	put(STK + 0x248, T(0x6050));     /* framed's return address */
	setup(&in, T(0x1004), STK + 0x100, STK + 0x200);
	in.nmethods = 2;
	in.methods[1] = &fpu;
	unwind_walk(&in, f, &out);
	CHECK(out.stop == UW_END && out.n == 4);
	CHECK(f[1] == T(0x20010) && f[2] == T(0x2030) && f[3] == T(0x6050));
	CHECK(out.by_method[UM_ORC] == 2 && out.by_method[UM_FP] == 1);
	orc_free(&t);
}

void test_orc(void)
{
	test_layouts();
	test_lookup();
	test_steps();
	test_fallback();
}
