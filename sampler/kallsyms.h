/* SPDX-License-Identifier: MIT */
/* kallsyms.h: the kernel's own compressed symbol tables (kallsyms_names & co), found by their shape
 * in a blob of read-only data (a vmlinux payload, an arm64 Image, guest memory) and decoded into
 * every symbol's address, type letter and name. Pure: bytes in, a table out. */
#ifndef KALLSYMS_H
#define KALLSYMS_H
#include "err.h"
#include <stddef.h>
#include <stdint.h>

#define KSYMS_MIN_SYMS 16u          /* fewer symbols than this is no kernel's table */
#define KSYMS_MAX_SYMS (8u << 20)   /* more than any kernel has (Debian's 6.12: 163 k) */
#define KSYMS_NAME_MAX 512          /* KSYM_NAME_LEN: a longer name is corruption */

/* How kallsyms_offsets/kallsyms_addresses give addresses. */
enum ksyms_addrs {
	KSYMS_ABSOLUTE = 1,     /* kallsyms_addresses: one pointer per symbol */
	KSYMS_RELATIVE,         /* kallsyms_relative_base + (u32)offset */
	KSYMS_RELATIVE_PERCPU,  /* ...and offsets >= 0 are absolute (per-CPU symbols, x86_64 SMP):
				 * base - 1 - offset otherwise (CONFIG_KALLSYMS_ABSOLUTE_PERCPU) */
};
extern const char *const ksyms_addrs_names[]; /* "absolute", "relative", "relative+percpu" */

/* The tables, by their symbol names (scripts/kallsyms.c). */
enum ksyms_table {
	KT_NUM_SYMS, KT_NAMES, KT_MARKERS, KT_SEQS, KT_TOKEN_TABLE, KT_TOKEN_INDEX, KT_ADDRS, KT_BASE, KT_N
};

struct ksym {
	uint64_t addr;   /* the address the table gives (link address in an image, the running one in
			  * guest memory: the tables are relocated with the kernel) */
	char type;       /* nm's letter: 'T' 't' 'W' 'D' 'R' 'A' ... */
	uint32_t name;   /* offset of the NUL-terminated name in pool */
};

struct kallsyms {
	struct ksym *syms;          /* in table order: sorted by address */
	size_t n;                   /* kallsyms_num_syms */
	char *pool;                 /* the names */
	size_t poollen;             /* bytes used in pool */
	enum ksyms_addrs addrs;     /* how addresses were stored */
	int seq_bytes;              /* kallsyms_seqs_of_names entry size: 0 (none: < 6.2), 3, or 4 */
	uint64_t base;              /* kallsyms_relative_base (relative layouts): 0 in an arm64 Image
				     * file, whose relocations are applied at boot -- the addresses are
				     * then offsets from the base (Debian's 6.1 arm64: 50336 symbols,
				     * _stext at 0); add the running base to use them */
	uint64_t at[KT_N];          /* where each table was found (addresses; at[KT_SEQS] 0 if none) */
	uint64_t end;               /* the first byte after the last table */
	int err;                    /* sticky error code */
	char errstr[ERR_MAX];           /* what went wrong */
};

/*
 * Find the tables in buf[0..len), which sits at address addr (the tables are 8-aligned by
 * address), check every cross-reference, and decode all symbols into k. 0, or -1 with one line
 * in k->errstr: no tables, or tables of an unknown layout or inconsistent (never garbage names).
 */
int ksyms_find(struct kallsyms *k, const uint8_t *buf, size_t len, uint64_t addr);
/* Name of symbol i. */
static inline const char *ksyms_name(const struct kallsyms *k, size_t i) { return k->pool + k->syms[i].name; }
/* The address of the token table's anchor ("0\0" ... "9\0") in buf, or -1: lets a reader of guest
 * memory know it has reached the tables. */
long ksyms_anchor(const uint8_t *buf, size_t len);
void ksyms_free(struct kallsyms *k);

#endif
