/* SPDX-License-Identifier: MIT */
/* fuzz_kallsyms.c: libFuzzer harness -- the kallsyms finder and decoder (ksyms_find) on arbitrary
 * bytes: it must refuse with one line or return names that obey what it checked (sorted
 * addresses, printable non-empty names, a type letter each). */
#include "../sampler/kallsyms.h"
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct kallsyms k;
	uint8_t *buf = malloc(size ? size : 1); /* exact size: ASan sees any read past the data */
	if (!buf) return 0;
	memcpy(buf, data, size);
	if (ksyms_find(&k, buf, size, 0xffffffff82000000ull) == 0) {
		if (k.n < KSYMS_MIN_SYMS || k.n > KSYMS_MAX_SYMS) abort();
		for (size_t i = 0; i < k.n; i++) {
			const char *n = ksyms_name(&k, i);
			size_t l = strlen(n);
			if (!l || l > KSYMS_NAME_MAX || (i && k.syms[i].addr < k.syms[i - 1].addr)) abort();
			for (size_t c = 0; c < l; c++)
				if ((unsigned char)n[c] <= 0x20 || (unsigned char)n[c] > 0x7e) abort();
		}
	} else if (!k.errstr[0] || strchr(k.errstr, '\n') || k.syms || k.n) {
		abort();
	}
	ksyms_free(&k);
	ksyms_anchor(buf, size);
	free(buf);
	return 0;
}
