/* SPDX-License-Identifier: MIT */
/* test_arch.c: target.xml parsing into the register layout, per architecture. */
#include "check.h"
#include "../../sampler/arch.h"
#include "../../sampler/unwind.h"
#include "../../sampler/files.h"
#include <stdlib.h>

/* QEMU 7.2's x86_64 description, abridged to the first registers plus the segment block. */
static const char x86_xml[] =
	"<?xml version=\"1.0\"?><!DOCTYPE target SYSTEM \"gdb-target.dtd\">"
	"<target><architecture>i386:x86-64</architecture>"
	"<feature name=\"org.gnu.gdb.i386.core\">"
	"<reg name=\"rax\" bitsize=\"64\" type=\"int64\"/><reg name=\"rbx\" bitsize=\"64\" type=\"int64\"/>"
	"<reg name=\"rcx\" bitsize=\"64\" type=\"int64\"/><reg name=\"rdx\" bitsize=\"64\" type=\"int64\"/>"
	"<reg name=\"rsi\" bitsize=\"64\" type=\"int64\"/><reg name=\"rdi\" bitsize=\"64\" type=\"int64\"/>"
	"<reg name=\"rbp\" bitsize=\"64\" type=\"data_ptr\"/><reg name=\"rsp\" bitsize=\"64\" type=\"data_ptr\"/>"
	"<reg name=\"r8\" bitsize=\"64\"/><reg name=\"r9\" bitsize=\"64\"/><reg name=\"r10\" bitsize=\"64\"/>"
	"<reg name=\"r11\" bitsize=\"64\"/><reg name=\"r12\" bitsize=\"64\"/><reg name=\"r13\" bitsize=\"64\"/>"
	"<reg name=\"r14\" bitsize=\"64\"/><reg name=\"r15\" bitsize=\"64\"/>"
	"<reg name=\"rip\" bitsize=\"64\" type=\"code_ptr\"/>\n<reg name='eflags' bitsize='32' type='i386_eflags'/>"
	"<reg name=\"cs\" bitsize=\"32\" type=\"int32\"/><reg name=\"ss\" bitsize=\"32\" type=\"int32\"/>"
	"</feature></target>";

static void test_x86(void)
{
	static struct layout l;
	CHECK(arch_layout_xml(&l, x86_xml) == 0);
	CHECK(l.arch && l.arch->id == ARCH_X86_64);
	CHECK(l.nregs == 20);
	CHECK(l.fp && l.fp->off == 48);
	CHECK(l.sp && l.sp->off == 56);
	CHECK(l.pc && l.pc->off == 128 && l.pc->size == 8);
	CHECK(l.flags && l.flags->off == 136 && l.flags->size == 4);
	CHECK(l.mode && l.mode->off == 140);
	CHECK(l.gsize == 148);

	uint8_t g[148] = { 0 };
	g[128] = 0x1a; g[135] = 0xff;        /* rip = 0xff0000000000001a */
	g[137] = 0x02;                       /* eflags.IF set */
	g[140] = 0x08;                       /* cs = 8: ring 0 */
	CHECK(arch_reg(l.pc, g, sizeof g) == 0xff0000000000001aull);
	CHECK(arch_is_user(&l, g, sizeof g) == 0);
	CHECK(arch_irqs_off(&l, g, sizeof g) == 0);
	g[140] = 0x33; g[137] = 0;           /* cs = 0x33: ring 3; IF clear */
	CHECK(arch_is_user(&l, g, sizeof g) == 1);
	CHECK(arch_irqs_off(&l, g, sizeof g) == 1);
	CHECK(arch_reg(l.pc, g, 100) == 0);  /* short reply: not read past its end */
}

