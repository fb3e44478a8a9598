/* SPDX-License-Identifier: MIT */
/* fuzz_symmap.c: libFuzzer harness -- nm-style symbol maps (syms_parse_map), then lookups. */
#include "../sampler/symbols.h"
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct symtab t;
	char out[512];
	memset(&t, 0, sizeof t);
	char *text = malloc(size ? size : 1); /* not NUL-terminated: the parser is given a length */
	if (!text) return 0;
	memcpy(text, data, size);
	if (syms_parse_map(&t, text, size) == 0) {
		for (size_t i = 1; i < t.n; i++)
			if (t.syms[i - 1].addr >= t.syms[i].addr) abort(); /* sorted, one per address */
		for (size_t i = 0; i < t.n; i++) /* names as outputs write them: no ';', controls but tab, DEL */
			for (const char *c = t.syms[i].name; *c; c++)
				if (*c == ';' || ((unsigned char)*c < 0x20 && *c != '\t') || *c == 0x7f || !c[0]) abort();
		/* a map read whole: every line's first field is hex digits (checked by re-reading each) */
		for (size_t a = 0, line = 0; a < size; line++) {
			const uint8_t *nl = memchr(data + a, '\n', size - a);
			size_t b = nl ? (size_t)(nl - data) : size, f = a;
			while (f < b && strchr(" \t\v\f\r", data[f]) && data[f]) f++;
			if (f < b) { /* not blank: ADDR is hex up to the next white space */
				size_t e = f;
				while (e < b && !strchr(" \t\v\f\r", data[e])) e++;
				for (size_t k = f; k < e; k++)
					if (!strchr("0123456789abcdefABCDEF", data[k]) || !data[k]) abort();
			}
			a = b + 1;
		}
		for (size_t i = 0; i < t.n && i < 64; i++) {
			uint64_t a = t.syms[i].addr;
			syms_lookup(&t, a);
			syms_lookup(&t, a - 1);
			syms_frame(&t, a + 1, 1);
			syms_format(&t, a + 3, out, sizeof out);
			syms_pc_kind(&t, a, NULL);
			syms_idle(&t, a);
		}
		syms_relocate(&t, 0x1000, 0x1000);
		syms_lookup(&t, 0);
		syms_lookup(&t, ~0ull);
	}
	syms_free(&t);
	free(text);
	return 0;
}
