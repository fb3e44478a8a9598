/* SPDX-License-Identifier: MIT */
/* unwind_orc.h: the Linux ORC unwinder -- .orc_unwind_ip/.orc_unwind tables, lookup and step. */
#ifndef UNWIND_ORC_H
#define UNWIND_ORC_H
#include "err.h"
#include <stddef.h>
#include <stdint.h>
#include "unwind.h"

/* The entry layouts Linux has used (arch/x86/include/asm/orc_types.h). */
enum orc_layout {
	ORC_LAYOUT_UNKNOWN = 0,
	ORC_LAYOUT_V1,  /* up to 6.2: type:2 (call, regs, regs-partial), end:1 */
	ORC_LAYOUT_V2,  /* 6.3: type:2, signal:1, end:1 */
	ORC_LAYOUT_V3,  /* 6.4 on: type:3 (undefined, end, call, regs, regs-partial), signal:1;
			 * the image carries a .orc_header hash of orc_types.h */
};
extern const char *const orc_layout_names[];

/* A decoded entry, the same for every layout. */
enum orc_type { ORC_UNDEF, ORC_END, ORC_CALL, ORC_REGS, ORC_REGS_PARTIAL };
struct orc_entry {
	int16_t sp_off, bp_off;  /* offsets from the base registers */
	uint8_t sp_reg, bp_reg;  /* ORC_REG_* (below) */
	uint8_t type;            /* enum orc_type */
	uint8_t signal;          /* the caller's pc is an interrupted one (use it as is, not -1) */
};
enum { ORC_REG_UNDEFINED = 0, ORC_REG_PREV_SP, ORC_REG_DX, ORC_REG_DI, ORC_REG_BP, ORC_REG_SP,
       ORC_REG_R10, ORC_REG_R13, ORC_REG_BP_INDIRECT, ORC_REG_SP_INDIRECT };

#define ORC_CACHE 4096 /* lookups remembered: a sample's pcs repeat, a binary search over the
			* ~400 000 entries of a distro kernel costs a cache miss a step */

/* A remembered lookup. */
struct orc_hit {
	uint64_t pc;             /* table address looked up + 1 (0 = empty) */
	int found;               /* an entry covers it */
	struct orc_entry e;      /* that entry, decoded */
};

struct orc_table {
	enum orc_layout layout;  /* how the entries are laid out */
	size_t n;                /* entries */
	uint64_t *ip;            /* their start addresses, sorted */
	uint8_t *e;              /* n raw 6-byte entries */
	uint64_t text_lo, text_hi; /* addresses the table covers [lo, hi): outside, no entry */
	uint64_t bias;           /* subtract from a guest pc to get a table address (the KASLR slide
				  * for tables from an image; 0 for tables read from guest memory) */
	uint64_t lookups, misses; /* for the summary: lookups, and those with no entry */
	/* For a pc outside [text_lo, text_hi) (a module's): the table that covers it, or NULL
	 * (modules.c's mods_orc; NULL: none). That table's own bias applies. */
	struct orc_table *(*more)(void *arg, uint64_t pc);
	void *more_arg;          /* its argument */
	/* The guest pc a new task's first switch returns to (ret_from_fork_asm, before 6.6
	 * ret_from_fork), 0 unknown: a return address there is exact, as the kernel's unwinder takes
	 * it (its ORC says end of stack at the pc itself; at pc - 1 is the code before). */
	uint64_t fork_ret;
	struct orc_hit *cache;   /* recent lookups, direct-mapped by pc (ORC_CACHE slots) */
	int err;                 /* sticky error code */
	char errstr[ERR_MAX];        /* what went wrong */
};

/*
 * Build a table from the two sections as they sit in memory at ipaddr (.orc_unwind_ip: s32
 * offsets from each entry's own address; .orc_unwind: 6-byte entries) and the optional
 * .orc_header (20-byte hash; NULL if the kernel has none). The layout comes from the header's
 * hash, or for kernels without one from the entries themselves. -1 with errstr on tables that
 * are inconsistent, unsorted or of a version we do not know.
 */
int orc_load(struct orc_table *t, const uint8_t *ips, size_t iplen, uint64_t ipaddr,
	     const uint8_t *ents, size_t entlen, const uint8_t *hdr, size_t hdrlen,
	     uint64_t text_lo, uint64_t text_hi);
/* The same with a layout already known (a module's tables, whose kernel gave the layout in its
 * own .orc_header, or ORC_LAYOUT_UNKNOWN: guessed from the entries as orc_load does). */
int orc_load_as(struct orc_table *t, enum orc_layout l, const uint8_t *ips, size_t iplen, uint64_t ipaddr,
		const uint8_t *ents, size_t entlen, uint64_t text_lo, uint64_t text_hi);
/* The entry covering table address pc; 0 found, -1 none. */
int orc_find(struct orc_table *t, uint64_t pc, struct orc_entry *out);
/* Decode one raw entry in the given layout. */
void orc_decode(enum orc_layout l, const uint8_t raw[6], struct orc_entry *out);
void orc_free(struct orc_table *t);
/* The unwinder's step (ctx: struct orc_table). */
enum uw_step orc_step(void *ctx, struct uw_walk *w, const struct uw_frame *f, struct uw_frame *caller);

#endif
