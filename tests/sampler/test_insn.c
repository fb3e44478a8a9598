/* SPDX-License-Identifier: MIT */
/* test_insn.c: what instructions say about a pc, on literal aarch64 instruction words (as GCC 12
 * emits them for our kernel with frame records) and x86_64 bytes. */
#include "check.h"
#include "../../sampler/files.h"
#include "../../sampler/insn.h"
#include "../../sampler/symbols.h"
#include "../../sampler/unwind_cfi.h"
#include <elf.h>
#include <stdlib.h>

#define BASE 0x40080000ull /* where the literal text lies */

static const uint32_t *text;
static size_t ntext;

/* The text byte at addr from the literal words, -1 outside them. */
static int byte_at(const void *arg, uint64_t addr)
{
	(void)arg;
	if (addr < BASE || addr - BASE >= 4 * ntext) return -1;
	uint64_t i = addr - BASE;
	return (int)((text[i / 4] >> (8 * (i % 4))) & 0xff);
}

static enum unwind_pc kind(uint64_t fn, uint64_t pc, int *adj)
{
	return insn_pc_kind(EM_AARCH64, byte_at, NULL, BASE + fn, 1, BASE + pc, adj);
}

/* leaf: a frame record of 16 bytes (`stp x29, x30, [sp, #-16]!`), popped by a post-index ldp. */
static const uint32_t leaf[] = {
	0xa9bf7bfd, /* 0x00 stp x29, x30, [sp, #-16]! */
	0x910003fd, /* 0x04 mov x29, sp */
	0x90000005, /* 0x08 adrp x5, ... */
	0x52800c82, /* 0x0c mov w2, #100 */
	0x71000442, /* 0x10 subs w2, w2, #1 */
	0x54ffffe1, /* 0x14 b.ne 0x10 */
	0xf94000a0, /* 0x18 ldr x0, [x5] */
	0xa8c17bfd, /* 0x1c ldp x29, x30, [sp], #16 */
	0xd65f03c0, /* 0x20 ret */
};

/* big: 816 bytes of frame made by `sub sp`, the record stored at its bottom, and an epilogue
 * that reloads x29/x30 before its last loads and pops the frame with `add sp` just before ret. */
static const uint32_t big[] = {
	0xd10cc3ff, /* 0x00 sub sp, sp, #0x330 */
	0xa9007bfd, /* 0x04 stp x29, x30, [sp] */
	0x910003fd, /* 0x08 mov x29, sp */
	0x910043e2, /* 0x0c add x2, sp, #0x10 */
	0x94000000, /* 0x10 bl mid */
	0xa9407bfd, /* 0x14 ldp x29, x30, [sp] */
	0xf9401fe1, /* 0x18 ldr x1, [sp, #56] */
	0x8b010000, /* 0x1c add x0, x0, x1 */
	0x910cc3ff, /* 0x20 add sp, sp, #0x330 */
	0xd65f03c0, /* 0x24 ret */
};

/* pac: pointer authentication and a callee-saved pair pushed beside the record. */
static const uint32_t pac[] = {
	0xd503233f, /* 0x00 paciasp */
	0xa9bd7bfd, /* 0x04 stp x29, x30, [sp, #-48]! */
	0x910003fd, /* 0x08 mov x29, sp */
	0xa90153f3, /* 0x0c stp x19, x20, [sp, #16] */
	0x94000000, /* 0x10 bl ... */
	0xa94153f3, /* 0x14 ldp x19, x20, [sp, #16] */
	0xa8c37bfd, /* 0x18 ldp x29, x30, [sp], #48 */
	0xd50323bf, /* 0x1c autiasp */
	0xd65f03c0, /* 0x20 ret */
};

/* frameless: a leaf with no record (an assembly helper), and one that branches before any. */
static const uint32_t frameless[] = {
	0xf9400001, /* 0x00 ldr x1, [x0] */
	0x8b010000, /* 0x04 add x0, x0, x1 */
	0xd65f03c0, /* 0x08 ret */
	0xb4000040, /* 0x0c cbz x0, 0x14 (a shrink-wrapped function: the record only on one path) */
	0xa9bf7bfd, /* 0x10 stp x29, x30, [sp, #-16]! */
	0xd503201f, /* 0x14 nop */
	0xd65f03c0, /* 0x18 ret */
};

