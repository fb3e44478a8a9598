/* SPDX-License-Identifier: MIT */
/* insn.c: what the kernel's instructions say about a pc -- x86_64 and aarch64: where it sits in its
 * function's frame setup, whether the vCPU is idle there, whether a return address follows a call. */
#include "insn.h"
#include "arch.h"
#include <elf.h>

/* ---- x86_64 (Intel SDM vol 2) ---- */

#define OP_PUSH_RBP 0x55
#define OP_RET 0xc3
#define OP_HLT 0xf4
static const uint8_t endbr64[4] = { 0xf3, 0x0f, 0x1e, 0xfa };

/* At a function's first instruction (after endbr64) or at `ret` the return address is at [rsp];
 * right after `push %rbp` at [rsp + 8]; elsewhere rbp holds this function's frame. */
enum unwind_pc x86_pc_kind(insn_byte_fn byte, const void *arg, uint64_t fn, int have_fn, uint64_t pc, int *adj)
{
	*adj = 0;
	if (byte(arg, pc) == OP_RET) return PC_AT_ENTRY;
	if (!have_fn) return PC_BODY;
	uint64_t off = pc - fn, i = 0;
	if (off == 0) return PC_AT_ENTRY;
	int e = 1;
	for (int k = 0; k < 4; k++) e &= byte(arg, fn + (uint64_t)k) == endbr64[k];
	if (e) i = 4;
	if (byte(arg, fn + i) != OP_PUSH_RBP) return PC_BODY;
	if (off == i) return PC_AT_ENTRY;
	if (off == i + 1) return PC_AFTER_PUSH;
	return PC_BODY;
}

/* ---- aarch64 (Arm ARM C4, "A64 Instruction Set Encoding") ---- */

#define A64_RET 0xd65f03c0u    /* ret (x30) */
#define A64_RETAA 0xd65f0bffu  /* ret, authenticating x30 with key A */
#define A64_RETAB 0xd65f0fffu  /* ... key B */
#define A64_WFI 0xd503207fu    /* HINT #3 */
#define A64_WFE 0xd503205fu    /* HINT #2 */
#define A64_SCAN 16            /* instructions a prologue or epilogue scan looks at */
#define A64_LEAF_SCAN 512      /* instructions a frameless-leaf scan looks at */

/* The little-endian word at addr; -1 if any byte is unknown. */
static int64_t word(insn_byte_fn byte, const void *arg, uint64_t addr)
{
	uint32_t w = 0;
	for (int k = 3; k >= 0; k--) {
		int b = byte(arg, addr + (uint64_t)k);
		if (b < 0) return -1;
		w = w << 8 | (uint32_t)b;
	}
	return w;
}

int a64_is_idle(uint32_t w)
{
	return w == A64_WFI || w == A64_WFE || (w & 0xffffffc0u) == 0xd5031000u; /* wfet, wfit Xt */
}

int a64_is_call(uint32_t w)
{
	return (w & 0xfc000000u) == 0x94000000u ||  /* bl imm26 */
	       (w & 0xfffffc1fu) == 0xd63f0000u ||  /* blr Xn */
	       (w & 0xfefff800u) == 0xd63f0800u;    /* blraa, blrab, blraaz, blrabz */
}

int a64_is_ret(uint32_t w)
{
	return w == A64_RET || w == A64_RETAA || w == A64_RETAB;
}

/* One of the instructions an arm64 Linux exception vector runs before its branch to the handler
 * (kernel_ventry): sub sp, #imm; add/sub sp and x0 with each other (the VMAP stack's overflow
 * check); tbz/tbnz on x0; b; and, in EL0 entries, x30 taken back from TPIDRRO_EL0 (or zeroed) for
 * the KPTI trampoline. None reads or writes memory, nor touches x29 or (from the kernel) x30: at
 * such a pc the interrupted code's registers are all intact but sp and x0. */
