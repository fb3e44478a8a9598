/* SPDX-License-Identifier: MIT */
/* test_plan.c: the sampling plan on literal replies -- which windows a vCPU's sample asks for,
 * given its previous sample, and what the replies make of it (no gdbstub, no socket). */
#include "check.h"
#include "../../sampler/files.h"
#include "../../sampler/plan.h"
#include "../../sampler/unwind_cfi.h"
#include <stdlib.h>

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

/* ---- aarch64 ---- */

#define A64K 0x40080000ull   /* our aarch64 kernel: identity-mapped, linked here */
#define A64S 0x40200000ull   /* a stack of it */
#define CPU0 0x40123000ull   /* &cpus[0]: TPIDR_EL1 */

/* QEMU's aarch64 core registers (x0..x30, sp, pc, cpsr: 268 bytes of `g`) and, numbered after
 * other features, TPIDR_EL1. */
static void a64_xml(char *out, size_t cap)
{
	size_t o = (size_t)snprintf(out, cap, "<architecture>aarch64</architecture>");
	for (int i = 0; i < 31; i++) o += (size_t)snprintf(out + o, cap - o, "<reg name=\"x%d\" bitsize=\"64\"/>", i);
	snprintf(out + o, cap - o, "<reg name=\"sp\" bitsize=\"64\"/><reg name=\"pc\" bitsize=\"64\"/>"
		 "<reg name=\"cpsr\" bitsize=\"32\"/><reg name=\"ELR_EL1\" bitsize=\"64\" regnum=\"117\"/>"
		 "<reg name=\"TPIDR_EL1\" bitsize=\"64\" regnum=\"213\"/>");
}

static struct layout a64;

static void le(uint8_t *b, uint64_t v)
{
	for (int i = 0; i < 8; i++) b[i] = (uint8_t)(v >> (8 * i));
}

/* A `g` reply of 268 bytes: pc, sp, x29, cpsr (EL1h, or EL0t when user). */
static void a64_regs(struct vcpu *v, uint64_t pc, uint64_t sp, uint64_t fp, int user)
{
	memset(v->regs, 0, sizeof v->regs);
	le(v->regs + 232, fp);
	le(v->regs + 248, sp);
	le(v->regs + 256, pc);
	v->regs[264] = user ? 0x00 : 0x05;
	v->nregs = 268;
}

static void test_plan_a64(void)
{
	static struct plan p;
	static struct vcpu v;
	struct sample out;
	struct symtab t = { 0 };
	struct guestos os = { .os = OS_TESTKERNEL, .cur_off = 0x20, .pid_off = 8, .tgid_off = 8, .comm_off = 16,
			      .comm_len = 16 };
	char xml[2048];
	a64_xml(xml, sizeof xml);
	CHECK(arch_layout_xml(&a64, xml) == 0 && a64.pcpu && a64.pcpu->num == 213 && a64.pc->off == 256);
	syms_add(&t, A64K, 0x100, "idle_loop");
	syms_finish(&t);
	/* the kernel range is the image's text (below the upper half): kernel pointers lie anywhere
	 * past the first page */
	struct sampler_cfg cfg = { .syms = &t, .klo = A64K, .khi = A64K + 0xfffff, .max_frames = 64, .os = &os };
	plan_init(&p, &a64, &cfg);
	CHECK(plan_tasks_on(&p) && p.pcpu_by_p && p.kptr_lo == 0x1000);
	memset(&v, 0, sizeof v);

	/* First sample: TPIDR_EL1 is not in `g`: the first trip asks for it with `p` beside the g;
	 * the pc follows a wfi in text the map does not have: the guest's text is asked for. */
	plan_first(&p, &v);
	CHECK(plan_wants_pcpu(&p, &v) && v.nwin == 0);
	a64_regs(&v, A64K + 0x44, A64S + 0xff0, 0, 0);
	v.pcpu_val = CPU0;
	v.pcpu_read = 1;
	CHECK(!plan_wants_pcpu(&p, &v)); /* read: not asked again */
	v.trips = 1;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 0);
	CHECK(v.task_at == CPU0 + 0x20);
	const struct window *tw = NULL, *pw = NULL;
	for (int i = 0; i < v.nwin; i++) {
		if (v.win[i].kind == WIN_TEXT) tw = &v.win[i];
		if (v.win[i].kind == WIN_TASKPTR) pw = &v.win[i];
	}
	CHECK(tw && tw->addr == A64K + 0x40 && pw && pw->addr == CPU0 + 0x20 && pw->len == 8);
	memset(v.win[tw - v.win].data, 0, 64);
	le(v.win[tw - v.win].data, 0xd503207fd503207full); /* wfi; wfi at +0x40 */
	v.win[tw - v.win].ok = 1;
	le(v.win[pw - v.win].data, 0x40300000);            /* the idle task */
	v.win[pw - v.win].ok = 1;
	v.trips = 2;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 0); /* its fields next */
	struct window *fw = &v.win[v.nwin - 1];
	CHECK(fw->kind == WIN_TASK && fw->addr == 0x40300000 + 8);
	memset(fw->data, 0, (size_t)fw->len);
	fw->data[0] = 0;                                    /* pid 0 */
	memcpy(fw->data + 8, "idle/0", 6);
	fw->ok = 1;
	v.trips = 3;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1);
	CHECK(out.flags == SF_IDLE && out.has_task && !strcmp(out.task.comm, "idle/0") && out.n == 1);

	/* Next sample: the base is known -- no `p`; the pointer and last task's fields in trip one */
	plan_first(&p, &v);
	CHECK(!plan_wants_pcpu(&p, &v) && v.nwin == 2);
	/* at the wfi itself: idle too (cached text, one trip) */
	a64_regs(&v, A64K + 0x40, A64S + 0xff0, 0, 0);
	le(v.win[0].data, 0x40300000);
	v.win[0].ok = 1;
	memset(v.win[1].data, 0, (size_t)v.win[1].len);
	memcpy(v.win[1].data + 8, "idle/0", 6);
	v.win[1].ok = 1;
	v.trips = 1;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1 && (out.flags & SF_IDLE) && out.has_task);
	CHECK(p.st.text_reads == 1 && p.st.task.verified == 1);

	/* EL0 (cpsr.M = 0): user mode, whatever the pc; TPIDR_EL1 still names the CPU */
	plan_first(&p, &v);
	a64_regs(&v, A64K + 0x80, 0x7fff0000, 0, 1);
	v.trips = 1;
	plan_after_trip(&p, &v, &out, 0);
	CHECK((out.flags & SF_USER) && out.n == 1);
	plan_free(&p);

	/* A `p` the stub answers with an error: asked again, up to PCPU_TRIES times. */
	memset(&v, 0, sizeof v);
	plan_init(&p, &a64, &cfg);
	v.pcpu_fails = PCPU_TRIES - 1;
	plan_first(&p, &v);
	CHECK(plan_wants_pcpu(&p, &v));
	v.pcpu_fails = PCPU_TRIES;
	CHECK(!plan_wants_pcpu(&p, &v));
	plan_free(&p);
	syms_free(&t);
}