static void use(const uint32_t *w, size_t n)
{
	text = w;
	ntext = n;
}

static void test_frames(void)
{
	int adj = -1;
	use(leaf, sizeof leaf / 4);
	CHECK(kind(0, 0x00, &adj) == PC_AT_ENTRY && adj == 0);   /* first instruction: x30, sp as is */
	CHECK(kind(0, 0x04, &adj) == PC_AT_ENTRY && adj == 16);  /* record pushed, x29 not yet ours */
	CHECK(kind(0, 0x08, &adj) == PC_BODY && adj == 0);
	CHECK(kind(0, 0x14, &adj) == PC_BODY);
	CHECK(kind(0, 0x18, &adj) == PC_BODY);                    /* the ldp is still ahead */
	CHECK(kind(0, 0x1c, &adj) == PC_BODY);                    /* at it: not run yet */
	CHECK(kind(0, 0x20, &adj) == PC_AT_ENTRY && adj == 0);   /* at ret */
	CHECK(kind(0, 0x06, &adj) == PC_BODY);                    /* misaligned: no guess */
	/* Without the function's start, only the ret and the epilogue are known. */
	CHECK(insn_pc_kind(EM_AARCH64, byte_at, NULL, 0, 0, BASE + 0x04, &adj) == PC_BODY);
	CHECK(insn_pc_kind(EM_AARCH64, byte_at, NULL, 0, 0, BASE + 0x20, &adj) == PC_AT_ENTRY);

	use(big, sizeof big / 4);
	CHECK(kind(0, 0x00, &adj) == PC_AT_ENTRY && adj == 0);
	CHECK(kind(0, 0x04, &adj) == PC_AT_ENTRY && adj == 0x330); /* frame allocated, record not stored */
	CHECK(kind(0, 0x08, &adj) == PC_AT_ENTRY && adj == 0x330);
	CHECK(kind(0, 0x0c, &adj) == PC_BODY);
	CHECK(kind(0, 0x14, &adj) == PC_BODY);
	CHECK(kind(0, 0x18, &adj) == PC_AT_ENTRY && adj == 0x330); /* x29/x30 back, frame not popped */
	CHECK(kind(0, 0x1c, &adj) == PC_AT_ENTRY && adj == 0x330);
	CHECK(kind(0, 0x20, &adj) == PC_AT_ENTRY && adj == 0x330);
	CHECK(kind(0, 0x24, &adj) == PC_AT_ENTRY && adj == 0);

	use(pac, sizeof pac / 4);
	CHECK(kind(0, 0x04, &adj) == PC_AT_ENTRY && adj == 0);    /* after the hint */
	CHECK(kind(0, 0x08, &adj) == PC_AT_ENTRY && adj == 48);
	CHECK(kind(0, 0x0c, &adj) == PC_BODY);
	CHECK(kind(0, 0x18, &adj) == PC_BODY);                    /* at the ldp */
	CHECK(kind(0, 0x1c, &adj) == PC_AT_ENTRY && adj == 0);    /* at autiasp: popped */

	use(frameless, sizeof frameless / 4);
	CHECK(kind(0, 0x04, &adj) == PC_AT_ENTRY && adj == 0);    /* a straight leaf: x30 all along */
	CHECK(kind(0x0c, 0x10, &adj) == PC_BODY);                 /* after a branch: not provable */
	CHECK(kind(0x0c, 0x14, &adj) == PC_BODY);
	CHECK(kind(0x0c, 0x18, &adj) == PC_AT_ENTRY && adj == 0); /* a ret is a ret */
}

