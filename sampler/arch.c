/* SPDX-License-Identifier: MIT */
/* arch.c: per-architecture register layout table and the target.xml parser that fills it. */
#include "arch.h"
#include "err.h"
#include "rsp.h"
#include <stdlib.h>

/*
 * Fallback register lists, in target.xml form, for stubs that offer no qXfer:features.
 * x86_64 follows QEMU's gdb-xml/i386-64bit.xml; aarch64 and riscv64 their core feature sets.
 */
#define R64(n) "<reg name=\"" n "\" bitsize=\"64\"/>"
#define R32(n) "<reg name=\"" n "\" bitsize=\"32\"/>"
static const char x86_64_regs[] =
	"<architecture>i386:x86-64</architecture>"
	R64("rax") R64("rbx") R64("rcx") R64("rdx") R64("rsi") R64("rdi") R64("rbp") R64("rsp")
	R64("r8") R64("r9") R64("r10") R64("r11") R64("r12") R64("r13") R64("r14") R64("r15")
	R64("rip") R32("eflags") R32("cs") R32("ss") R32("ds") R32("es") R32("fs") R32("gs")
	R64("fs_base") R64("gs_base") R64("k_gs_base"); /* QEMU's order (the per-CPU base: task.c) */
static const char aarch64_regs[] =
	"<architecture>aarch64</architecture>"
	R64("x0") R64("x1") R64("x2") R64("x3") R64("x4") R64("x5") R64("x6") R64("x7")
	R64("x8") R64("x9") R64("x10") R64("x11") R64("x12") R64("x13") R64("x14") R64("x15")
	R64("x16") R64("x17") R64("x18") R64("x19") R64("x20") R64("x21") R64("x22") R64("x23")
	R64("x24") R64("x25") R64("x26") R64("x27") R64("x28") R64("x29") R64("x30")
	R64("sp") R64("pc") R32("cpsr");
static const char riscv64_regs[] =
	"<architecture>riscv:rv64</architecture>"
	R64("zero") R64("ra") R64("sp") R64("gp") R64("tp") R64("t0") R64("t1") R64("t2")
	R64("fp") R64("s1") R64("a0") R64("a1") R64("a2") R64("a3") R64("a4") R64("a5") R64("a6") R64("a7")
	R64("s2") R64("s3") R64("s4") R64("s5") R64("s6") R64("s7") R64("s8") R64("s9") R64("s10") R64("s11") 
	R64("t3") R64("t4") R64("t5") R64("t6") R64("pc");

/* Register names by DWARF number (see unwind.c for the ABIs). */
static const char *const x86_64_dwarf[] = {
	"rax", "rdx", "rcx", "rbx", "rsi", "rdi", "rbp", "rsp", "r8", "r9", "r10", "r11", "r12", "r13",
	"r14", "r15", "rip",
};
static const char *const aarch64_dwarf[] = {
	"x0", "x1", "x2", "x3", "x4", "x5", "x6", "x7", "x8", "x9", "x10", "x11", "x12", "x13", "x14",
	"x15", "x16", "x17", "x18", "x19", "x20", "x21", "x22", "x23", "x24", "x25", "x26", "x27", "x28",
	"x29", "x30", "sp", "pc", "ELR_EL1", /* 33, ELR_mode: a system register, outside `g` */
};
static const char *const riscv64_dwarf[] = {
	"zero", "ra", "sp", "gp", "tp", "t0", "t1", "t2", "fp", "s1", "a0", "a1", "a2", "a3", "a4", "a5",
	"a6", "a7", "s2", "s3", "s4", "s5", "s6", "s7", "s8", "s9", "s10", "s11", "t3", "t4", "t5", "t6",
	NULL,   /* 32: column 64, the alternate return column of a trap frame (no register of its own) */
	"sepc", /* 33: DWARF 4096 + 0x141, outside `g`: read with `p` when a walk needs it */
};

/* ELF machine numbers (System V gABI). */
#define EM_X86_64_ 62
#define EM_AARCH64_ 183
#define EM_RISCV_ 243

