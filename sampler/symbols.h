/* SPDX-License-Identifier: MIT */
/* symbols.h: kernel symbols (ELF .symtab or nm-style map) as a sorted table, plus ELF text bytes. */
#ifndef SYMBOLS_H
#define SYMBOLS_H
#include "err.h"
#include <stddef.h>
#include <stdint.h>
#include "unwind.h"

/* One function symbol. */
struct sym {
	uint64_t addr;    /* start address */
	uint64_t size;    /* bytes (0 = unknown: extends to the next symbol) */
	const char *name; /* NUL-terminated, owned by the table */
	const char *mod;  /* the module it is in (modules.c), or NULL (the core kernel); shares name's
			   * allocation */
	uint64_t limit;   /* an unsized symbol ends here at the latest: the end of its ELF section;
			   * 0 = not known (then the kernel's _etext, if it lies above, bounds it) */
};

/* An executable section's bytes from the ELF. */
struct textsec {
	uint64_t addr;    /* load address */
	size_t len;       /* bytes */
	uint8_t *data;    /* copy of the contents */
};

enum { SYMID_NONE = 0, SYMID_BUILD_ID = 1, SYMID_FNV64 = 2 }; /* kinds of symtab.id */

/* Data symbols the sampler needs beyond function names (any symbol type, from a map or .symtab). */
enum symmark {
	MARK_STEXT, MARK_ETEXT,                 /* _stext, _etext: the kernel's main text */
	MARK_ORC_IP_START, MARK_ORC_IP_STOP,    /* __start_orc_unwind_ip, __stop_orc_unwind_ip */
	MARK_ORC_START, MARK_ORC_STOP,          /* __start_orc_unwind, __stop_orc_unwind */
	MARK_ORC_HDR_START, MARK_ORC_HDR_STOP,  /* __start_orc_header, __stop_orc_header (6.4+) */
	MARK_BANNER,                            /* linux_banner: "Linux version ..." */
	MARK_MODULES,                           /* modules: the loaded modules' list_head */
	MARK_FORK_ASM, MARK_FORK,               /* ret_from_fork_asm (6.6+), ret_from_fork: where a
						 * new task's first switch returns (x86 ORC) */
	MARK_INIT_TASK,                         /* init_task: the head of Linux's task list */
	MARK_N
};
extern const char *const symmark_names[MARK_N];

struct symtab {
	struct sym *syms;        /* sorted by addr, one per address */
	size_t n;                /* entries in syms */
	int is_elf;              /* 1 if loaded from an ELF (text bytes available) */
	int machine;             /* ELF e_machine (EM_X86_64 ...), 0 for maps */
	struct textsec *secs;    /* executable sections (ELF only) */
	int nsecs;               /* entries in secs */
	int idkind;              /* SYMID_* */
	int idlen;               /* bytes in id */
	uint8_t id[32];          /* GNU build-id, or FNV-1a 64 of the file */
	uint64_t mark[MARK_N];   /* addresses of the marks found */
	uint32_t marks;          /* bit m: mark[m] was found */
	int64_t slide;           /* added to the names (and marks) by syms_relocate: the KASLR offset */
	int64_t text_slide;      /* ...and to the text sections */
	uint64_t demangled;      /* names added in their demangled form (demangle.c) */
	uint64_t undemangled;    /* names that look mangled but the demangler refused: kept raw */
	int err;                 /* sticky error code */
	char errstr[ERR_MAX];        /* what went wrong */
};

/* Load an ELF, or an nm/System.map style text map (detected by content). */
int syms_load(struct symtab *t, const char *path);
/* Add an ELF image's text sections, build-id and function symbols (a stripped image has none:
 * names then come from a map added with syms_parse_map). */
int syms_add_elf(struct symtab *t, const char *path, const uint8_t *file, size_t len);
/* Add a section of text bytes at link address addr (copied): an ELF's, or an arm64 Image's. */
int syms_add_text(struct symtab *t, uint64_t addr, const uint8_t *data, size_t len);
/* Parse an nm-style map ("ADDR [SIZE] TYPE NAME" lines, text symbols kept) from memory. */
int syms_parse_map(struct symtab *t, const char *text, size_t len);
/* Add one symbol (used by the loaders and tests); call syms_finish after the last. */
int syms_add(struct symtab *t, uint64_t addr, uint64_t size, const char *name);
/* Add one symbol of a module (named as perf does: "name [mod]", syms_name). */
int syms_add_mod(struct symtab *t, uint64_t addr, uint64_t size, const char *name, const char *mod);
/* Note addr if name is one of the marks (a loader that sees every symbol, of any type). */
void syms_mark(struct symtab *t, const char *name, uint64_t addr);
/* Sort and de-duplicate after adding. */
void syms_finish(struct symtab *t);
/* The symbol covering addr, or NULL: never past a symbol's size, its ELF section's end, the
 * kernel's _etext (for a symbol below it) or, in a map, 1 MiB past the last symbol -- an address
 * there is unknown (shown as the address), not "symbol+offset". */
const struct sym *syms_lookup(const struct symtab *t, uint64_t addr);
/* How many of a chain's n frames (leaf first; exact: unwind_is_exact's bits) no symbol names. */
unsigned syms_unnamed(const struct symtab *t, const uint64_t *frames, int n, const uint64_t *exact);
/* The function a frame is in: the leaf and interrupted pcs by their own address, a return
 * address by the call before it (addr - 1: the call may be its function's last instruction). */
const struct sym *syms_frame(const struct symtab *t, uint64_t addr, int is_return);
/* Move the names (and marks) to names_slide and the text to text_slide from where they were
 * loaded: link addresses become the running guest's. */
void syms_relocate(struct symtab *t, int64_t names_slide, int64_t text_slide);
/* The byte of kernel text at addr, or -1 if not in the ELF. */
int syms_byte(const struct symtab *t, uint64_t addr);
/* Where pc sits in its function's frame setup (entry, after push rbp, at ret, or body), from the
 * image's text (insn.h); *adj (may be NULL): how far above sp the caller's sp is at PC_AT_ENTRY
 * on aarch64. */
enum unwind_pc syms_pc_kind(const struct symtab *t, uint64_t pc, int *adj);
/* 1 if a vCPU stopped at pc is idle (after x86's `hlt`, at or after aarch64's `wfi`/`wfe`), 0 if
 * not, -1 if unknown. */
int syms_idle(const struct symtab *t, uint64_t pc);
/* A symbol's display name: "name", or perf's "name [module]" for a module's. */
void syms_name(const struct sym *s, char *out, size_t cap);
/* name as every output writes a frame (gdbsample-analyze's folded.safe_name) at o, or only counted
 * when o is NULL; returns its length (o needs one byte more, for the NUL). */
size_t syms_escape(char *o, const char *name);
/* "name+0xoff" or "name+0xoff [module]": a frame at off bytes into s. */
void syms_name_off(const struct sym *s, uint64_t off, char *out, size_t cap);
/* Format addr as "sym+0xoff" (or hex if unknown) into out. */
void syms_format(const struct symtab *t, uint64_t addr, char *out, size_t cap);
void syms_free(struct symtab *t);

#endif
