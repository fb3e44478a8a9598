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
