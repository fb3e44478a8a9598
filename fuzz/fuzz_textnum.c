/* SPDX-License-Identifier: MIT */
/* fuzz_textnum.c: libFuzzer harness -- textnum's strict numbers against a reference reading. */
#include "../sampler/textnum.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

/* The reference: digits of base only, at least one, value by long arithmetic with overflow seen. */
static int reference(const uint8_t *s, size_t n, unsigned base, uint64_t max, uint64_t *out)
{
	unsigned __int128 v = 0;
	if (!n) return -1;
	for (size_t i = 0; i < n; i++) {
		int c = s[i], d = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 :
				  c >= 'A' && c <= 'F' ? c - 'A' + 10 : 99;
		if (d >= (int)base) return -1;
		v = v * base + (unsigned)d;
		if (v > max) return -1;
	}
	*out = (uint64_t)v;
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	if (size < 1) return 0;
	uint64_t max = UINT64_MAX; /* the first byte picks a bound: all 64 bits, or a small one */
	if (data[0] & 1) max = (uint64_t)data[0] * 1000003u;
	const char *s = (const char *)data + 1;
	size_t n = size - 1;
	for (unsigned base = 10; base <= 16; base += 6) {
		uint64_t got = 42, want = 0;
		int rc = base == 16 ? textnum_hex(s, n, max, &got) : textnum_dec(s, n, max, &got);
		int ref = reference((const uint8_t *)s, n, base, max, &want);
		if (rc != ref) abort();                  /* accepts exactly the strings of digits that fit */
		if (rc == 0 && got != want) abort();     /* ...with their value */
		if (rc != 0 && got != 42) abort();       /* a refusal leaves *out alone */
	}
	return 0;
}
