/* SPDX-License-Identifier: MIT */
/* bytes.h: little-endian integers read from and written to byte buffers (any alignment). */
#ifndef BYTES_H
#define BYTES_H
#include <stdint.h>

/* The n <= 8 bytes at p as an unsigned little-endian number. */
static inline uint64_t le_n(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
	return v;
}

/* The 2, 4 or 8 bytes at p, little-endian. */
static inline uint16_t le16(const uint8_t *p)
{
	return (uint16_t)(p[0] | (unsigned)p[1] << 8);
}

static inline uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static inline uint64_t le64(const uint8_t *p)
{
	return le32(p) | (uint64_t)le32(p + 4) << 32;
}

/* The low n <= 8 bytes of v at p, little-endian. */
static inline void put_le_n(uint8_t *p, uint64_t v, int n)
{
	for (int i = 0; i < n; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* v at p as 2, 4 or 8 bytes, little-endian. */
static inline void put_le16(uint8_t *p, uint16_t v)
{
	put_le_n(p, v, 2);
}

static inline void put_le32(uint8_t *p, uint32_t v)
{
	put_le_n(p, v, 4);
}

static inline void put_le64(uint8_t *p, uint64_t v)
{
	put_le_n(p, v, 8);
}

#endif
