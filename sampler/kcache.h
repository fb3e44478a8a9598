/* SPDX-License-Identifier: MIT */
/* kcache.h: what a bare -p read of a kernel from guest memory (names, ORC, BTF), kept in a file
 * under $XDG_CACHE_HOME/gdbsample/ relative to the kernel's _stext, so the next attach to the same
 * build -- whatever its KASLR offset -- reads a few KiB to check it instead of megabytes.
 * Encoding and decoding are pure (bytes in, bytes out); kfind.c does the files and the checks. */
#ifndef KCACHE_H
#define KCACHE_H
#include "err.h"
#include <stddef.h>
#include <stdint.h>
#include "kallsyms.h"

#define KCACHE_MAX_FILES 16          /* cache files looked at per attach */
#define KCACHE_MAX_BYTES (256u << 20) /* a larger cache file is not ours */

/* One kernel build as the cache holds it; every *_rel is an address minus the running _stext. */
struct kcache {
	uint64_t stext_mod;           /* _stext modulo 2 MiB (KASLR moves the kernel in 2 MiB steps) */
	uint64_t etext_rel;           /* _etext: a pc at most this far above _stext can be this build */
	uint64_t banner_rel;          /* linux_banner */
	const uint8_t *banner;        /* its bytes (the check: "Linux version ..." and the build) */
	uint32_t banner_len;
	uint64_t tokens_rel;          /* kallsyms_token_table */
	const uint8_t *tokens;        /* ...with kallsyms_token_index: checked against the guest */
	uint32_t tokens_len;
	struct kallsyms k;            /* the names, addresses relative (reloc[i] = 1) or absolute */
	uint8_t *reloc;               /* per symbol: 1 if its address moves with the kernel */
	uint64_t ip_rel, e_rel, h_rel; /* the ORC tables (__start_orc_unwind_ip, ..._unwind, ..._header) */
	const uint8_t *ips, *ents, *hdr;
	size_t iplen, elen, hlen;     /* 0: none */
	const uint8_t *btf;           /* .BTF, or NULL */
	size_t btflen;
	int err;                      /* sticky error code */
	char errstr[ERR_MAX];             /* what was wrong with a file */
};

/* Encode c (with k's symbols at the running addresses, stext the running _stext) into a malloc'd
 * buffer: 0 and *out, *len, or -1 (out of memory). */
int kcache_encode(const struct kcache *c, uint64_t stext, uint8_t **out, size_t *len);
/* Decode buf (kept: c points into it) into c, symbols still relative: 0, or -1 (k->errstr) for
 * anything out of bounds, unsorted or unterminated -- a cache file is checked, never trusted. */
int kcache_decode(struct kcache *c, const uint8_t *buf, size_t len);
/* The decoded names moved to a running _stext: symbols at their addresses in c->k. */
void kcache_relocate(struct kcache *c, uint64_t stext);
void kcache_free(struct kcache *c);

#endif