int a64_vector_prologue(uint32_t w)
{
	return (w & 0xff8003ff) == 0xd10003ff ||                    /* sub sp, sp, #imm{, lsl 12} */
	       w == 0x8b2063ff || w == 0xcb2063e0 || w == 0xcb2063ff || /* add sp,sp,x0; sub x0,sp,x0; sub sp,sp,x0 */
	       (w & 0x7e00001f) == 0x36000000 ||                    /* tbz/tbnz x0/w0 */
	       (w & 0xfc000000) == 0x14000000 ||                    /* b */
	       w == 0xd53bd07e || w == 0xd51bd07f || w == 0xaa1f03fe; /* mrs x30, tpidrro_el0; msr tpidrro_el0, xzr; mov x30, xzr */
}

/* Any change of control flow: b, bl, b.cond, cbz/cbnz, tbz/tbnz, br/blr/ret/eret, svc/brk. */
static int a64_is_branch(uint32_t w)
{
	return (w & 0x7c000000u) == 0x14000000u || (w & 0xfe000000u) == 0x54000000u ||
	       (w & 0x7e000000u) == 0x34000000u || (w & 0x7e000000u) == 0x36000000u ||
	       (w & 0xfe000000u) == 0xd6000000u || (w & 0xff000000u) == 0xd4000000u;
}

/* What an instruction does to the frame: the bits, and *d the bytes it adds to sp (E_SP). */
enum {
	E_BRANCH = 1,     /* changes control flow */
	E_SP = 2,         /* moves sp by a known amount (*d) */
	E_SP_UNKNOWN = 4, /* sets sp some other way (mov sp, x29; sub sp, sp, x9) */
	E_FPLR = 8,       /* may write x29 or x30 */
	E_FRAME = 16,     /* add x29, sp, #imm (mov x29, sp): the frame record is this function's */
	E_STP_REC = 32,   /* stp x29, x30, [sp...]: the frame record stored */
	E_LDP_REC = 64,   /* ldp x29, x30, [sp...]: the caller's x29 and the return address back */
};

static int64_t sext(uint32_t v, int bits)
{
	return (int64_t)((uint64_t)v << (64 - bits)) >> (64 - bits);
}

static int a64_effect(uint32_t w, int64_t *d)
{
	int rd = (int)(w & 31), rn = (int)((w >> 5) & 31), f = 0;
	*d = 0;
	if (a64_is_branch(w)) return E_BRANCH;
	if ((w & 0xfffff01fu) == 0xd503201fu) return 0; /* hint: nop, bti, paciasp, autiasp ... */
	if ((w & 0x1f800000u) == 0x11000000u) {          /* add/sub (immediate) */
		int sf = (int)(w >> 31), sub = (int)((w >> 30) & 1), s = (int)((w >> 29) & 1);
		int64_t imm = (int64_t)((w >> 10) & 0xfff) << (((w >> 22) & 1) ? 12 : 0);
		if (!s && rd == 31) {
			if (rn != 31 || !sf) return E_SP_UNKNOWN;
			*d = sub ? -imm : imm;
			return E_SP;
		}
		if (!s && sf && !sub && rd == 29 && rn == 31) return E_FRAME;
		return rd == 29 || rd == 30 ? E_FPLR : 0;
	}
	if ((w & 0x1fe00000u) == 0x0b200000u) /* add/sub (extended register): Rd 31 is sp */
		return !((w >> 29) & 1) && rd == 31 ? E_SP_UNKNOWN : rd == 29 || rd == 30 ? E_FPLR : 0;
	if ((w & 0x1f800000u) == 0x12000000u && rd == 31 && (w >> 29 & 3) != 3)
		return E_SP_UNKNOWN; /* and/orr/eor (immediate) into sp */
	if (((w >> 27) & 7) == 5) { /* load/store pair: opc 101 V idx L imm7 Rt2 Rn Rt */
		int opc = (int)(w >> 30), v = (int)((w >> 26) & 1), idx = (int)((w >> 23) & 7);
		int load = (int)((w >> 22) & 1), rt2 = (int)((w >> 10) & 31);
		int64_t scale = v ? 4 << opc : opc == 2 ? 8 : 4;
		if (idx == 1 || idx == 3) { /* post- or pre-index: writes the base back */
			if (rn == 31) {
				*d = sext((w >> 15) & 0x7f, 7) * scale;
				f |= E_SP;
			}
			if (rn == 29 || rn == 30) f |= E_FPLR;
		}
		if (!v && load && (rd == 29 || rd == 30 || rt2 == 29 || rt2 == 30)) f |= E_FPLR;
		if (!v && opc == 2 && rn == 31 && rd == 29 && rt2 == 30 && idx != 0) f |= load ? E_LDP_REC : E_STP_REC;
		return f;
	}
	if ((w & 0x3b200400u) == 0x38000400u) { /* load/store register, pre- or post-index imm9 */
		int v = (int)((w >> 26) & 1), opc = (int)((w >> 22) & 3);
		if (rn == 31) {
			*d = sext((w >> 12) & 0x1ff, 9);
			f |= E_SP;
		}
		if (rn == 29 || rn == 30 || (!v && opc && (rd == 29 || rd == 30))) f |= E_FPLR;
		return f;
	}
	/* Anything else naming x29 or x30 as its first register may write it (a store may not, but
	 * nothing in a compiler's prologue or epilogue stores them one by one). */
	return rd == 29 || rd == 30 ? E_FPLR : 0;
}

