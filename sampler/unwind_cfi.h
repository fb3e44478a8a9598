/* SPDX-License-Identifier: MIT */
/* unwind_cfi.h: the DWARF CFI unwinder -- .eh_frame/.debug_frame through libdw, rules cached per pc. */
#ifndef UNWIND_CFI_H
#define UNWIND_CFI_H
#include "err.h"
#include <stddef.h>
#include <stdint.h>
#include <elfutils/libdw.h>
#include "unwind.h"

/* How the caller's value of one register is found. */
enum { CFI_UNDEF = 0, CFI_SAME, CFI_AT_CFA, CFI_VAL_CFA, CFI_REG };

/* The unwind rule at one pc, compiled from libdw's answer so the hot path never asks again. */
struct cfi_rule {
	uint8_t found;           /* 1: an FDE covers the pc; 0: none (the method has no info) */
	uint8_t usable;          /* 0: the CFA or return address needs a DWARF expression we do not run */
	uint8_t signal;          /* the CIE has the "S" augmentation: the caller's pc is an interrupted one */
	uint8_t ra;              /* return-address column */
	uint8_t cfa_reg;         /* CFA = regs[cfa_reg] + cfa_off */
	int64_t cfa_off;
	uint8_t how[UW_NREGS];   /* CFI_* per register */
	int32_t arg[UW_NREGS];   /* offset from the CFA, or the register number for CFI_REG */
};

struct cfi_ctx {
	Elf *elf;                /* the image (not owned) */
	Dwarf *dw;               /* its DWARF, for .debug_frame (NULL if none) */
	Dwarf_CFI *eh, *dbg;     /* .eh_frame and .debug_frame tables (either may be NULL) */
	int nregs;               /* registers of the architecture */
	int nalias;              /* its DWARF numbers kept in slots of their own (uw_arch.alias) */
	const struct uw_alias *alias;
	uint64_t bias;           /* subtract from a guest pc to get an image address (KASLR slide) */
	uint64_t *keys;          /* rule cache: open addressing, key = image pc + 1 (0 = empty) */
	struct cfi_rule *rules;  /* ...and the rules */
	size_t n, cap;           /* entries used, slots (a power of two) */
	uint64_t hits, compiled; /* cache hits, rules compiled through libdw */
	/* Another table for pc (a kernel module's, kofile.h), or NULL: this one (modules' CFI is
	 * asked first; a ctx with no tables of its own answers only through it) */
	struct cfi_ctx *(*more)(void *arg, uint64_t pc);
	void *more_arg;
	int err;                 /* sticky error code */
	char errstr[ERR_MAX];        /* what went wrong */
};

/* Open the image's CFI; -1 if it has neither .eh_frame nor .debug_frame. */
int cfi_open(struct cfi_ctx *c, Elf *elf, const struct uw_arch *a);
/* The rule for image address pc (cached). NULL only when out of memory. */
const struct cfi_rule *cfi_rule_at(struct cfi_ctx *c, uint64_t pc);
/* The unwinder's step (ctx: struct cfi_ctx). */
enum uw_step cfi_step(void *ctx, struct uw_walk *w, const struct uw_frame *f, struct uw_frame *caller);
void cfi_free(struct cfi_ctx *c);

#endif
