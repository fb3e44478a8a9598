/* SPDX-License-Identifier: MIT */
/* image.h: the guest kernel as given with -e -- an ELF, a compressed vmlinuz, a symbol map, or an
 * image and a map together: names, text, and whichever unwind tables the image carries. */
#ifndef IMAGE_H
#define IMAGE_H
#include "err.h"
#include <gelf.h>
#include "arm64img.h"
#include "guestos.h"
#include "kofile.h"
#include "modules.h"
#include "offcpu.h"
#include "symbols.h"
#include "unwind_cfi.h"
#include "unwind_orc.h"

#define IMAGE_MAX_FILES 16 /* -e given at most: a kernel image, a map, and .ko files or directories */

/* What to load besides names and text. */
enum { IMG_WANT_ORC = 1, IMG_WANT_CFI = 2, IMG_WANT_OFFCPU = 4, /* OFFCPU: the task list's layout from BTF */
       IMG_NO_CACHE = 8 };  /* --no-cache: decompress a compressed image, neither read nor keep it (imgcache.h) */

struct image {
	struct symtab syms;         /* names (.symtab or a map) and text (ELF); relocated once the
				     * KASLR offset is known */
	uint8_t *elfbuf;            /* the ELF (the file, or a vmlinuz's payload), or NULL */
	size_t elflen;              /* its size */
	void *elfmap;               /* elfbuf lies in this mapping of an image cache entry (imgcache.h),
				     * which is unmapped, not freed; else NULL */
	size_t elfmaplen;           /* ...its size */
	Elf *elf;                   /* libelf handle on elfbuf (kept while CFI needs it) */
	const char *codec;          /* a vmlinuz payload's compression ("xz" ...), or NULL */
	int cache;                  /* IMGCACHE_*: what the image cache did for a compressed image */
	int cache_stored;           /* ...and whether the payload was kept (after a refused entry too) */
	char cache_why[400];        /* ...the entry's path, or why it was refused or not stored */
	int has_orc;                /* orc holds the image's ORC tables */
	struct orc_table orc;       /* ...(link addresses: bias = the KASLR offset) */
	int has_cfi;                /* cfi holds the image's .eh_frame/.debug_frame */
	struct cfi_ctx cfi;         /* ...(bias likewise) */
	int has_map;                /* a text map gave names */
	uint8_t *a64buf;            /* an arm64 Image (raw, or a zboot's payload) until a map places
				     * its text, else NULL */
	size_t a64len;              /* its size */
	struct a64img a64;          /* what its header says */
	char a64name[64];           /* its file name, for messages */
	int text_from_map;          /* the text was placed by the map's _stext (an arm64 Image): a
				     * text match at an offset proves the map's names at the same one */
	int names_kallsyms;         /* names came from the image's own kallsyms tables (no map) */
	uint64_t a64_vectors;       /* an arm64 Image named by its own kallsyms: the link address of
				     * `vectors` (VBAR_EL1 points there: it places the text), else 0 */
	uint64_t text_lo, text_hi;  /* the image's executable sections [lo, hi), link addresses */
	int want_os;                /* OS_AUTO, or the OS --os names (OS_NONE: no attribution) */
	const struct taskdesc *desc; /* --tasks: the description to resolve in the ELF's DWARF, or NULL */
	struct guestos os;          /* who runs on each vCPU (os.os == OS_NONE: off, os.why why) */
	int has_btf;                /* the image has .BTF (a Linux kernel) */
	struct mod_layout modl;     /* struct module's layout from it (modl.ok, else modl.why) */
	int want;                   /* IMG_WANT_* given to image_load */
	int ocl_ok;                 /* IMG_WANT_OFFCPU: ocl holds task_struct's layout from BTF ... */
	struct offcpu_layout ocl;   /* (offcpu_linux.h; placed by the symbols at --off-cpu's start) */
	char ocl_why[256];          /* ...else why not */
	struct koset kos;           /* .ko files and directories given (kofile.h) */
	int only_kos;               /* every -e was a .ko or a directory: the kernel is the guest's */
	char what[256];             /* what was loaded, for the report: "vmlinuz-6.1 (xz) + kallsyms" */
	int err;                    /* sticky error code */
	char errstr[ERR_MAX];           /* what went wrong */
};

struct taskdesc;
/* Load one to IMAGE_MAX_FILES files (at most one ELF or vmlinuz, at most one map; .ko files and
 * directories of them go to kos). desc (--tasks, or NULL) is resolved in the ELF's DWARF: an
 * image it cannot be resolved in is an error (ERR_USAGE), never a silent fallback. */
int image_load(struct image *im, const char *const *paths, int npaths, int want, int want_os,
	       const struct taskdesc *desc);
/* Apply the KASLR offsets (kaslr.h): names and text move to the guest's addresses, the image's
 * tables subtract the text's offset from every pc they look up. */
void image_relocate(struct image *im, int64_t text_slide, int64_t names_slide);
void image_free(struct image *im);
struct kallsyms;
/* Add decoded kallsyms tables (kallsyms.h) to t: text symbols as names, every type as marks. */
int image_add_kallsyms(struct symtab *t, const struct kallsyms *k);

#endif