/* What a mode or flags register's value says. */
static int x86_is_user(uint64_t cs) { return (cs & 3) == 3; }              /* CPL: cs's low two bits */
static int a64_is_user(uint64_t cpsr) { return ((cpsr >> 2) & 3) == 0; }  /* PSTATE.EL == 0 */
static int rv_is_user(uint64_t priv) { return (priv & 3) == 0; }          /* QEMU's priv: 0 U, 1 S, 3 M */
static int rv_is_firmware(uint64_t priv) { return (priv & 3) == 3; }      /* M-mode: OpenSBI's */
static int x86_irqs_off(uint64_t f) { return !(f & 0x200); }  /* EFLAGS.IF, bit 9 (SDM vol 1, 3.4.3) */
static int a64_irqs_off(uint64_t f) { return !!(f & 0x80); }  /* PSTATE.I, bit 7 masks IRQs */
static int rv_irqs_off(uint64_t f) { return !(f & 0x2); }     /* sstatus.SIE, bit 1 (S-mode code) */

/*
 * DWARF numbering: x86_64 psABI 3.6.2 (0 rax, 1 rdx, 2 rcx, 3 rbx, 4 rsi, 5 rdi, 6 rbp, 7 rsp,
 * 8-15 r8-r15, 16 return address); AArch64 DWARF ABI (0-30 x0-x30, 31 sp, 32 pc, 33 ELR_mode;
 * the return address column is x30, an exception entry's 32); RISC-V ELF psABI (0-31 x0-x31:
 * 1 ra, 2 sp, 8 s0/fp; 64 the alternate frame return column, a trap frame's, kept in slot 32;
 * 4096 + 0x141 the CSR sepc, where a trap entry's CFI keeps the pc until it is stored: slot 33).
 */
const struct uw_arch uw_arch_x86_64 = { .sp = 7, .fp = 6, .ra = 16, .lr = -1, .fp_prev = 0, .fp_ret = 8,
					.nregs = 17, .is_x86 = 1 };
const struct uw_arch uw_arch_aarch64 = { .sp = 31, .fp = 29, .ra = 30, .lr = 30, .fp_prev = 0, .fp_ret = 8,
					 .nregs = 34, .rec_low = 1 };
static const struct uw_alias riscv64_alias[] = { { 64, 32 }, { 4096 + 0x141, 33 } };
const struct uw_arch uw_arch_riscv64 = { .sp = 2, .fp = 8, .ra = 1, .lr = 1, .fp_prev = -16, .fp_ret = -8,
					 .nregs = 34, .nalias = 2, .alias = riscv64_alias };

/* Every architecture: what gdbsample knows of it, in one entry. Adding one adds an entry here
 * (and its instruction decoders in insn.c). */
