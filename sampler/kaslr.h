/* SPDX-License-Identifier: MIT */
/* kaslr.h: the running guest's KASLR offset against the image or map given, found by reading
 * guest memory where the image says known bytes are. */
#ifndef KASLR_H
#define KASLR_H
#include "err.h"
#include <stdint.h>
#include "symbols.h"

#define KASLR_ALIGN 0x200000ull          /* x86_64 CONFIG_PHYSICAL_ALIGN: the offset's granule */
#define KASLR_TOP 0xffffffffc0000000ull  /* the kernel image mapping ends here (1 GiB from
					  * __START_KERNEL_map); the image must fit below it */
#define KASLR_PROBES 9                   /* text windows compared per candidate (odd: one is the
					  * section's middle) */
#define KASLR_PROBE_LEN 64               /* ...bytes each */
#define KASLR_MIN_MATCH 90               /* percent of all probed bytes that must match, and half
					  * of each probe's: boot-time patching (alternatives,
					  * relocations, static keys) rewrites a few bytes here and
					  * there -- Debian's 6.1 matched 96 %, its worst probe 80 % --
					  * but never a whole window, as another build does */

/* How the offset was found. */
enum kaslr_how { KASLR_NONE = 0, KASLR_TEXT, KASLR_BANNER, KASLR_ASSUMED, KASLR_FORCED };
extern const char *const kaslr_how_names[];

struct kaslr {
	int64_t slide;        /* runtime address - link address of the image's text */
	enum kaslr_how how;   /* how it was found */
	int64_t names_slide;  /* the same for the names: the image's slide when they come from its
			       * .symtab, 0 for a map dumped from this boot's /proc/kallsyms, the
			       * image's slide again for its System.map */
	enum kaslr_how names_how; /* how that was found */
	int match_pct;        /* KASLR_TEXT: percent of probed bytes that matched */
	int candidates;       /* offsets tried */
	int err;              /* sticky error code */
	char errstr[ERR_MAX];     /* what went wrong */
};

/* Read len bytes of guest memory at addr: 0 ok, -1 unreadable (unmapped), -2 the connection
 * failed (err in the caller's context). */
typedef int (*kaslr_read_fn)(void *arg, uint64_t addr, uint8_t *buf, int len);

/*
 * Find the offsets. With text (an ELF or vmlinuz): compare KASLR_PROBES windows of the largest
 * text section at every candidate offset; the best must match >= KASLR_MIN_MATCH %. A kernel-mode
 * pc narrows the candidates to those whose text holds it only when some candidate can (a pc in a
 * module, above KASLR_TOP, narrows nothing), and if none of those matches every candidate is
 * tried: where the vCPUs happen to run never decides. Names from a map: the candidate where the
 * map's linux_banner reads "Linux version " (else, beside an image, the map's _stext against the
 * image's text start). Offset 0 is tried first, so our own kernel and a map dumped from this
 * boot cost one read. -1 if nothing matches (the image or map is not this guest's) or on a
 * connection error (-2 from rd).
 */
int kaslr_detect(struct kaslr *k, const struct symtab *t, int names_from_map, int have_pc, uint64_t pc,
		 kaslr_read_fn rd, void *arg);
/* 1 if a kernel-mode pc can narrow the search (the moved text can hold it), 0 if not (a module's). */
int kaslr_pc_narrows(const struct symtab *t, uint64_t pc);
/*
 * The offset from one runtime address known to lie in the image's text (arm64: VBAR_EL1, the
 * exception vectors) -- a register, not where a vCPU happens to run: first at - link (link: the
 * text's symbol it should point at, 0 if none), then every granule-aligned offset whose text
 * holds it, compared as kaslr_detect does. Names move with the text. 0, -1 (no match), -2 (rd).
 */
int kaslr_detect_at(struct kaslr *k, const struct symtab *t, uint64_t at, uint64_t link, uint64_t granule,
		    kaslr_read_fn rd, void *arg);
/* Check a forced offset the same way; 0 matches, -1 not (k->errstr says how badly). The names of
 * a map (names_from_map) are placed by its linux_banner, at the offset or at 0 (a map dumped
 * from this boot is already moved), so a forced offset never moves them twice. */
int kaslr_check(struct kaslr *k, const struct symtab *t, int names_from_map, int64_t slide, kaslr_read_fn rd,
		void *arg);

#endif
