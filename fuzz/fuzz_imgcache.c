/* SPDX-License-Identifier: MIT */
/* fuzz_imgcache.c: libFuzzer harness -- an image cache entry's header and payload check
 * (imgcache_parse, imgcache_verify), the input taken as a whole entry file. */
#include "../sampler/imgcache.h"
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct imgcache_hdr h;
	char why[300];
	uint8_t key[IMGCACHE_SHA];
	uint8_t *b = malloc(size ? size : 1); /* exact size: ASan sees any read past the entry */
	if (!b) return 0;
	memcpy(b, data, size);
	memcpy(key, size >= 16 + IMGCACHE_SHA ? b + 16 : (const uint8_t *)"0123456789abcdef0123456789abcdef", IMGCACHE_SHA);
	if (imgcache_parse(b, size, key, size, &h, why, sizeof why) == 0) {
		if (h.len != size - IMGCACHE_HDR || !h.codec) abort();
		if (imgcache_verify(&h, b + IMGCACHE_HDR, size - IMGCACHE_HDR, why, sizeof why) == 0 &&
		    memcmp(b + IMGCACHE_HDR, "\177ELF", 4))
			abort();
	} else if (!why[0]) {
		abort();
	}
	free(b);
	return 0;
}