static const struct arch arches[] = {
	{
		.id = ARCH_X86_64, .name = "x86_64", .gdb_name = "i386:x86-64", .elf_machine = EM_X86_64_,
		.pc = "rip", .sp = "rsp", .fp = "rbp", .flags = "eflags", .mode = "cs",
		.fallback = x86_64_regs, .uw = &uw_arch_x86_64, .dwarf = x86_64_dwarf,
		.pcpu = "gs_base", .pcpu_alt = "k_gs_base", /* k_gs_base after swapgs (task.c) */
		.is_user = x86_is_user, .irqs_off = x86_irqs_off,
		.pc_kind = x86_pc_kind, .idle = x86_idle, /* no after_call: x86 cannot decode backwards */
		.elr = -1,
	},
	{
		/* QEMU's aarch64 `g` holds the core feature only (x0..cpsr, 268 bytes); the system
		 * registers (org.qemu.gdb.arm.sys.regs, TPIDR_EL1 among them) are numbered after the
		 * SVE or FPU and pauth features, at numbers that differ between QEMU versions and CPU
		 * models (7.2 -cpu max: TPIDR_EL1 is 213; 10.0: 192), and are read one by one with `p`. */
		.id = ARCH_AARCH64, .name = "aarch64", .gdb_name = "aarch64", .elf_machine = EM_AARCH64_,
		.pc = "pc", .sp = "sp", .fp = "x29", .lr = "x30", .flags = "cpsr", .mode = "cpsr",
		.fallback = aarch64_regs, .uw = &uw_arch_aarch64, .dwarf = aarch64_dwarf,
		.pcpu = "TPIDR_EL1", .pcpu_by_p = 1,
		.is_user = a64_is_user, .irqs_off = a64_irqs_off,
		.pc_kind = a64_pc_kind, .idle = a64_idle, .after_call = a64_after_call,
		.vectors = "vectors", .elr = 33, .switch_stacks = 1, .pac = 1,
	},
	{
		/* QEMU's riscv64 `g` is x0..x31 and pc; the privilege level is `priv` of the
		 * org.gnu.gdb.riscv.virtual feature and sstatus (SIE: interrupts on in S-mode) a CSR,
		 * both outside `g`: read with `p` in each sample's first trip. */
		.id = ARCH_RISCV64, .name = "riscv64", .gdb_name = "riscv:rv64", .elf_machine = EM_RISCV_,
		.pc = "pc", .sp = "sp", .fp = "fp", .fp_alt = "s0", .lr = "ra", .mode = "priv", .mode_by_p = 1,
		.flags = "sstatus", .flags_by_p = 1,
		.fallback = riscv64_regs, .uw = &uw_arch_riscv64, .dwarf = riscv64_dwarf,
		.pcpu = "tp", /* our kernel's struct cpu (Linux keeps current itself there: session.c) */
		.is_user = rv_is_user, .is_firmware = rv_is_firmware, .irqs_off = rv_irqs_off,
		.idle = rv_idle, .after_call = rv_after_call, /* no pc_kind: CFI covers prologues */
		.elr = -1,
	},
};

const struct arch *arch_by_machine(int machine)
{
	for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
		if (arches[i].elf_machine == machine) return &arches[i];
	return NULL;
}

const struct arch *arch_find(const char *name)
{
	for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
		if (!strcmp(name, arches[i].name) || !strcmp(name, arches[i].gdb_name)) return &arches[i];
	return NULL;
}

/* Copy attribute `attr` of the tag starting at tag (ending at '>') into out; 0 if found. */
static int attr(const char *tag, const char *name, char *out, size_t cap)
{
	const char *end = strchr(tag, '>');
	size_t nlen = strlen(name);
	for (const char *p = tag; p && p < end; p++) {
		if (strncmp(p, name, nlen) || p[nlen] != '=' || (p[-1] != ' ' && p[-1] != '\t' && p[-1] != '\n'))
			continue;
		char q = p[nlen + 1];
		const char *v = p + nlen + 2, *ve = strchr(v, q);
		if ((q != '"' && q != '\'') || !ve || ve > end || (size_t)(ve - v) >= cap) return -1;
		memcpy(out, v, (size_t)(ve - v));
		out[ve - v] = 0;
		return 0;
	}
	return -1;
}

const struct reg *arch_find_reg(const struct layout *l, const char *name)
{
	if (!name) return NULL;
	for (int i = 0; i < l->nregs; i++)
		if (!strcmp(l->regs[i].name, name)) return &l->regs[i];
	return NULL;
}

/* The next "<reg" at or after p outside XML comments: QEMU 7.2's i386-64bit.xml comments out
 * cs_base..es_base, which its `g` reply does not hold. */
static const char *next_reg(const char *p)
{
	for (;;) {
		const char *r = strstr(p, "<reg"), *c = strstr(p, "<!--");
		if (!c || (r && r < c)) return r;
		const char *end = strstr(c + 4, "-->");
		if (!end) return NULL; /* an unterminated comment runs to the end */
		p = end + 3;
	}
}

/*
 * target.xml (GDB manual, "Target Descriptions"): <architecture>NAME</architecture> and
 * <reg name="N" bitsize="B" [regnum="R"] .../> in order; the `g` reply holds registers by
 * ascending number, each bitsize/8 bytes, numbers continuing from the previous register.
 * QEMU numbers every register it lists, so we lay them out in that order.
 */
