/* test_plan.c: the sampling plan on literal replies -- which windows a vCPU's sample asks for,
 * given its previous sample, and what the replies make of it (no gdbstub, no socket). */
#include "check.h"
#include "../../sampler/sample.h"

#define K 0xffffffff80000000ull
#define STK 0xffff800000010000ull

static struct layout lay;

/* A vCPU whose `g` reply says pc, rsp, rbp (ring 0, interrupts on). */
static void regs(struct vcpu *v, uint64_t pc, uint64_t sp, uint64_t fp)
{
	memset(v->regs, 0, sizeof v->regs);
	for (int i = 0; i < 8; i++) {
		v->regs[48 + i] = (uint8_t)(fp >> (8 * i));
		v->regs[56 + i] = (uint8_t)(sp >> (8 * i));
		v->regs[128 + i] = (uint8_t)(pc >> (8 * i));
	}
	v->regs[137] = 0x02; /* IF */
	v->regs[140] = 0x08; /* cs */
	v->nregs = lay.gsize;
}

static void put(struct window *w, uint64_t a, uint64_t val)
{
	for (int i = 0; i < 8; i++) w->data[a - w->addr + (uint64_t)i] = (uint8_t)(val >> (8 * i));
}

void test_plan(void)
{
	struct plan p;
	struct vcpu v;
	struct sample out;
	arch_layout_default(&lay, arch_find("x86_64"));
	struct sampler_cfg cfg = { .klo = 0xffff800000000000ull, .khi = ~0ull, .max_frames = 64 };
	plan_init(&p, &lay, &cfg);
	memset(&v, 0, sizeof v);

	/* First sample: nothing predicted, so no window; the registers arrive, the walk needs the
	 * frame at fp: the plan asks for it, from 64 bytes below (slots under a CFA) to the end of
	 * the 16 KiB stack area (at most 4 KiB). */
	plan_first(&p, &v);
	CHECK(v.nwin == 0);
	regs(&v, K + 0x10, STK + 0x3f00, STK + 0x3f40);
	v.trips = 1;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 0);
	CHECK(v.nwin_trip == 0 && v.nwin == 1 && v.win[0].addr == STK + 0x3f00 && v.win[0].len == 0x100);
	/* The reply: a two-frame chain ending in a zero frame pointer. */
	v.win[0].ok = 1;
	put(&v.win[0], STK + 0x3f40, STK + 0x3f80);
	put(&v.win[0], STK + 0x3f48, K + 0x100);
	put(&v.win[0], STK + 0x3f80, 0);
	put(&v.win[0], STK + 0x3f88, K + 0x200);
	v.trips = 2;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1);
	CHECK(out.n == 3 && out.frames[1] == K + 0x100 && out.frames[2] == K + 0x200 && out.flags == 0);
	CHECK(p.st.misses == 1 && p.st.stops[UW_END] == 1 && p.st.frames[UM_FP] == 2);
	CHECK(p.st.stops_by[UM_FP][UW_END] == 1);

	/* Next sample: one window from a little below the last stack pointer to the chain's end
	 * (no margin: the chain ended there). */
	plan_first(&p, &v);
	CHECK(v.nwin == 1 && v.win[0].addr == STK + 0x3f00 - SAMPLE_SLACK && v.win[0].len == 0x190);

	/* A user-mode sample reads no stack and leaves the prediction alone. */
	regs(&v, 0x401000, 0x7ffe0000, 0);
	v.regs[140] = 0x33;
	v.trips = 1;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1);
	CHECK(out.n == 1 && out.flags == SF_USER);
	plan_first(&p, &v);
	CHECK(v.nwin == 1 && v.win[0].addr == STK + 0x3f00 - SAMPLE_SLACK);

	/* With symbols but no text (a map), idle tagging asks the guest for the 64 bytes of text
	 * around the byte before the pc once, then remembers them. */
	struct symtab t = { 0 };
	syms_add(&t, K, 0x1000, "idle_loop");
	syms_finish(&t);
	cfg.syms = &t;
	plan_free(&p);
	plan_init(&p, &lay, &cfg);
	memset(&v, 0, sizeof v);
	plan_first(&p, &v);
	regs(&v, K + 0x20, STK + 0x3f00, 0);
	v.trips = 1;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 0);
	CHECK(v.nwin == 1 && v.win[0].kind == WIN_TEXT && v.win[0].addr == K && v.win[0].len == 64);
	v.win[0].ok = 1;
	memset(v.win[0].data, 0x90, 64);
	v.win[0].data[0x1f] = 0xf4; /* hlt just before the pc */
	v.trips = 2;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1);
	CHECK(out.flags & SF_IDLE);
	CHECK(p.st.text_reads == 1);
	plan_first(&p, &v);
	regs(&v, K + 0x20, STK + 0x3f00, 0);
	v.trips = 1;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1 && (out.flags & SF_IDLE)); /* cached: one trip */
	regs(&v, K + 0x30, STK + 0x3f00, 0); /* another pc in the same block: no read, not idle */
	v.trips = 1;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1 && !(out.flags & SF_IDLE));
	CHECK(p.st.text_reads == 1);
	plan_free(&p);
	syms_free(&t);
}
