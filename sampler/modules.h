/* SPDX-License-Identifier: MIT */
/* modules.h: a Linux guest's loaded kernel modules read from its memory -- names, text, symbols, ORC. */
#ifndef MODULES_H
#define MODULES_H
#include "err.h"
#include <stddef.h>
#include <stdint.h>
#include "symbols.h"
#include "unwind_orc.h"

#define MODS_MAX 1024            /* modules walked at most: a longer list is a loop or garbage */
#define MODS_NAME 56             /* MODULE_NAME_LEN (64 - sizeof(unsigned long)) */
#define MODS_MAX_SYMS 200000     /* symbols one module may have: more is garbage */
#define MODS_MAX_ORCS 1000000    /* ORC entries likewise */
#define MODS_MAX_STRTAB (4u << 20) /* bytes of one module's string table read at most */
#define MODS_STRUCT_MAX 4096     /* bytes of struct module read (it is ~1 KiB on 6.1 to 6.12) */

/* Where struct module keeps what we read, from the image's BTF (never hard-coded). */
struct mod_layout {
	int ok;                  /* 1 once decoded; 0 with why set */
	uint32_t size;           /* sizeof(struct module) (bytes read of each) */
	uint32_t list;           /* .list (struct list_head: next, prev) */
	uint32_t name;           /* .name[] */
	uint32_t name_len;       /* ...its size */
	int has_state;           /* .state and MODULE_STATE_UNFORMED known */
	uint32_t state;          /* .state (an enum, 4 bytes) */
	int64_t unformed;        /* MODULE_STATE_UNFORMED: not set up yet, skipped */
	int ntext;               /* text regions: 2 (core, init) */
	uint32_t text_base[2];   /* pointer to each region's start ... */
	uint32_t text_size[2];   /* ...and its u32 size: 6.1's core_layout/init_layout .base and
				  * .text_size, 6.4+'s mem[MOD_TEXT]/mem[MOD_INIT_TEXT] .base, .size */
	uint32_t kallsyms;       /* .kallsyms (struct mod_kallsyms *) */
	uint32_t ks_symtab, ks_num, ks_strtab; /* mod_kallsyms .symtab (Elf64_Sym *), .num_symtab (u32), .strtab */
	int has_orc;             /* .arch has ORC (x86_64) */
	uint32_t orc_ip, orc, num_orcs; /* .arch.orc_unwind_ip (s32 *), .arch.orc_unwind, .arch.num_orcs (u32) */
	char what[64];           /* "core_layout (<= 6.3)" or "mem[] (6.4 on)" */
	char why[160];           /* with !ok: what BTF lacked */
};

/* struct module's fields as read from guest memory (pure decode of its bytes). */
struct mod_raw {
	uint64_t next;           /* list.next: the next module's list member, or &modules */
	char name[MODS_NAME + 1];/* NUL-terminated */
	int state_unformed;      /* being set up: skip */
	uint64_t text[2][2];     /* [region][lo, hi) */
	uint64_t kallsyms;       /* struct mod_kallsyms * */
	uint64_t orc_ip, orc;    /* ORC tables (0 if none) */
	uint32_t num_orcs;
};

/* One loaded module. */
struct module {
	char name[MODS_NAME + 1];
	uint64_t addr;           /* its struct module */
	uint64_t text[2][2];     /* core and init text [lo, hi) (hi == lo: none) */
	int has_orc;             /* orc holds its ORC table (addresses as they run: bias 0) */
	struct orc_table orc;
	uint32_t nsyms;          /* text symbols added to the names */
	int seen;                /* found by the latest walk */
};

/* A text range -> module map, sorted by lo. */
struct mod_range {
	uint64_t lo, hi;
	int mod;                 /* index in modset.m */
};

/* Counters for the summary (every loss is one of these). */
struct mod_stats {
	uint64_t walks;          /* walks of the modules list */
	uint64_t loaded;         /* modules found after the first walk (loaded during the run) */
	uint64_t unloaded;       /* modules a later walk no longer found */
	uint64_t changed;        /* walks retried because the list changed while it was read */
	uint64_t bad;            /* modules skipped: garbage pointers, sizes out of bounds, unreadable */
	uint64_t unknown_pcs;    /* kernel pcs outside the core text and every module (ask for a walk) */
	uint64_t bytes;          /* guest memory read for modules */
};

struct modset {
	struct mod_layout l;     /* struct module's layout */
	uint64_t head;           /* &modules (0: unknown, modules off) */
	enum orc_layout orc_layout; /* the core kernel's ORC layout (modules share it) */
	struct module *m;        /* modules, in list order of the walk that found them */
	int n;
	struct mod_range *r;     /* their text, sorted */
	int nr;
	int last;                /* the range the previous lookup hit (-1 none) */
	int want_walk;           /* an unknown pc was seen: walk again soon */
	struct mod_stats st;
	int err;                 /* sticky error code */
	char errstr[ERR_MAX];        /* what went wrong */
};

/* Read len bytes of guest memory: 0 ok, -1 unmapped, -2 the connection failed. */
typedef int (*mods_read_fn)(void *arg, uint64_t addr, void *buf, size_t len);

/* struct module's layout from raw BTF bytes (the image's .BTF); 0, or -1 with l->why. */
int mods_layout_btf(struct mod_layout *l, const void *btf, size_t len);
/* Decode one struct module's bytes (l->size of them) read at addr; -1 if it makes no sense. */
int mods_decode(const struct mod_layout *l, const uint8_t *bytes, struct mod_raw *out);
/* Decode a mod_kallsyms (24 bytes at least): symtab, num_symtab, strtab. */
void mods_decode_kallsyms(const struct mod_layout *l, const uint8_t *bytes, uint64_t *symtab, uint32_t *num,
			  uint64_t *strtab);

/*
 * Walk the list at s->head: read each module's struct, its symbols (added to names, each tagged
 * with the module's name) and its ORC. Modules already known are kept (their tables are not read
 * again); modules no longer listed are counted unloaded. A list that changes under the walk
 * (the head's chain differs when read again) is walked again, up to 3 times, then the walk keeps
 * what it read and counts it. 0 ok (even with bad modules skipped, counted), -1 on garbage at
 * the head or unknown layout, -2 on a connection error.
 */
int mods_walk(struct modset *s, struct symtab *names, mods_read_fn rd, void *arg);
/* The module whose text holds pc, or NULL (cached by range). */
const struct module *mods_find(struct modset *s, uint64_t pc);
/* The ORC table for pc (orc_table.more's callback: arg is the modset). */
struct orc_table *mods_orc(void *arg, uint64_t pc);
void mods_free(struct modset *s);

#endif