/*
 * The prologue: from the function's start to pc, over `sub sp, sp, #N`, `stp x29, x30,
 * [sp, #-N]!` (or `[sp, #off]`), pushes of other registers and hints, to `mov x29, sp` (`add x29,
 * sp, #off`). Until that has run the return address is still in x30 and x29 is the caller's;
 * *adj sums what sp moved. A branch, an unknown change to sp, or a write of x29/x30 before it
 * means the function's frame is not set up this way: the body's rule (PC_BODY). A frameless
 * leaf's straight first instructions are PC_AT_ENTRY too, which is what they are.
 */
static enum unwind_pc a64_prologue(insn_byte_fn byte, const void *arg, uint64_t fn, uint64_t pc, int *adj)
{
	int64_t sp = 0, d;
	for (uint64_t a = fn; a < pc; a += 4) {
		int64_t w = word(byte, arg, a);
		if (w < 0 || a - fn >= 4 * A64_SCAN) return PC_BODY;
		int e = a64_effect((uint32_t)w, &d);
		if (e & (E_BRANCH | E_SP_UNKNOWN | E_FRAME)) return PC_BODY;
		if (e & E_SP) sp += d;
		if (e & E_FPLR) return PC_BODY;
	}
	if (sp > 0 || -sp > 65536) return PC_BODY; /* not a prologue's stack allocation */
	*adj = (int)-sp;
	return PC_AT_ENTRY;
}

/*
 * The epilogue: after `ldp x29, x30, [sp], #N` (or `[sp, #off]`) the return address is in x30
 * again and x29 the caller's, up to and including the `ret`. Forward from pc to the `ret`
 * nothing may branch or touch x29/x30 (sp moves only by known amounts: *adj sums them);
 * backward from pc to that ldp nothing may branch.
 */
static enum unwind_pc a64_epilogue(insn_byte_fn byte, const void *arg, uint64_t fn, int have_fn, uint64_t pc,
				   int *adj)
{
	int64_t sp = 0, d;
	int n = 0;
	for (uint64_t a = pc;; a += 4) {
		int64_t w = word(byte, arg, a);
		if (w < 0 || ++n > A64_SCAN) return PC_BODY;
		if (a64_is_ret((uint32_t)w)) break;
		int e = a64_effect((uint32_t)w, &d);
		if (e & (E_BRANCH | E_SP_UNKNOWN | E_FPLR)) return PC_BODY;
		if (e & E_SP) sp += d;
	}
	for (uint64_t a = pc - 4, k = 0; k < A64_SCAN && (!have_fn || a >= fn); a -= 4, k++) {
		int64_t w = word(byte, arg, a);
		if (w < 0) return PC_BODY;
		int e = a64_effect((uint32_t)w, &d);
		if (e & E_LDP_REC) {
			if (sp < 0 || sp > 65536) return PC_BODY;
			*adj = (int)sp;
			return PC_AT_ENTRY;
		}
		if (e & (E_BRANCH | E_FPLR)) return PC_BODY;
	}
	return PC_BODY;
}

