/* SPDX-License-Identifier: MIT */
/* imgcache.h: a compressed kernel image's decompressed payload kept by content under
 * $XDG_CACHE_HOME/gdbsample/, so a second start on the same vmlinuz reads it instead of running
 * xz again. The entry's header (pure: encoded and checked on bytes) names the image by its SHA-256
 * and the payload by its own; an entry is used only when both match, the file and its directory
 * belong to this user and nobody else may write them -- and what it holds is parsed as any -e
 * file is. */
#ifndef IMGCACHE_H
#define IMGCACHE_H
#include <stddef.h>
#include <stdint.h>

#define IMGCACHE_HDR 128               /* header bytes before the payload */
#define IMGCACHE_SHA 32                /* SHA-256 */
#define IMGCACHE_MAX_ENTRIES 4         /* image entries kept (the least recently stored go first) */

/*
 * Entry layout (little-endian):
 *   0   8  magic "gdbsimg\0"          48   8  payload bytes
 *   8   4  version (1)                56  32  the payload's SHA-256
 *  12   4  header bytes (128)         88   8  codec ("xz", "gzip", "zstd", "lz4"; NUL-padded)
 *  16  32  the image file's SHA-256   96  32  zero
 */
struct imgcache_hdr {
	uint8_t key[IMGCACHE_SHA];     /* the image file's SHA-256 */
	uint64_t len;                  /* payload bytes */
	uint8_t sum[IMGCACHE_SHA];     /* the payload's SHA-256 */
	const char *codec;             /* one of the names above (static), or NULL */
};

/* SHA-256 of n bytes at p into out. */
void imgcache_sha256(const uint8_t *p, size_t n, uint8_t out[IMGCACHE_SHA]);
/* The header for a payload (its SHA-256 computed here) into out. */
void imgcache_encode(uint8_t out[IMGCACHE_HDR], const uint8_t key[IMGCACHE_SHA], const char *codec,
		     const uint8_t *payload, size_t len);
/* Check the header bytes (n of them) of an entry file of file_size bytes against the image's key:
 * 0 with *h, or -1 with one line in why (not an entry, another version, another image, a length
 * the file does not have, an unknown codec). */
int imgcache_parse(const uint8_t *b, size_t n, const uint8_t key[IMGCACHE_SHA], uint64_t file_size,
		   struct imgcache_hdr *h, char *why, size_t cap);
/* Does the payload match the header (its SHA-256) and start as an ELF? 0, or -1 with why. */
int imgcache_verify(const struct imgcache_hdr *h, const uint8_t *payload, size_t len, char *why, size_t cap);

/* What a lookup or store did, for gdbsample's messages (never the summary: a capture is the same
 * whether the cache was used or not). */
enum { IMGCACHE_OFF, IMGCACHE_HIT, IMGCACHE_STORED, IMGCACHE_UNSTORED, IMGCACHE_REFUSED };

/* The entry for key in dir, mapped (read-only file pages, copied on write): 1 with *payload and
 * *len, *codec, and *map and *maplen for imgcache_release; 0 when there is none; -1 when one is there
 * but refused (damaged, another image's, not this user's or writable by others), why saying so. */
int imgcache_get(const char *dir, const uint8_t key[IMGCACHE_SHA], uint8_t **payload, size_t *len,
		 const char **codec, void **map, size_t *maplen, char *why, size_t cap);
/* Unmap what imgcache_get mapped (map NULL: nothing). */
void imgcache_release(void *map, size_t maplen);
/* Store a payload for key in dir (created 0700; written to a temporary file, then renamed; the
 * oldest entries past IMGCACHE_MAX_ENTRIES removed): 0, or -1 with why (nothing half-written). */
int imgcache_put(const char *dir, const uint8_t key[IMGCACHE_SHA], const char *codec, const uint8_t *payload,
		 size_t len, char *why, size_t cap);

#endif