/* Answer every stack window v asked for from a memory image at base. */
static void answer(struct vcpu *v, const uint8_t *mem, uint64_t base, size_t len)
{
	for (int i = v->nwin_trip; i < v->nwin; i++) {
		struct window *w = &v->win[i];
		if (w->kind != WIN_STACK) continue;
		w->ok = w->addr >= base && w->addr + (uint64_t)w->len <= base + len;
		if (w->ok) memcpy(w->data, mem + (w->addr - base), (size_t)w->len);
	}
}

static uint64_t sym(const struct symtab *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!strcmp(t->syms[i].name, name)) return t->syms[i].addr;
	return 0;
}

/* A sample at an exception vector (tests/sampler/data/cfi_frames_a64.S): the walk needs
 * ELR_EL1, outside `g`; the next trip reads it with `p` and the walk reaches the interrupted
 * code. */
static void test_plan_a64_vector(void)
{
	static struct plan p;
	static struct vcpu v;
	static uint8_t mem[0x1000];
	struct sample out;
	struct symtab t = { 0 };
	struct cfi_ctx c;
	uint8_t *buf;
	size_t len;
	char err[160];
	CHECK(file_read(CFI_FRAMES_A64_ELF, FILE_MAX_IMAGE, &buf, &len, err, sizeof err) == 0);
	if (!buf) {
		fprintf(stderr, "test_plan: %s\n", err);
		return;
	}
	elf_version(EV_CURRENT);
	CHECK(syms_add_elf(&t, "cfi_frames_a64.elf", buf, len) == 0);
	Elf *e = elf_memory((char *)buf, len);
	CHECK(e && cfi_open(&c, e, &uw_arch_aarch64) == 0);
	uint64_t vector_body = sym(&t, "vector_body"), inner_body = sym(&t, "inner_body");
	uint64_t outer_ret = sym(&t, "outer_ret"), start_ret = sym(&t, "start_ret");
	struct sampler_cfg cfg = { .syms = &t, .nmethods = 2, .order = { UM_CFI, UM_FP }, .cfi = &c,
				   .klo = A64K, .khi = A64K + 0xfff, .max_frames = 64 };
	char xml[2048];
	a64_xml(xml, sizeof xml);
	CHECK(arch_layout_xml(&a64, xml) == 0 && a64.dwarf[33] && a64.dwarf[33]->num == 117);
	plan_init(&p, &a64, &cfg);
	memset(&v, 0, sizeof v);
	memset(mem, 0, sizeof mem);
	le(mem + 0x200, 0);          /* outer's record at the interrupted sp */
	le(mem + 0x208, start_ret);

	plan_first(&p, &v);
	a64_regs(&v, vector_body, A64S + 0x200 - 32, 0x2929, 0);
	le(v.regs + 240, outer_ret); /* x30: inner was called from outer */
	v.trips = 1;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 0);
	const struct reg *x = plan_wants_xreg(&p, &v);
	CHECK(x && x->num == 117 && v.xreg == 33 && p.st.reg_reads == 1);
	v.xreg_state = XR_READ; /* the `p75` reply */
	v.xreg_val = inner_body;
	CHECK(!plan_wants_xreg(&p, &v));
	for (int trip = 2; trip <= 4; trip++) { /* then whatever stack the walk needs */
		v.trips = trip;
		if (plan_after_trip(&p, &v, &out, trip == 4)) break;
		answer(&v, mem, A64S, sizeof mem);
	}
	CHECK(out.n == 4 && out.frames[1] == inner_body && out.frames[2] == outer_ret && out.frames[3] == start_ret);
	CHECK(unwind_is_exact(out.exact, 1) && !(out.flags & (SF_PARTIAL | SF_UNRELIABLE)));

	/* The stub refuses the register: the walk ends there, counted as unreliable, not guessed. */
	plan_first(&p, &v);
	a64_regs(&v, vector_body, A64S + 0x200 - 32, 0x2929, 0);
	v.trips = 1;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 0 && plan_wants_xreg(&p, &v));
	v.xreg_state = XR_FAILED;
	v.trips = 2;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1 && out.n == 1 && (out.flags & SF_UNRELIABLE));
	CHECK(p.st.stops[UW_BADRULE] == 1);
	plan_free(&p);
	cfi_free(&c);
	elf_end(e);
	syms_free(&t);
	free(buf);
}