/*
 * A frameless leaf (Linux's assembly helpers: __arch_clear_user, memcpy, ...): from the
 * function's start through pc and on to the first `ret` after it, no call, no write of x29 or
 * x30, no frame record stored, and sp never moved. Then the return address is in x30 and x29 is
 * the caller's wherever pc is, loops included. Anything else (or text not known) is not one.
 */
static int a64_frameless(insn_byte_fn byte, const void *arg, uint64_t fn, uint64_t pc)
{
	int64_t d;
	for (uint64_t a = fn, k = 0; k < A64_LEAF_SCAN; a += 4, k++) {
		int64_t w = word(byte, arg, a);
		if (w < 0 || a64_is_call((uint32_t)w)) return 0;
		if (a64_is_ret((uint32_t)w)) {
			if (a >= pc) return 1;
			continue;
		}
		int e = a64_effect((uint32_t)w, &d);
		if (e & (E_SP | E_SP_UNKNOWN | E_FPLR | E_FRAME | E_STP_REC | E_LDP_REC)) return 0;
	}
	return 0;
}

enum unwind_pc a64_pc_kind(insn_byte_fn byte, const void *arg, uint64_t fn, int have_fn, uint64_t pc, int *adj)
{
	if (pc & 3) return PC_BODY;
	int64_t w = word(byte, arg, pc);
	if (w >= 0 && a64_is_ret((uint32_t)w)) return PC_AT_ENTRY; /* x30 is where it returns to */
	if (have_fn && pc == fn) return PC_AT_ENTRY;
	if (w >= 0 && a64_epilogue(byte, arg, fn, have_fn, pc, adj) == PC_AT_ENTRY) return PC_AT_ENTRY;
	*adj = 0;
	if (have_fn && pc > fn && a64_prologue(byte, arg, fn, pc, adj) == PC_AT_ENTRY) return PC_AT_ENTRY;
	*adj = 0;
	if (have_fn && pc > fn && a64_frameless(byte, arg, fn, pc)) return PC_AT_ENTRY;
	return PC_BODY;
}

/* msr sp_el0, Xt (op0 3, op1 0, CRn 4, CRm 1, op2 0); mrs Xt, tpidr_el1 (op0 3, op1 0, CRn 13,
 * CRm 0, op2 4); ldr Xt, [Xn, Xm] (64-bit, register offset, LSL #0); adrp; add Xd, Xn, #imm12. */
#define A64_MSR_SP_EL0 0xd5184100u
#define A64_MRS_TPIDR_EL1 0xd538d080u
#define A64_SYSREG_MASK 0xffffffe0u

int a64_sp_el0_source(insn_byte_fn byte, const void *arg, uint64_t fn, uint64_t len, uint64_t *addr)
{
	for (uint64_t a = fn + 16; a + 4 <= fn + len; a += 4) {
		int64_t w[5];
		for (int k = 0; k < 5; k++) w[k] = word(byte, arg, a - 16 + 4 * (uint64_t)k);
		if (w[4] < 0 || ((uint32_t)w[4] & A64_SYSREG_MASK) != A64_MSR_SP_EL0) continue;
		if (w[0] < 0 || w[1] < 0 || w[2] < 0 || w[3] < 0) return -1;
		uint32_t adrp = (uint32_t)w[0], add = (uint32_t)w[1], mrs = (uint32_t)w[2], ldr = (uint32_t)w[3];
		uint32_t t = (uint32_t)w[4] & 31, m = mrs & 31;
		if ((adrp & 0x9f000000u) != 0x90000000u || (adrp & 31) != t) continue;
		if ((add & 0xffc00000u) != 0x91000000u || (add & 31) != t || ((add >> 5) & 31) != t) continue;
		if ((mrs & A64_SYSREG_MASK) != A64_MRS_TPIDR_EL1) continue;
		if ((ldr & 0xffe0fc00u) != 0xf8606800u || (ldr & 31) != t || ((ldr >> 5) & 31) != t ||
		    ((ldr >> 16) & 31) != m)
			continue;
		int64_t page = sext(((adrp >> 5) & 0x7ffff) << 2 | ((adrp >> 29) & 3), 21) * 4096;
		*addr = ((a - 16) & ~0xfffull) + (uint64_t)page + ((add >> 10) & 0xfff);
		return 0;
	}
	return -1;
}

