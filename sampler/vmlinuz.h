/* SPDX-License-Identifier: MIT */
/* vmlinuz.h: extract the kernel ELF (vmlinux) from a compressed x86 bzImage held in memory. */
#ifndef VMLINUZ_H
#define VMLINUZ_H
#include "err.h"
#include <stddef.h>
#include <stdint.h>

#define VMLINUZ_MAX_OUT ((size_t)1 << 30) /* default cap on the decompressed kernel: 1 GiB */

struct vmlinuz {
	size_t max_out;    /* refuse a kernel larger than this (0 = VMLINUZ_MAX_OUT) */
	const char *codec; /* "gzip", "xz", "zstd", "lz4", ... once the payload is recognised */
	int err;           /* sticky error code (ERR_*) */
	char errstr[ERR_MAX];  /* what went wrong, one line */
};

/* 1 if img carries an x86 boot header ("HdrS") for a bzImage (loaded high), else 0. */
int vmlinuz_is_bzimage(const uint8_t *img, size_t n);
/* Decompress the bzImage payload into a malloc'd ELF (*elf, *elflen; caller frees); 0 or -1. */
int vmlinuz_extract(struct vmlinuz *z, const uint8_t *img, size_t n, uint8_t **elf, size_t *elflen);

/* Decompress one gzip, xz or zstd stream (recognised by its magic) into a malloc'd buffer; the
 * stream's own end mark ends it. 0 or -1 (z->errstr: an unknown codec, a truncated stream). */
int vmlinuz_decompress(struct vmlinuz *z, const uint8_t *p, size_t len, uint8_t **out, size_t *outlen);

#endif