static void test_defaults(void)
{
	static struct layout l;
	CHECK(arch_layout_default(&l, arch_find("x86_64")) == 0);
	CHECK(l.pc->off == 128 && l.sp->off == 56 && l.fp->off == 48);
	CHECK(arch_is_firmware_mode(&l, 3) == 0); /* no mode below the kernel the sampler meets */
	CHECK(arch_layout_default(&l, arch_find("aarch64")) == 0);
	CHECK(l.fp->off == 232 && l.lr && l.lr->off == 240 && l.sp->off == 248 && l.pc->off == 256);
	CHECK(l.flags && l.flags->off == 264 && l.gsize == 268);
	CHECK(!l.pcpu); /* its number is the stub's to give: no attribution without target.xml */
	CHECK(l.arch->uw->fp_prev == 0 && l.arch->uw->fp_ret == 8);
	CHECK(arch_layout_default(&l, arch_find("riscv:rv64")) == 0);
	CHECK(l.fp->off == 64 && l.sp->off == 16 && l.lr->off == 8 && l.pc->off == 256);
	CHECK(l.arch->uw->fp_prev == -16 && l.arch->uw->fp_ret == -8);
	CHECK(arch_by_machine(243) == l.arch && arch_by_machine(62) == arch_find("x86_64") && !arch_by_machine(258));
	CHECK(l.dwarf[8] == l.fp && !l.dwarf[32] && !l.dwarf[33] && l.arch->uw->nregs == 34); /* s0; slots 32, 33: the trap frame column, sepc (not in the fallback) */
}

static void test_errors(void)
{
	static struct layout l;
	CHECK(arch_layout_xml(&l, "<architecture>mips</architecture>") == -1);
	CHECK(strstr(l.errstr, "mips") != NULL);
	CHECK(arch_layout_xml(&l, "<architecture>i386:x86-64</architecture><reg name=\"rax\" bitsize=\"64\"/>") == -1);
	CHECK(arch_layout_xml(&l, "<target><reg bitsize=\"64\"/></target>") == -1);
	/* Explicit regnum: numbering continues from it. */
	CHECK(arch_layout_xml(&l, "<architecture>aarch64</architecture>"
			      "<reg name=\"x29\" bitsize=\"64\" regnum=\"1\"/><reg name=\"x30\" bitsize=\"64\"/>"
			      "<reg name=\"sp\" bitsize=\"64\"/><reg name=\"pc\" bitsize=\"64\"/>"
			      "<reg name=\"x0\" bitsize=\"64\" regnum=\"0\"/>") == 0);
	CHECK(l.regs[4].off == 0 && l.fp->off == 8 && l.pc->off == 32);
}

/* QEMU 7.2's i386-64bit.xml comments out cs_base..es_base, which its `g` reply does not hold:
 * a commented-out register takes no room, or gs_base would be read from cr2's bytes. */
static void test_comments(void)
{
	static struct layout l;
	CHECK(arch_layout_xml(&l, "<architecture>i386:x86-64</architecture>"
			      "<reg name=\"rbp\" bitsize=\"64\"/><reg name=\"rsp\" bitsize=\"64\"/>"
			      "<reg name=\"rip\" bitsize=\"64\"/><reg name=\"gs\" bitsize=\"32\"/>"
			      "  <!--reg name=\"cs_base\" bitsize=\"64\" type=\"int64\"/>\n"
			      "  <reg name=\"ss_base\" bitsize=\"64\" type=\"int64\"/>\n"
			      "  <reg name=\"es_base\" bitsize=\"64\" type=\"int64\"/-->\n"
			      "<reg name=\"fs_base\" bitsize=\"64\"/><reg name=\"gs_base\" bitsize=\"64\"/>"
			      "<!-- <reg name=\"x\" bitsize=\"8\"/> --><reg name=\"k_gs_base\" bitsize=\"64\"/>") == 0);
	CHECK(l.nregs == 7);
	CHECK(!arch_find_reg(&l, "ss_base") && !arch_find_reg(&l, "es_base") && !arch_find_reg(&l, "x"));
	CHECK(arch_find_reg(&l, "fs_base")->off == 28 && arch_find_reg(&l, "gs_base")->off == 36 &&
	      arch_find_reg(&l, "k_gs_base")->off == 44);
	/* An unterminated comment hides the rest. */
	CHECK(arch_layout_xml(&l, "<architecture>i386:x86-64</architecture><reg name=\"rbp\" bitsize=\"64\"/>"
			      "<reg name=\"rsp\" bitsize=\"64\"/><reg name=\"rip\" bitsize=\"64\"/>"
			      "<!-- <reg name=\"gs_base\" bitsize=\"64\"/>") == 0);
	CHECK(l.nregs == 3 && !arch_find_reg(&l, "gs_base"));
}

/* QEMU's aarch64 descriptions, as gdbsample receives them (includes inlined): qemu-system-aarch64
 * -M virt,gic-version=3 -cpu max, 7.2 (core, SVE, 197 system registers) and 10.0 (core, SVE,
 * pauth, 214 system registers). The `g` reply is the core feature only: 268 bytes. */
