/* SPDX-License-Identifier: MIT */
/* textnum.c: strict numbers from text -- digits only (no sign, space, prefix or locale), overflow refused.
 *
 * strtoul and sscanf("%llx") accept what no file or option of ours means: leading white space, a
 * sign ("-1" becomes 2^64 - 1), a "0x" prefix, and stop quietly at the first other byte, so
 * "ffffffff8O1" reads as 0xffffffff8; on overflow they saturate. Every number gdbsample reads
 * from text goes through these instead. */
#include "textnum.h"
#include <string.h>

static int digit(unsigned char c, unsigned base)
{
	unsigned v = 99;
	if (c >= '0' && c <= '9') v = c - '0';
	else if (c >= 'a' && c <= 'f') v = c - 'a' + 10u;
	else if (c >= 'A' && c <= 'F') v = c - 'A' + 10u;
	return v < base ? (int)v : -1;
}

static int parse(const char *s, size_t n, unsigned base, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;
	if (!n) return -1;
	for (size_t i = 0; i < n; i++) {
		int d = digit((unsigned char)s[i], base);
		if (d < 0 || (uint64_t)d > max || v > (max - (uint64_t)d) / base) return -1; /* v * base + d > max */
		v = v * base + (uint64_t)d;
	}
	*out = v;
	return 0;
}

int textnum_hex(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	return parse(s, n, 16, max, out);
}

int textnum_dec(const char *s, size_t n, uint64_t max, uint64_t *out)
{
	return parse(s, n, 10, max, out);
}

int textnum_hexz(const char *s, uint64_t max, uint64_t *out)
{
	return parse(s, strlen(s), 16, max, out);
}

int textnum_decz(const char *s, uint64_t max, uint64_t *out)
{
	return parse(s, strlen(s), 10, max, out);
}