static void test_idle_and_calls(void)
{
	static const uint32_t idle[] = {
		0xa9bf7bfd, /* 0x00 stp x29, x30, [sp, #-16]! */
		0x910003fd, /* 0x04 mov x29, sp */
		0xd503207f, /* 0x08 wfi */
		0x17ffffff, /* 0x0c b 0x08 */
		0xd503205f, /* 0x10 wfe */
		0x94000000, /* 0x14 bl ... */
		0xd63f0040, /* 0x18 blr x2 */
		0xd63f083f, /* 0x1c blraaz x1 */
		0xd503201f, /* 0x20 nop */
	};
	uint64_t need = 0;
	use(idle, sizeof idle / 4);
	CHECK(insn_idle(EM_AARCH64, byte_at, NULL, BASE + 0x0c, &need) == 1); /* halted: pc after wfi */
	CHECK(insn_idle(EM_AARCH64, byte_at, NULL, BASE + 0x08, &need) == 1); /* about to halt */
	CHECK(insn_idle(EM_AARCH64, byte_at, NULL, BASE + 0x14, &need) == 1); /* after wfe */
	CHECK(insn_idle(EM_AARCH64, byte_at, NULL, BASE + 0x04, &need) == 0);
	CHECK(insn_idle(EM_AARCH64, byte_at, NULL, BASE + 0x24, &need) == -1 && need == BASE + 0x24);
	CHECK(insn_idle(EM_AARCH64, byte_at, NULL, BASE, &need) == -1 && need == BASE - 4);
	CHECK(a64_is_idle(0xd5031003) && a64_is_idle(0xd5031025) && !a64_is_idle(0xd503201f)); /* wfet, wfit */

	/* A frame record's "return address" after a call is one; anything else is an exception
	 * entry's ELR, kept in a record of its own: an interrupted pc. */
	CHECK(insn_after_call(EM_AARCH64, byte_at, NULL, BASE + 0x18) == 1); /* after bl */
	CHECK(insn_after_call(EM_AARCH64, byte_at, NULL, BASE + 0x1c) == 1); /* after blr */
	CHECK(insn_after_call(EM_AARCH64, byte_at, NULL, BASE + 0x20) == 1); /* after blraaz */
	CHECK(insn_after_call(EM_AARCH64, byte_at, NULL, BASE + 0x0c) == 0); /* after wfi: interrupted */
	CHECK(insn_after_call(EM_AARCH64, byte_at, NULL, BASE + 0x04) == 0);
	CHECK(insn_after_call(EM_AARCH64, byte_at, NULL, BASE) == -1);       /* text unknown */
	CHECK(insn_after_call(EM_AARCH64, byte_at, NULL, BASE + 0x1a) == -1); /* misaligned */
	CHECK(insn_after_call(EM_X86_64, byte_at, NULL, BASE + 0x18) == -1);  /* not decidable */
	CHECK(a64_is_ret(0xd65f03c0) && a64_is_ret(0xd65f0bff) && !a64_is_ret(0xd65f0000)); /* ret x0 */
	CHECK(a64_is_call(0x97ffffff) && !a64_is_call(0x17ffffff) && !a64_is_call(0xd61f0040)); /* br x2 */
}

/* A frameless leaf, as Linux's __arch_clear_user: a loop, no frame record, no call, sp untouched.
 * Anywhere in it (loop included) the return address is in x30; one call or one store of a
 * frame record in it and it is not frameless. */