/* The plan counts its windows: what a read asked for, and whether a failed one was a loss (a
 * window the walk needed) or only speculation (predicted or read ahead) -- the rules the sampler
 * leaves to it (sample.c reports each request and error reply). */
/* ---- riscv64 ---- */

#define RVK 0x80200000ull    /* our riscv64 kernel, above OpenSBI at 0x80000000 */

/* QEMU's riscv64 registers: x0..x31 and pc in `g` (264 bytes), priv and sstatus outside it. */
static void rv_xml(char *out, size_t cap)
{
	size_t o = (size_t)snprintf(out, cap, "<architecture>riscv:rv64</architecture>");
	static const char *const x[] = { "zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "fp", "s1", "a0",
					 "a1", "a2", "a3", "a4", "a5", "a6", "a7", "s2", "s3", "s4", "s5",
					 "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6", "pc" };
	for (size_t i = 0; i < sizeof x / sizeof x[0]; i++)
		o += (size_t)snprintf(out + o, cap - o, "<reg name=\"%s\" bitsize=\"64\"/>", x[i]);
	snprintf(out + o, cap - o, "<reg name=\"priv\" bitsize=\"64\" regnum=\"65\"/>"
		 "<reg name=\"sstatus\" bitsize=\"64\" regnum=\"322\"/>");
}

/* QEMU's priv, read with `p` each sample, decides: 0 user ([user]), 1 the kernel (its walk),
 * 3 M-mode firmware (OpenSBI) -- one frame, SF_FIRMWARE and not SF_USER, and outside the
 * kernel's context as user mode is (its tp is the firmware's). */
