/* SPDX-License-Identifier: MIT */
/* kofile.h: kernel module files (-e NAME.ko, or a directory of them) -- each loaded module's DWARF
 * (source lines) and CFI, its sections placed where the guest loaded them, through libdwfl.
 * kofile.c reads, checks and finds the files; koplace.c places them. */
#ifndef KOFILE_H
#define KOFILE_H
#include <stddef.h>
#include <stdint.h>
#include <elfutils/libdwfl.h>
#include "modules.h"
#include "symbols.h"
#include "unwind_cfi.h"

#define KO_MAX_FILES 16          /* .ko files and directories given with -e */
#define KO_MAX_SECS 64           /* sections of one .ko placed at most (hotmod has 3 text ones) */
#define KO_RELEASE 65            /* a kernel release string (__NEW_UTS_LEN + 1) */
#define KO_DIR_DEPTH 6           /* how deep a directory is searched (/lib/modules/VER/kernel/drivers/x/y) */

/* One symbol of a .ko's .symtab, for placement: its section and its offset in it. */
struct ko_sym {
	const char *name;
	uint32_t shndx;          /* section index */
	uint64_t value;          /* offset in that section (ET_REL) */
	uint64_t size;
};

/* One guest symbol of the same module (from mod->kallsyms): where it runs. */
struct ko_gsym {
	const char *name;
	uint64_t addr;
	uint64_t size;
};

/* A section's load address as the guest symbols give it. */
struct ko_base {
	uint32_t shndx;
	uint64_t addr;           /* guest address of the section's first byte */
	uint32_t agree;          /* symbols that gave this base */
};

/* What placement found (every symbol is counted once). */
struct ko_match {
	uint32_t matched;        /* .ko symbols found among the guest's, same section base */
	uint32_t disagree;       /* ...found, but at another base than the section's majority */
	uint32_t sizes_differ;   /* ...found, with another size: not the build that is loaded */
};

struct kofile {
	char path[512];          /* as given or found */
	char name[MODS_NAME + 1];/* the module's name (.modinfo name=, else .gnu.linkonce.this_module) */
	char vermagic[128];      /* .modinfo vermagic= */
	int from_dir;            /* found in a directory (not named with -e) */
	uint8_t *buf;            /* the file */
	size_t len;
	uint8_t *work;           /* the copy libdwfl relocates while placed */
	int refused;             /* not the build loaded, or for another kernel: never placed */
	int placed;              /* dwfl, dm and cfi are set up for modaddr */
	uint64_t modaddr;        /* the struct module it was placed for (a reload re-places it) */
	uint64_t lo, hi;         /* the module's core text [lo, hi) */
	int nbases;
	struct ko_base bases[KO_MAX_SECS];
	struct ko_match match;
	Dwfl *dwfl;              /* one session per file: its sections where the guest has them */
	Dwfl_Module *dm;
	int has_cfi;
	struct cfi_ctx cfi;      /* its .debug_frame/.eh_frame, relocated by libdwfl (not owned) */
	uint64_t steps;          /* unwind steps its CFI answered */
	uint64_t lines;          /* source lines it gave */
};

struct koset {
	struct kofile *k;        /* files given or found */
	int n;
	char *dirs[KO_MAX_FILES];/* directories to search for NAME.ko */
	int ndirs;
	char release[KO_RELEASE];/* the guest's kernel release ("" unknown) */
	uint64_t not_loaded;     /* files given for modules the guest has not loaded (warned) */
	uint64_t skipped;        /* files found in a directory but built for another kernel or not the
				  * build loaded (not used, counted) */
	uint64_t steps;          /* CFI steps answered by .ko files */
	int warned_missing;      /* the not-loaded warning was given */
	int err;                 /* sticky error code */
	char errstr[ERR_MAX];    /* what went wrong */
};

/* ---- pure parts (kofile.c) ---- */
/* The value of key in a .modinfo section ("key=value\0" strings); 0 found, -1 not. */
int ko_modinfo(const uint8_t *p, size_t len, const char *key, char *out, size_t cap);
/* The kernel release a vermagic names (its first word); 0, or -1 if empty. */
int ko_vermagic_release(const char *vermagic, char *out, size_t cap);
/* The release in a linux_banner ("Linux version RELEASE (...") of len bytes; 0, or -1. */
int ko_banner_release(const char *banner, size_t len, char *out, size_t cap);

/* ---- files (kofile.c) ---- */
/* Add a .ko's bytes (takes buf): checked to be a kernel module (ET_REL, sections in bounds,
 * .modinfo with vermagic, a name); -1 with errstr (ERR_FORMAT) if not. */
int ko_add_file(struct koset *s, const char *path, uint8_t *buf, size_t len);
/* Add a directory searched for NAME.ko of each loaded module. */
int ko_add_dir(struct koset *s, const char *path);
/* Check the files given against the guest's release (ks->release): -1 (ERR_MISMATCH) if one was
 * built for another kernel. */
int ko_check_release(struct koset *s);
/* The file for loaded module mod: one given, else its NAME.ko from the directories on first sight
 * (added; refused and counted in skipped if built for another release), else NULL. */
struct kofile *ko_file_for(struct koset *s, const char *mod);
/* The summary line ("" without .ko files). */
void ko_line(const struct koset *s, char *out, size_t cap);
void ko_free(struct koset *s);

/* ---- placement (koplace.c) ---- */
/* Each section's base from the .ko's symbols and the guest's (matched by name; the base a
 * section's most symbols agree on wins, ties to the lower address); bases sorted by shndx. Pure. */
int ko_section_bases(const struct ko_sym *ks, size_t nk, const struct ko_gsym *gs, size_t ng,
		     struct ko_base *out, int cap, struct ko_match *m);
/* Place the files of the modules loaded now (found in directories on first sight), and unplace
 * those of modules gone: 0, or -1 (ERR_MISMATCH) if a file given is not the build loaded. The
 * guest's symbols of each module are names' (syms with mod == its name). */
int ko_place(struct koset *s, const struct modset *mods, const struct symtab *names);
/* The placed file whose core text holds pc, or NULL. */
struct kofile *ko_find(struct koset *s, uint64_t pc);
/* cfi_ctx.more: the CFI of the .ko that holds pc (arg: the koset), or NULL. */
struct cfi_ctx *ko_cfi(void *arg, uint64_t pc);
/* "file.c:42" for pc (a return address: give pc - 1) from its .ko's line table, then for code
 * inlined there ", inlined FUNC from caller.c:LINE" per level, innermost first; 0, or -1. */
int ko_srcline(struct koset *s, uint64_t pc, char *out, size_t cap);
/* Forget k's placement (its libdwfl session and CFI): its module is gone or moved. */
void ko_unplace(struct kofile *k);

#endif