static void test_aarch64_qemu(const char *file, int nregs, int tpidr_num)
{
	static struct layout l;
	uint8_t *xml;
	size_t len;
	char err[160], path[256];
	snprintf(path, sizeof path, "%s/%s", TEST_DATA, file);
	CHECK(file_read(path, 1 << 20, &xml, &len, err, sizeof err) == 0);
	if (!xml) {
		fprintf(stderr, "test_arch: %s\n", err);
		return;
	}
	char *z = realloc(xml, len + 1);
	if (!z) { free(xml); return; }
	z[len] = 0;
	CHECK(arch_layout_xml(&l, z) == 0);
	free(z);
	CHECK(l.arch && l.arch->id == ARCH_AARCH64 && l.nregs == nregs);
	CHECK(l.fp->off == 232 && l.lr && l.lr->off == 240 && l.sp->off == 248 && l.pc->off == 256);
	CHECK(l.flags && l.flags->off == 264 && l.flags->size == 4 && l.need == 264);
	/* TPIDR_EL1, the per-CPU base, is a system register: outside `g`, read by its number */
	CHECK(l.pcpu && !strcmp(l.pcpu->name, "TPIDR_EL1") && l.pcpu->num == tpidr_num && l.pcpu->off >= 268);
	CHECK(!l.pcpu_alt);
	CHECK(arch_find_reg(&l, "ID_AA64MMFR0_EL1") != NULL); /* 16 characters: whole */
	uint8_t g[268] = { 0 };
	g[264] = 0xc5; g[265] = 0x03; /* cpsr 0x3c5: EL1h, DAIF masked */
	CHECK(arch_is_user(&l, g, sizeof g) == 0 && arch_irqs_off(&l, g, sizeof g) == 1);
	g[264] = 0x09; g[265] = 0;    /* EL2h: still the kernel, interrupts on */
	CHECK(arch_is_user(&l, g, sizeof g) == 0 && arch_irqs_off(&l, g, sizeof g) == 0);
	g[264] = 0x00;                /* EL0t: user, whatever the pc */
	CHECK(arch_is_user(&l, g, sizeof g) == 1);
	CHECK(arch_is_user(&l, g, 264) == -1); /* a reply without cpsr: unknown */
	/* pointer authentication's masks: QEMU 10.0's pauth_v2 feature; none on 7.2 */
	const struct reg *cm = arch_find_reg(&l, "pauth_cmask_high");
	CHECK(tpidr_num == 213 ? !cm : cm && cm->size == 8 && cm->off >= 268);
}

/* QEMU 7.2's riscv64 description (-M virt -cpu rv64,sscofpmf=true; includes inlined): the `g`
 * reply is x0..x31 and pc (264 bytes); priv, the privilege level (org.gnu.gdb.riscv.virtual), is
 * register 65 after the FPU's 32 -- `p41` answered 3 (M-mode) at reset -- and sstatus (322: the
 * CSR feature's base 66 + 0x100) are read with `p`. */
static void test_riscv64_qemu(void)
{
	static struct layout l;
	uint8_t *xml;
	size_t len;
	char err[160], path[256];
	snprintf(path, sizeof path, "%s/qemu-7.2-riscv64.xml", TEST_DATA);
	CHECK(file_read(path, 1 << 20, &xml, &len, err, sizeof err) == 0);
	if (!xml) {
		fprintf(stderr, "test_arch: %s\n", err);
		return;
	}
	char *z = realloc(xml, len + 1);
	if (!z) { free(xml); return; }
	z[len] = 0;
	CHECK(arch_layout_xml(&l, z) == 0);
	free(z);
	CHECK(l.arch && l.arch->id == ARCH_RISCV64);
	CHECK(l.pc->off == 256 && l.sp->off == 16 && l.fp->off == 64 && l.lr && l.lr->off == 8 && l.need == 264);
	CHECK(l.mode && !strcmp(l.mode->name, "priv") && l.mode->num == 65 && l.mode->off >= 264);
	CHECK(l.pcpu && !strcmp(l.pcpu->name, "tp") && l.pcpu->off == 32);
	CHECK(l.dwarf[8] == l.fp && l.dwarf[1] == l.lr && !l.dwarf[32]);
	CHECK(l.flags && !strcmp(l.flags->name, "sstatus") && l.flags->num == 322 && l.flags->off >= 264);
	const struct reg *sepc = arch_find_reg(&l, "sepc");
	CHECK(sepc && sepc->num == 387 && l.dwarf[33] == sepc); /* a trap entry's pc until stored */
	uint8_t g[264] = { 0 };
	CHECK(arch_is_user(&l, g, sizeof g) == -1); /* priv is not in `g` */
	CHECK(arch_is_user_mode(&l, 0) == 1 && arch_is_user_mode(&l, 1) == 0 && arch_is_user_mode(&l, 3) == 0);
	CHECK(arch_is_firmware_mode(&l, 3) == 1 && arch_is_firmware_mode(&l, 1) == 0 && arch_is_firmware_mode(&l, 0) == 0);
	CHECK(arch_irqs_off(&l, g, sizeof g) == -1); /* sstatus.SIE: a CSR, read with `p` */
	CHECK(arch_irqs_off_flags(&l, 0x2) == 0 && arch_irqs_off_flags(&l, 0x8000000200006020ull) == 1);
}

