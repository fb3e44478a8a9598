/* SPDX-License-Identifier: MIT */
/* textnum.h: strict numbers from text -- digits only (no sign, space, prefix or locale), overflow refused. */
#ifndef TEXTNUM_H
#define TEXTNUM_H
#include <stddef.h>
#include <stdint.h>

/* The n bytes at s as a hex number (0-9, a-f, A-F only, at least one digit) no larger than max:
 * 0 and *out set, or -1 (*out untouched). "0x", "+", "-", " " and any other byte are refused. */
int textnum_hex(const char *s, size_t n, uint64_t max, uint64_t *out);
/* The same in decimal (0-9 only). */
int textnum_dec(const char *s, size_t n, uint64_t max, uint64_t *out);
/* NUL-terminated forms of the two. */
int textnum_hexz(const char *s, uint64_t max, uint64_t *out);
int textnum_decz(const char *s, uint64_t max, uint64_t *out);

#endif