static void test_frameless_leaf(void)
{
	static const uint32_t clear[] = {
		0xaa0103e2, /* 0x00 mov x2, x1 */
		0xf1002021, /* 0x04 subs x1, x1, #8 */
		0x54000064, /* 0x08 b.mi 0x14 */
		0xf800841f, /* 0x0c str xzr, [x0], #8 */
		0x17fffffd, /* 0x10 b 0x04 */
		0xd2800000, /* 0x14 mov x0, #0 */
		0xd65f03c0, /* 0x18 ret */
	};
	static const uint32_t calls[] = {
		0xaa0103e2, /* 0x00 mov x2, x1 */
		0xf1002021, /* 0x04 subs x1, x1, #8 */
		0x54000064, /* 0x08 b.mi 0x14 */
		0x94000000, /* 0x0c bl ...: x30 overwritten */
		0x17fffffd, /* 0x10 b 0x04 */
		0xd2800000, /* 0x14 mov x0, #0 */
		0xd65f03c0, /* 0x18 ret */
	};
	static const uint32_t shrink[] = {
		0xb4000040, /* 0x00 cbz x0, 0x08 */
		0xd65f03c0, /* 0x04 ret (the fast path) */
		0xa9bf7bfd, /* 0x08 stp x29, x30, [sp, #-16]! */
		0x910003fd, /* 0x0c mov x29, sp */
		0xf9400000, /* 0x10 ldr x0, [x0] */
		0xa8c17bfd, /* 0x14 ldp x29, x30, [sp], #16 */
		0xd65f03c0, /* 0x18 ret */
	};
	int adj = -1;
	use(clear, sizeof clear / 4);
	CHECK(kind(0, 0x0c, &adj) == PC_AT_ENTRY && adj == 0); /* in the loop, after a branch */
	CHECK(kind(0, 0x14, &adj) == PC_AT_ENTRY && adj == 0);
	CHECK(insn_pc_kind(EM_AARCH64, byte_at, NULL, 0, 0, BASE + 0x0c, &adj) == PC_BODY); /* fn unknown */
	use(calls, sizeof calls / 4);
	CHECK(kind(0, 0x14, &adj) == PC_BODY);
	use(shrink, sizeof shrink / 4);
	CHECK(kind(0, 0x10, &adj) == PC_BODY); /* the frame record is stored before pc */
	use(clear, 3);                          /* the text ends before any ret: unknown, not a leaf */
	CHECK(kind(0, 0x08, &adj) == PC_AT_ENTRY); /* (the straight-line prologue rule still holds) */
	use(clear, 5);
	CHECK(kind(0, 0x10, &adj) == PC_BODY);
}

/* x86_64 keeps its rules: the byte before a halted pc is hlt; push %rbp after endbr64. */
static void test_x86(void)
{
	static const uint32_t x86[] = { 0xfa1e0ff3, 0xe5894855, 0xc35df490 }; /* endbr64; push; mov; nop; hlt; pop; ret */
	use(x86, 3);
	CHECK(insn_pc_kind(EM_X86_64, byte_at, NULL, BASE, 1, BASE + 4, NULL) == PC_AT_ENTRY);
	CHECK(insn_pc_kind(EM_X86_64, byte_at, NULL, BASE, 1, BASE + 5, NULL) == PC_AFTER_PUSH);
	CHECK(insn_pc_kind(0, byte_at, NULL, BASE, 1, BASE + 11, NULL) == PC_AT_ENTRY); /* a map: x86 rules */
	CHECK(insn_idle(EM_X86_64, byte_at, NULL, BASE + 10, NULL) == 1);
	CHECK(insn_idle(EM_X86_64, byte_at, NULL, BASE + 9, NULL) == 0);
	CHECK(insn_pc_kind(EM_RISCV, byte_at, NULL, BASE, 1, BASE, NULL) == PC_BODY); /* no rules */
}

/*
 * Our aarch64 kernel, every instruction of every function: where the words say the return
 * address is still in x30 (PC_AT_ENTRY), the kernel's own CFI must agree -- x30 "same value", or
 * just saved by the `stp` -- and put the caller's sp (the CFA) at sp + adj. On the frame-record
 * build the CFI must never keep the return address in x30 where the words say the record is
 * set up (PC_BODY); without frame records a frameless function with branches stays PC_BODY (the
 * frame-pointer method knows nothing there; the default walk uses the CFI).
 */