/* Pointer-authentication codes come off kernel return addresses: the mask is the top bits the
 * text shares with bit 63 (bit 55, which picks the half, never in it). Literals from Debian's
 * 6.1 arm64 kernel under -cpu max: code at ffffb96b43fab5ec, signed f69ab96b43fab5ec. */
static void test_pac(void)
{
	const struct arch *a = arch_find("aarch64"), *x = arch_find("x86_64");
	uint64_t m = arch_pac_mask(a, 0xffffb96b42e10000ull, 0xffffb96b43b00000ull);
	CHECK(m == 0xff7f800000000000ull); /* VA bits 47..0 are address */
	CHECK(uw_strip(m, 0xf69ab96b43fab5ecull) == 0xffffb96b43fab5ecull);
	CHECK(uw_strip(m, 0xffffb96b43fab5ecull) == 0xffffb96b43fab5ecull); /* unsigned: unchanged */
	CHECK(uw_strip(m, 0x0011b96b43fab5ecull) == 0x0000396b43fab5ecull); /* a lower-half pointer */
	/* our kernel, linked low (0x40080000): its code pointers have zeros up there */
	uint64_t low = arch_pac_mask(a, 0x40080000ull, 0x40100000ull);
	CHECK(low == (~0ull << 31 & ~(1ull << 55)));
	CHECK(uw_strip(low, 0x0035000040080abcull) == 0x40080abcull);
	CHECK(uw_strip(low, 0x40080abcull) == 0x40080abcull);
	CHECK(arch_pac_mask(x, 0xffffffff81000000ull, 0xffffffff82000000ull) == 0); /* no PAC on x86 */
	CHECK(arch_pac_mask(a, 0x7fff0000ull, 0xffff000000000000ull) == 0);          /* spans both halves */
	CHECK(arch_pac_mask(a, 0x10, 0x10) == 0);                                    /* empty */
	CHECK(uw_strip(0, 0xf69ab96b43fab5ecull) == 0xf69ab96b43fab5ecull);
	/* the stub's mask (pauth_cmask_high: bits 63..48 with 48-bit VAs, TBI off) is taken when
	 * it covers no bit of a text address; one reaching into the addresses is refused */
	CHECK(arch_pac_mask_stub(0xffff000000000000ull, 0xffffb96b42e10000ull, 0xffffb96b43b00000ull) ==
	      0xffff000000000000ull);
	CHECK(arch_pac_mask_stub(0xffffc00000000000ull, 0xffffb96b42e10000ull, 0xffffb96b43b00000ull) == 0);
	CHECK(arch_pac_mask_stub(0x007f000000000000ull, 0x40080000ull, 0x40100000ull) == 0x007f000000000000ull);
	CHECK(arch_pac_mask_stub(0, 0x40080000ull, 0x40100000ull) == 0);
	CHECK(uw_strip(0xffff000000000000ull, 0xf69ab96b43fab5ecull) == 0xffffb96b43fab5ecull);
}

void test_arch(void)
{
	test_pac();
	test_aarch64_qemu("qemu-7.2-aarch64-max.xml", 283, 213);
	test_aarch64_qemu("qemu-10.0-aarch64-max.xml", 304, 192);
	test_riscv64_qemu();
	test_x86();
	test_comments();
	test_defaults();
	test_errors();
}