int arch_layout_xml(struct layout *l, const char *xml)
{
	char buf[64];
	int next = 0, off = 0;
	memset(l, 0, sizeof *l);
	const char *a = strstr(xml, "<architecture>");
	if (a) {
		a += strlen("<architecture>");
		const char *e = strchr(a, '<');
		size_t n = e ? (size_t)(e - a) : 0;
		if (n >= sizeof buf) n = sizeof buf - 1;
		memcpy(buf, a, n);
		buf[n] = 0;
		l->arch = arch_find(buf);
		if (!l->arch) {
			ERR_SET(l, ERR_PROTO, "unsupported architecture %s", buf);
			return -1;
		}
	}
	for (const char *p = next_reg(xml); p; p = next_reg(p + 4)) {
		if (p[4] != ' ' && p[4] != '\t' && p[4] != '\n') continue;
		if (l->nregs == ARCH_MAX_REGS) {
			ERR_SET(l, ERR_PROTO, "more than %d registers in target.xml", ARCH_MAX_REGS);
			return -1;
		}
		struct reg *r = &l->regs[l->nregs];
		char name[256];
		if (attr(p, "name", name, sizeof name) || attr(p, "bitsize", buf, sizeof buf)) {
			ERR_SET(l, ERR_PROTO, "target.xml: <reg> without name or bitsize");
			return -1;
		}
		snprintf(r->name, sizeof r->name, "%s", name);
		char *e;
		long bits = strtol(buf, &e, 10);
		if (*e || bits <= 0 || bits > 4096 || bits % 8) { /* a register is whole bytes, and sane */
			ERR_SET(l, ERR_PROTO, "target.xml: register %.15s has bitsize %.20s", r->name, buf);
			return -1;
		}
		r->size = (int)(bits / 8);
		if (!attr(p, "regnum", buf, sizeof buf)) {
			long rn = strtol(buf, &e, 10);
			if (*e || rn < 0 || rn > 4096) {
				ERR_SET(l, ERR_PROTO, "target.xml: register %.15s has regnum %.20s", r->name, buf);
				return -1;
			}
			next = (int)rn;
		}
		if (next > 4096) {
			ERR_SET(l, ERR_PROTO, "target.xml: more register numbers than any architecture has");
			return -1;
		}
		r->num = next++;
		l->nregs++;
	}
	/* Offsets by ascending register number (they normally already are in order). */
	for (int want = 0, done = 0; done < l->nregs; want++) {
		for (int i = 0; i < l->nregs; i++)
			if (l->regs[i].num == want) {
				l->regs[i].off = off;
				off += l->regs[i].size;
				done++;
			}
		if (want > 4096) break;
	}
	l->gsize = off;
	if (!l->arch) {
		ERR_SET(l, ERR_PROTO, "target.xml names no architecture");
		return -1;
	}
	l->pc = arch_find_reg(l, l->arch->pc);
	l->sp = arch_find_reg(l, l->arch->sp);
	l->fp = arch_find_reg(l, l->arch->fp);
	if (!l->fp) l->fp = arch_find_reg(l, l->arch->fp_alt);
	l->lr = arch_find_reg(l, l->arch->lr);
	l->flags = arch_find_reg(l, l->arch->flags);
	l->mode = arch_find_reg(l, l->arch->mode);
	l->pcpu = arch_find_reg(l, l->arch->pcpu);
	l->pcpu_alt = arch_find_reg(l, l->arch->pcpu_alt);
	for (int d = 0; d < l->arch->uw->nregs; d++) {
		l->dwarf[d] = arch_find_reg(l, l->arch->dwarf[d]);
		if (!l->dwarf[d] && d == l->arch->uw->fp) l->dwarf[d] = l->fp; /* riscv64: s0 */
	}
	if (!l->pc || !l->sp || !l->fp) {
		ERR_SET(l, ERR_PROTO, "target.xml lacks %s/%s/%s", l->arch->pc, l->arch->sp, l->arch->fp);
		return -1;
	}
	const struct reg *must[3] = { l->pc, l->sp, l->fp };
	for (int i = 0; i < 3; i++)
		if (must[i]->off + must[i]->size > l->need) l->need = must[i]->off + must[i]->size;
	return 0;
}