static void test_plan_rv_privilege(void)
{
	static struct layout rv;
	static struct plan p;
	static struct vcpu v;
	struct sample out;
	char xml[4096];
	rv_xml(xml, sizeof xml);
	CHECK(arch_layout_xml(&rv, xml) == 0 && rv.arch->id == ARCH_RISCV64 && rv.mode && rv.pc->off == 256);
	struct sampler_cfg cfg = { .klo = RVK, .khi = RVK + 0xfffff, .max_frames = 64 };
	plan_init(&p, &rv, &cfg);
	static const struct { uint64_t priv, pc; int flags, user, firmware; } cases[] = {
		{ 3, 0x80000408, SF_FIRMWARE, 1, 1 }, /* in OpenSBI */
		{ 3, RVK + 0x40, SF_FIRMWARE, 1, 1 }, /* M-mode whatever the pc */
		{ 0, 0x10000, SF_USER, 1, 0 },
		{ 1, 0x80000408, 0, 0, 0 },           /* S-mode outside the text: the kernel's, unnamed */
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		memset(&v, 0, sizeof v);
		plan_first(&p, &v);
		CHECK(plan_wants_preg(&p, &v, PREG_MODE) == rv.mode);
		memset(v.regs, 0, sizeof v.regs);
		le(v.regs + 256, cases[i].pc);
		le(v.regs + 16, RVK + 0x8000); /* sp */
		v.nregs = 264;
		v.preg_read[PREG_MODE] = 1;
		v.preg_val[PREG_MODE] = cases[i].priv;
		v.preg_read[PREG_FLAGS] = 1;
		v.preg_val[PREG_FLAGS] = 0x2; /* SIE */
		CHECK(plan_vcpu_user(&p, &v) == cases[i].user && plan_vcpu_firmware(&p, &v) == cases[i].firmware);
		v.trips = 1;
		CHECK(plan_after_trip(&p, &v, &out, 0) == 1);
		CHECK(out.n == 1 && out.frames[0] == cases[i].pc);
		CHECK((out.flags & (SF_USER | SF_FIRMWARE)) == cases[i].flags);
		/* the next sample, before its registers are in, guesses as this one was */
		v.nregs = 0;
		CHECK(plan_vcpu_user(&p, &v) == cases[i].user && plan_vcpu_firmware(&p, &v) == cases[i].firmware);
	}
	plan_free(&p);

	/* Our kernel's task through tp (struct cpu): a hart's first sample in M-mode finds OpenSBI's
	 * scratch area in tp, so it learns no base (the sample unattributed, counted); the next one,
	 * in S-mode, learns it from the kernel's tp. */
	struct guestos os = { .os = OS_TESTKERNEL, .cur_how = CR_BASE, .cur_off = 0x10, .pid_off = 0, .tgid_off = 0,
			      .comm_off = 4, .comm_len = 16 };
	cfg.os = &os;
	plan_init(&p, &rv, &cfg);
	CHECK(plan_tasks_on(&p) && !p.pcpu_by_p);
	memset(&v, 0, sizeof v);
	for (int k = 0; k < 2; k++) {
		plan_first(&p, &v);
		memset(v.regs, 0, sizeof v.regs);
		le(v.regs + 256, k ? RVK + 0x40 : 0x80000504);
		le(v.regs + 16, RVK + 0x8000);
		le(v.regs + 32, k ? RVK + 0x3000 : 0x80041000); /* tp: the kernel's struct cpu, or OpenSBI's scratch */
		v.nregs = 264;
		v.preg_read[PREG_MODE] = v.preg_read[PREG_FLAGS] = 1;
		v.preg_val[PREG_MODE] = k ? 1 : 3;
		v.preg_val[PREG_FLAGS] = 0x2;
		v.trips = 1;
		int done = plan_after_trip(&p, &v, &out, 0);
		if (!k) {
			CHECK(done == 1 && (out.flags & SF_FIRMWARE) && !out.has_task && !v.task_at && p.st.task.lost == 1);
		} else {
			CHECK(done == 0 && v.task_at == RVK + 0x3000 + 0x10); /* the pointer next trip */
		}
	}
	plan_free(&p);
}

static void test_plan_counts(void)
{
	struct plan p;
	struct sampler_cfg cfg = { .klo = 0xffff800000000000ull, .khi = ~0ull, .max_frames = 64 };
	arch_layout_default(&lay, arch_find("x86_64"));
	plan_init(&p, &lay, &cfg);
	struct window needed = { .addr = STK, .len = 512, .kind = WIN_STACK };
	struct window guess = { .addr = STK + 4096, .len = 2048, .kind = WIN_STACK, .predicted = 1 };
	struct window cross = { .addr = STK + 3584, .len = 1024, .kind = WIN_STACK, .crosses = 1 };
	struct window text = { .addr = K, .len = 64, .kind = WIN_TEXT };
	struct window task = { .addr = K + 0x100, .len = 8, .kind = WIN_TASKPTR };
	plan_count_read(&p, &needed);
	plan_count_read(&p, &guess);
	plan_count_read(&p, &cross);
	plan_count_read(&p, &text); /* text and task bytes are counted apart */
	plan_count_read(&p, &task);
	CHECK(p.st.mem_reads == 3 && p.st.mem_bytes == 512 + 2048 + 1024 && p.st.cross_reads == 1);
	plan_count_error(&p, &needed);
	CHECK(p.st.mem_errors == 1 && p.st.stale_windows == 0);
	plan_count_error(&p, &guess); /* speculative: no loss */
	CHECK(p.st.mem_errors == 1 && p.st.stale_windows == 1);
	plan_count_error(&p, &cross); /* retried page by page, counted as cross_failed then */
	plan_count_error(&p, &task);  /* attribution counts its own losses */
	CHECK(p.st.mem_errors == 1 && p.st.stale_windows == 1 && p.st.task.lost == 0);
	plan_free(&p);
}

void test_plan(void)
{
	test_plan_counts();
	test_plan_rv_privilege();
	test_plan_a64_vector();
	test_plan_a64();
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