/*
 * A straight-line register tracker, enough for a compiler's "adrp xN, sym; add xN, xN, :lo12:sym;
 * ldr xT, [xN, #off]" (or the pre-indexed "ldr xT, [xN, #off]!" GCC uses to walk a list from its
 * head): adrp sets a known value, add #imm (shifted or not) keeps it known, anything else that
 * writes the register -- a load into it, a call (x0-x18, x30) -- forgets it. Branches are not
 * followed: what it finds is a candidate, checked against guest memory by the caller.
 */
#define A64_ADRP_MASK 0x9f000000u
#define A64_ADRP 0x90000000u
#define A64_ADD_IMM_MASK 0xff800000u    /* add Xd, Xn, #imm12{, lsl #12} (64-bit) */
#define A64_ADD_IMM 0x91000000u
#define A64_LDR_UOFF_MASK 0xffc00000u   /* ldr Xt, [Xn, #imm12 * 8] */
#define A64_LDR_UOFF 0xf9400000u
#define A64_LDR_PRE_MASK 0xffe00c00u    /* ldr Xt, [Xn, #simm9]! */
#define A64_LDR_PRE 0xf8400c00u
#define A64_BL_MASK 0xfc000000u
#define A64_BL 0x94000000u
int a64_static_loads(insn_byte_fn byte, const void *arg, uint64_t fn, uint64_t len, uint64_t *out, int max)
{
	uint64_t val[32];
	uint32_t known = 0;
	int n = 0;
	for (uint64_t a = fn; a + 4 <= fn + len && n < max; a += 4) {
		int64_t w0 = word(byte, arg, a);
		if (w0 < 0) break;
		uint32_t w = (uint32_t)w0, d = w & 31, b = (w >> 5) & 31;
		if ((w & A64_ADRP_MASK) == A64_ADRP) {
			int64_t page = sext(((w >> 5) & 0x7ffff) << 2 | ((w >> 29) & 3), 21) * 4096;
			val[d] = (a & ~0xfffull) + (uint64_t)page;
			known |= 1u << d;
		} else if ((w & A64_ADD_IMM_MASK) == A64_ADD_IMM) {
			uint64_t imm = (uint64_t)((w >> 10) & 0xfff) << ((w >> 22) & 1 ? 12 : 0);
			if (b != 31 && ((known >> b) & 1)) {
				val[d] = val[b] + imm;
				known |= 1u << d;
			} else {
				known &= ~(1u << d);
			}
		} else if ((w & A64_LDR_UOFF_MASK) == A64_LDR_UOFF || (w & A64_LDR_PRE_MASK) == A64_LDR_PRE) {
			int pre = (w & A64_LDR_PRE_MASK) == A64_LDR_PRE;
			int64_t off = pre ? sext((w >> 12) & 0x1ff, 9) : (int64_t)((w >> 10) & 0xfff) * 8;
			if (b != 31 && ((known >> b) & 1)) {
				out[n++] = val[b] + (uint64_t)off;
				if (pre) val[b] += (uint64_t)off;
			}
			known &= ~(1u << d);
		} else if ((w & A64_BL_MASK) == A64_BL) {
			known &= ~(0x7ffffu | 1u << 30); /* the caller-saved registers and the link register */
		}
	}
	return n;
}

