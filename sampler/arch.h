/* SPDX-License-Identifier: MIT */
/* arch.h: per-architecture facts -- register names, frame-pointer layout, and the `g` layout. */
#ifndef ARCH_H
#define ARCH_H
#include "err.h"
#include <stdint.h>
#include "insn.h"
#include "unwind.h"

enum { ARCH_X86_64 = 1, ARCH_AARCH64 = 2, ARCH_RISCV64 = 3 }; /* also the capture header's arch code */

struct arch {
	int id;               /* ARCH_* */
	const char *name;     /* our name: "x86_64" */
	const char *gdb_name; /* <architecture> in target.xml: "i386:x86-64" */
	int elf_machine;      /* ELF e_machine of its kernels (EM_X86_64 ...) */
	/* registers, by their target.xml names */
	const char *pc;       /* program counter register name */
	const char *sp;       /* stack pointer */
	const char *fp;       /* frame pointer */
	const char *fp_alt;   /* ...or its other name (riscv64 s0), NULL */
	const char *lr;       /* link register holding the return address at entry, NULL if on stack */
	const char *flags;    /* flags register (interrupt enable), NULL if none */
	int flags_by_p;       /* the flags register is not in QEMU's `g`: read it with `p` each sample */
	const char *mode;     /* register giving the privilege level (x86 cs, aarch64 cpsr, riscv priv) */
	int mode_by_p;        /* the mode register is not in QEMU's `g`: read it with `p` each sample */
	const char *fallback; /* target.xml-style register list used when the stub offers none */
	const struct uw_arch *uw; /* DWARF numbering and the frame-record rule, for the unwinders */
	const char *const *dwarf; /* register name of each DWARF number (uw->nregs entries, NULL = none) */
	const char *pcpu;     /* register holding the kernel's per-CPU base (x86 gs_base, aarch64
			       * TPIDR_EL1), NULL if none */
	const char *pcpu_alt; /* ...or where it is while in user mode (x86 k_gs_base after swapgs) */
	int pcpu_by_p;        /* the per-CPU register is not in QEMU's `g` reply: read it with `p` */
	/* what a register's value says: 1 user mode / interrupts off, 0 not, -1 unknown; NULL: -1 */
	int (*is_user)(uint64_t mode);
	int (*is_firmware)(uint64_t mode); /* below the kernel (riscv64 M-mode), NULL: never */
	int (*irqs_off)(uint64_t flags);
	/* what its instructions say (insn.c; NULL: PC_BODY, never idle, unknown) */
	enum unwind_pc (*pc_kind)(insn_byte_fn byte, const void *arg, uint64_t fn, int have_fn, uint64_t pc,
				  int *adj);
	int (*idle)(insn_byte_fn byte, const void *arg, uint64_t pc, uint64_t *need);
	int (*after_call)(insn_byte_fn byte, const void *arg, uint64_t ra);
	/* its trap entry, as the frame-pointer walk sees it */
	const char *vectors;  /* symbol of an exception vector table whose entries the walk steps
			       * through (aarch64: "vectors", 16 entries of 0x80 bytes), NULL none */
	int elr;              /* DWARF number of the exception link register (aarch64 ELR_mode 33), -1 */
	int switch_stacks;    /* a frame record may link to another stack (arm64 Linux's IRQ stack) */
	int pac;              /* return addresses may carry pointer-authentication codes (arch_pac_mask) */
};

/* One register in the `g` reply. */
struct reg {
	char name[32]; /* as target.xml names it (QEMU's longest: 25, ID_AA64MMFR7_EL1_RESERVED);
			* a longer name is cut (the register still takes its room) */
	int num;       /* its register number (`p` reads it by this) */
	int off;       /* byte offset in the decoded `g` reply (registers past the `g` reply's end
			* have offsets there too: numbers continue) */
	int size;      /* bytes */
};

/* QEMU 10.0's aarch64 -cpu max lists 304 (34 core, 52 SVE, 4 pauth, 214 system registers). */
#define ARCH_MAX_REGS 512

/* The register layout learned from the stub, with the registers the sampler uses resolved. */
struct layout {
	const struct arch *arch;          /* matched architecture */
	int nregs;                        /* registers in regs[] */
	struct reg regs[ARCH_MAX_REGS];   /* in `g` order */
	int gsize;                        /* bytes in a full `g` reply */
	int need;                         /* bytes a `g` reply must hold to be usable: through the
					   * end of pc, sp and fp, whichever lies last */
	const struct reg *pc, *sp, *fp;   /* required */
	const struct reg *lr, *flags, *mode; /* optional (NULL) */
	const struct reg *pcpu, *pcpu_alt; /* the per-CPU base register(s), optional (NULL) */
	const struct reg *dwarf[UW_NREGS]; /* the register of each DWARF number, or NULL */
	int err;                          /* sticky error code */
	char errstr[ERR_MAX];                 /* what went wrong */
};

/* Architecture by its kernels' ELF e_machine; NULL if unknown. */
const struct arch *arch_by_machine(int machine);
/* Architecture by our name ("x86_64") or gdb name ("i386:x86-64"); NULL if unknown. */
const struct arch *arch_find(const char *name);
/* Build a layout from target.xml text with includes already inlined; -1 on error. */
int arch_layout_xml(struct layout *l, const char *xml);
/* Build the arch's fallback layout (when the stub has no qXfer:features). */
int arch_layout_default(struct layout *l, const struct arch *a);
/* The register named name in the layout, or NULL. */
const struct reg *arch_find_reg(const struct layout *l, const char *name);
/* Read a register's value from a decoded `g` reply of len bytes (0 if beyond it). */
uint64_t arch_reg(const struct reg *r, const uint8_t *g, int len);
/* Frame 0 for the unwinders: every register of a decoded `g` reply by DWARF number. */
void arch_dwarf_regs(const struct layout *l, const uint8_t *g, int len, struct uw_regs *out);
/* The bits of a kernel code pointer that hold no address, from its text range [lo, hi): on
 * aarch64 the top bits every text address shares with bit 63 (ones in the upper half, zeros in
 * the lower), where pointer authentication puts its code; 0 on other architectures. */
uint64_t arch_pac_mask(const struct arch *a, uint64_t lo, uint64_t hi);
/* The stub's pauth code mask (pauth_cmask_high for an upper-half kernel, pauth_cmask for one
 * linked low), checked against the text range: 0 if it would change a text address's bits (then
 * arch_pac_mask's stands). */
uint64_t arch_pac_mask_stub(uint64_t cmask, uint64_t lo, uint64_t hi);
/* Privilege of a sample from its `g` reply: 1 if user mode, 0 kernel, -1 unknown (also where the
 * mode register is read with `p`: arch_is_user_mode then). */
int arch_is_user(const struct layout *l, const uint8_t *g, int len);
/* ...from the mode register's value, read with `p` (riscv64 priv). */
int arch_is_user_mode(const struct layout *l, uint64_t mode);
/* Whether the mode register's value says firmware below the kernel (riscv64 M-mode): 1, 0, or
 * -1 unknown (no mode register); 0 on an architecture without such a mode. */
int arch_is_firmware_mode(const struct layout *l, uint64_t mode);
/* arch_irqs_off from the flags register's value, read with `p` (riscv64 sstatus). */
int arch_irqs_off_flags(const struct layout *l, uint64_t flags);
/* 1 if interrupts are disabled, 0 enabled, -1 unknown. */
int arch_irqs_off(const struct layout *l, const uint8_t *g, int len);

#endif