static void check_kernel(const char *path, int frame_records)
{
	struct symtab t = { 0 };
	struct cfi_ctx c;
	uint8_t *buf;
	size_t len;
	char err[160];
	CHECK(file_read(path, FILE_MAX_IMAGE, &buf, &len, err, sizeof err) == 0);
	if (!buf) {
		fprintf(stderr, "test_insn: %s (make ARCH=aarch64 kernel)\n", err);
		return;
	}
	elf_version(EV_CURRENT);
	CHECK(syms_add_elf(&t, path, buf, len) == 0 && t.machine == EM_AARCH64);
	Elf *e = elf_memory((char *)buf, len);
	CHECK(e && cfi_open(&c, e, &uw_arch_aarch64) == 0);
	long entry = 0, body = 0, wrong = 0;
	for (size_t i = 0; i < t.n; i++) {
		const struct sym *s = &t.syms[i];
		uint64_t end = s->size ? s->addr + s->size : i + 1 < t.n ? t.syms[i + 1].addr : s->addr;
		for (uint64_t pc = s->addr; pc < end; pc += 4) {
			int adj = -1;
			enum unwind_pc k = syms_pc_kind(&t, pc, &adj);
			const struct cfi_rule *ru = cfi_rule_at(&c, pc);
			if (!ru || !ru->found || !ru->usable || ru->signal || ru->how[30] == CFI_UNDEF) continue;
			int live = ru->how[30] == CFI_SAME, saved = ru->how[30] == CFI_AT_CFA;
			int ok = k == PC_AT_ENTRY ? (live || saved) && ru->cfa_reg == 31 && adj == ru->cfa_off
						  : !live || !frame_records;
			if (!ok && wrong++ < 5)
				fprintf(stderr, "test_insn: %s+0x%llx: words say %s (adj %d), CFI x30 rule %d, CFA sp%+lld\n",
					s->name, (unsigned long long)(pc - s->addr), k == PC_AT_ENTRY ? "entry" : "body",
					adj, ru->how[30], (long long)ru->cfa_off);
			entry += k == PC_AT_ENTRY;
			body += k != PC_AT_ENTRY;
		}
	}
	CHECK(wrong == 0);
	CHECK(entry > 500 && body > 2000); /* a whole kernel was looked at */
	cfi_free(&c);
	elf_end(e);
	syms_free(&t);
	free(buf);
}

/* The static words a function loads through adrp (+ add): Debian 6.1 arm64's find_module_all
 * reading `modules` (its first three words), then what a call forgets and what it keeps. */
static void test_static_loads(void)
{
	static const uint32_t w[] = {
		0x9000e055, /* adrp x21, . + 0x1c08000 */
		0x912702b5, /* add x21, x21, #0x9c0 */
		0xf8450ea0, /* ldr x0, [x21, #80]!  (x21 += 80) */
		0xf9400aa1, /* ldr x1, [x21, #16] */
		0x94000010, /* bl: x0-x18 and x30 forgotten, x21 kept */
		0xf9400aa2, /* ldr x2, [x21, #16] */
		0xf9400002, /* ldr x2, [x0]: x0 unknown */
		0x90000001, /* adrp x1, . */
		0x94000000, /* bl */
		0xf9400022, /* ldr x2, [x1]: forgotten by the call */
	};
	uint64_t out[8], t = BASE + 0x1c08000 + 0x9c0;
	use(w, sizeof w / sizeof w[0]);
	int n = a64_static_loads(byte_at, NULL, BASE, sizeof w, out, 8);
	CHECK(n == 3 && out[0] == t + 80 && out[1] == t + 96 && out[2] == t + 96);
	CHECK(a64_static_loads(byte_at, NULL, BASE, sizeof w, out, 1) == 1 && out[0] == t + 80);
}

/* Linux 6.1's kernel_ventry before its branch (EL0 entry with the KPTI restore, VMAP stack check):
 * every word is prologue; a store, a write of x29 or a load is not. */