/* ---- riscv64 (the RISC-V unprivileged ISA's opcode map; wfi from the privileged spec) ---- */

#define RV_WFI 0x10500073u

int rv_is_idle(uint32_t w)
{
	return w == RV_WFI;
}

int rv_is_call(uint32_t w)
{
	uint32_t op = w & 0x7f, rd = (w >> 7) & 31;
	return rd == 1 && (op == 0x6f || (op == 0x67 && ((w >> 12) & 7) == 0)); /* jal / jalr ra, ... */
}

int rv_is_c_call(uint16_t h)
{
	return (h & 0xf07f) == 0x9002 && ((h >> 7) & 31) != 0; /* c.jalr rs1 (links x1) */
}

/* The same question as a64's for a pc, with its idle instruction: a hart halted in wfi stops
 * with its pc after it (QEMU's wfi sets the pc to the next instruction first), one on its way
 * in with the pc at it. */
static int idle_word(insn_byte_fn byte, const void *arg, uint64_t pc, uint64_t *need, int (*is_idle)(uint32_t))
{
	int64_t before = word(byte, arg, pc - 4), at = word(byte, arg, pc);
	if ((before >= 0 && is_idle((uint32_t)before)) || (at >= 0 && is_idle((uint32_t)at))) return 1;
	if (before >= 0 && at >= 0) return 0;
	*need = before < 0 ? pc - 4 : pc;
	return -1;
}

/* ---- the per-architecture entry points the arch table names ---- */

int x86_idle(insn_byte_fn byte, const void *arg, uint64_t pc, uint64_t *need)
{
	int b = byte(arg, pc - 1);
	*need = pc - 1;
	return b < 0 ? -1 : b == OP_HLT;
}

int a64_idle(insn_byte_fn byte, const void *arg, uint64_t pc, uint64_t *need)
{
	return idle_word(byte, arg, pc, need, a64_is_idle);
}

int rv_idle(insn_byte_fn byte, const void *arg, uint64_t pc, uint64_t *need)
{
	return idle_word(byte, arg, pc, need, rv_is_idle);
}

int a64_after_call(insn_byte_fn byte, const void *arg, uint64_t ra)
{
	if (ra & 3) return -1;
	int64_t w = word(byte, arg, ra - 4);
	return w < 0 ? -1 : a64_is_call((uint32_t)w);
}

int rv_after_call(insn_byte_fn byte, const void *arg, uint64_t ra)
{
	if (ra & 1) return -1; /* a call is 4 bytes (jal, jalr) or, with the C extension, 2 */
	int lo = byte(arg, ra - 2), hi = byte(arg, ra - 1);
	if (lo >= 0 && hi >= 0 && rv_is_c_call((uint16_t)(hi << 8 | lo))) return 1;
	int64_t w = word(byte, arg, ra - 4);
	return w < 0 ? -1 : rv_is_call((uint32_t)w);
}

/* ---- by machine (machine 0: x86_64's rules), through the arch table ---- */

static const struct arch *by_machine(int machine)
{
	return arch_by_machine(machine ? machine : EM_X86_64);
}

enum unwind_pc insn_pc_kind(int machine, insn_byte_fn byte, const void *arg, uint64_t fn, int have_fn,
			    uint64_t pc, int *adj)
{
	int dummy;
	const struct arch *a = by_machine(machine);
	if (!adj) adj = &dummy;
	*adj = 0;
	return a && a->pc_kind ? a->pc_kind(byte, arg, fn, have_fn, pc, adj) : PC_BODY;
}

int insn_idle(int machine, insn_byte_fn byte, const void *arg, uint64_t pc, uint64_t *need)
{
	uint64_t dummy;
	const struct arch *a = by_machine(machine);
	return a && a->idle ? a->idle(byte, arg, pc, need ? need : &dummy) : 0;
}

int insn_after_call(int machine, insn_byte_fn byte, const void *arg, uint64_t ra)
{
	const struct arch *a = by_machine(machine);
	return a && a->after_call ? a->after_call(byte, arg, ra) : -1;
}
