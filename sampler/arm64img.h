/* SPDX-License-Identifier: MIT */
/* arm64img.h: the arm64 kernel Image (raw, PE/"MZ"-headed) and EFI zboot images given with -e. */
#ifndef ARM64IMG_H
#define ARM64IMG_H
#include "err.h"
#include <stddef.h>
#include <stdint.h>

enum { A64IMG_NONE = 0, A64IMG_IMAGE = 1, A64IMG_ZBOOT = 2 }; /* what a64img_kind found */

/* What the Image's header and contents say. */
struct a64img {
	uint64_t text_offset;  /* header: image load offset from a 2 MiB aligned base */
	uint64_t image_size;   /* header: bytes the image occupies in memory (BSS included) */
	uint64_t flags;        /* header: bit 0 big-endian, bits 1-2 page size, bit 3 placement */
	int has_pe;            /* a PE/COFF header for the EFI stub (the "MZ" magic) */
	uint64_t text_foff;    /* file offset of _stext (the PE .text section; else 0) */
	uint64_t text_len;     /* bytes of it in the file */
	uint64_t btf_foff;     /* file offset of the BTF blob found by its magic (0: none) */
	uint64_t btf_len;      /* its bytes (header + types + strings) */
	const char *codec;     /* zboot: the payload's compression */
	int err;               /* sticky error code */
	char errstr[ERR_MAX];      /* what went wrong */
};

/* A64IMG_IMAGE (magic "ARM\x64" at 0x38), A64IMG_ZBOOT ("MZ" then "zimg") or A64IMG_NONE. */
int a64img_kind(const uint8_t *b, size_t n);
/* The Image inside a zboot image, decompressed into a malloc'd buffer; 0 or -1 (x->errstr). */
int a64img_unzboot(struct a64img *x, const uint8_t *b, size_t n, uint8_t **img, size_t *imglen);
/*
 * The link address of the Image's first byte (_text) and the link address stored at one place
 * of it, from the R_AARCH64_RELATIVE relocation that fills that place at boot (a relocatable
 * Image holds zero there: the value is the relocation's addend). place is a file offset, 8-aligned
 * (e.g. kallsyms_relative_base); 0, or -1 (x->errstr) if no or more than one relocation fits.
 */
int a64img_link(struct a64img *x, const uint8_t *b, size_t n, uint64_t place, uint64_t *text_link,
		uint64_t *value);
/* Check an Image's header (a truncated file, a big-endian kernel) and find its text and BTF;
 * 0 or -1 (x->errstr, one line). */
int a64img_parse(struct a64img *x, const uint8_t *b, size_t n);

#endif