int arch_layout_default(struct layout *l, const struct arch *a)
{
	return arch_layout_xml(l, a->fallback);
}

uint64_t arch_reg(const struct reg *r, const uint8_t *g, int len)
{
	if (!r || r->off + r->size > len) return 0;
	return rsp_le(g + r->off, r->size > 8 ? 8 : r->size);
}

void arch_dwarf_regs(const struct layout *l, const uint8_t *g, int len, struct uw_regs *out)
{
	out->valid = 0;
	for (int d = 0; d < l->arch->uw->nregs; d++) {
		const struct reg *r = l->dwarf[d];
		out->r[d] = 0;
		if (!r || r->off + r->size > len) continue;
		out->r[d] = arch_reg(r, g, len);
		out->valid |= 1ull << d;
	}
}

int arch_is_user(const struct layout *l, const uint8_t *g, int len)
{
	if (!l->mode || l->arch->mode_by_p || l->mode->off + l->mode->size > len || !l->arch->is_user) return -1;
	return l->arch->is_user(arch_reg(l->mode, g, len));
}

int arch_is_user_mode(const struct layout *l, uint64_t mode)
{
	return l->mode && l->arch->is_user ? l->arch->is_user(mode) : -1;
}

int arch_is_firmware_mode(const struct layout *l, uint64_t mode)
{
	if (!l->arch->is_firmware) return 0;
	return l->mode ? l->arch->is_firmware(mode) : -1;
}

int arch_irqs_off(const struct layout *l, const uint8_t *g, int len)
{
	if (!l->flags || l->arch->flags_by_p || l->flags->off + l->flags->size > len || !l->arch->irqs_off) return -1;
	return l->arch->irqs_off(arch_reg(l->flags, g, len));
}

int arch_irqs_off_flags(const struct layout *l, uint64_t flags)
{
	return l->flags && l->arch->irqs_off ? l->arch->irqs_off(flags) : -1;
}

/*
 * Pointer authentication (Arm ARM D8.8) puts its code in the bits of a pointer above the
 * virtual address size (bit 55 excepted: it picks the half), so a signed return address into
 * the kernel differs from the real one only there. QEMU 7.2's gdbstub offers no
 * org.gnu.gdb.aarch64.pauth registers (pauth_cmask) to say which bits those are; the kernel's
 * text says it too: its addresses agree with bit 63 in every bit above the address size, so
 * those bits -- the top run that lo and hi - 1 share with bit 63 -- are the mask. Restoring them
 * never changes a real address in the text.
 */
uint64_t arch_pac_mask(const struct arch *a, uint64_t lo, uint64_t hi)
{
	if (!a || !a->pac || hi <= lo) return 0;
	uint64_t top = lo >> 63 ? ~0ull : 0, last = hi - 1;
	if ((last >> 63) != (lo >> 63)) return 0;
	int n = 0; /* leading bits of both equal to bit 63 */
	while (n < 64 && (((lo ^ top) | (last ^ top)) >> (63 - n) & 1) == 0) n++;
	if (n < 9) return 0; /* no room for a code: not a kernel layout pointer authentication uses */
	uint64_t mask = ~0ull << (64 - n);
	return mask & ~(1ull << 55);
}

uint64_t arch_pac_mask_stub(uint64_t cmask, uint64_t lo, uint64_t hi)
{
	if (!cmask || hi <= lo) return 0;
	uint64_t top = lo >> 63 ? ~0ull : 0, last = hi - 1;
	/* every bit of the mask is, in both ends of the text, the same as bit 63: no address bit */
	if (((lo ^ top) | (last ^ top)) & cmask & ~(1ull << 55)) return 0;
	return cmask;
}