static void test_vector_prologue(void)
{
	static const uint32_t ventry[] = { 0x14000003, 0xd53bd07e, 0xd51bd07f, 0xd10543ff, 0x8b2063ff,
					   0xcb2063e0, 0x37700080, 0xcb2063e0, 0xcb2063ff, 0x14000123 };
	for (size_t i = 0; i < sizeof ventry / sizeof ventry[0]; i++) CHECK(a64_vector_prologue(ventry[i]));
	CHECK(a64_vector_prologue(0xaa1f03fe));          /* mov x30, xzr (32-bit EL0 entries) */
	CHECK(!a64_vector_prologue(0xa9007bfd));         /* stp x29, x30, [sp] */
	CHECK(!a64_vector_prologue(0x910003fd));         /* mov x29, sp */
	CHECK(!a64_vector_prologue(0xf94003e0));         /* ldr x0, [sp] */
	CHECK(!a64_vector_prologue(0xd51bd040));         /* msr tpidr_el0, x0 (the overflow path) */
	CHECK(!a64_vector_prologue(0xd10543e1));         /* sub x1, sp, #0x150: not sp */
	CHECK(!a64_vector_prologue(0x37700081));         /* tbnz w1: not x0 */
}

/* riscv64, as GNU as encodes it for -march=rv64ima (our kernel has no C extension); c.jalr on
 * its own: wfi is idle at and just after it, a return address after jal/jalr ra is one, and
 * anything else (our trap frame record holds sepc) is an interrupted pc. */
static void test_riscv(void)
{
	static const uint32_t rv[] = {
		0xff010113, /* 0x00 addi sp, sp, -16 */
		0x00113423, /* 0x04 sd ra, 8(sp) */
		0x10500073, /* 0x08 wfi */
		0xffdff06f, /* 0x0c j 0x08 */
		0x040000ef, /* 0x10 jal ra, 0x50 */
		0x000780e7, /* 0x14 jalr ra, 0(a5) */
		0x00008067, /* 0x18 ret (jalr zero, 0(ra)) */
		0x00000013, /* 0x1c nop */
	};
	uint64_t need = 0;
	use(rv, sizeof rv / 4);
	CHECK(insn_idle(EM_RISCV, byte_at, NULL, BASE + 0x0c, &need) == 1); /* halted: pc after wfi */
	CHECK(insn_idle(EM_RISCV, byte_at, NULL, BASE + 0x08, &need) == 1); /* about to halt */
	CHECK(insn_idle(EM_RISCV, byte_at, NULL, BASE + 0x10, &need) == 0);
	CHECK(insn_idle(EM_RISCV, byte_at, NULL, BASE + 0x20, &need) == -1 && need == BASE + 0x20);
	CHECK(insn_idle(EM_RISCV, byte_at, NULL, BASE, &need) == -1 && need == BASE - 4);
	CHECK(insn_after_call(EM_RISCV, byte_at, NULL, BASE + 0x14) == 1);  /* after jal ra */
	CHECK(insn_after_call(EM_RISCV, byte_at, NULL, BASE + 0x18) == 1);  /* after jalr ra */
	CHECK(insn_after_call(EM_RISCV, byte_at, NULL, BASE + 0x1c) == 0);  /* after ret: links nothing */
	CHECK(insn_after_call(EM_RISCV, byte_at, NULL, BASE + 0x10) == 0);  /* after j: links zero */
	CHECK(insn_after_call(EM_RISCV, byte_at, NULL, BASE + 0x0c) == 0);  /* after wfi: interrupted */
	CHECK(insn_after_call(EM_RISCV, byte_at, NULL, BASE + 0x11) == -1); /* odd: no instruction ends there */
	CHECK(insn_after_call(EM_RISCV, byte_at, NULL, BASE) == -1);        /* text unknown */
	CHECK(rv_is_c_call(0x9782) && !rv_is_c_call(0x8082) && !rv_is_c_call(0x0001)); /* c.jalr a5; c.jr ra (ret); c.nop */
	CHECK(!rv_is_call(0x00078067) && rv_is_call(0x000780e7)); /* jr a5 / jalr a5 */
}

void test_insn(void)
{
	test_vector_prologue();
	test_static_loads();
	check_kernel(A64_KERNEL, 1);
	check_kernel(A64_KERNEL_NOFP, 0);
	test_frames();
	test_idle_and_calls();
	test_riscv();
	test_frameless_leaf();
	test_x86();
}
