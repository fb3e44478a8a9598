/* SPDX-License-Identifier: MIT */
/* fuzz_threads.c: libFuzzer harness -- thread-list replies (gdb_parse_threads), one reply a line,
 * accumulated as list_threads does. */
#include "../sampler/gdb.h"
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	int pids[GDB_MAX_CPUS], tids[GDB_MAX_CPUS], n = 0;
	const char *p = (const char *)data, *e = p + size;
	while (p < e) {
		const char *nl = memchr(p, '\n', (size_t)(e - p));
		size_t len = nl ? (size_t)(nl - p) : (size_t)(e - p);
		char *r = malloc(len + 1); /* exact size: ASan sees any read past the reply */
		if (!r) return 0;
		memcpy(r, p, len);
		r[len] = 0;
		int before = n, rc = gdb_parse_threads(r, len, pids, tids, GDB_MAX_CPUS, &n);
		free(r);
		if (n < before || n > GDB_MAX_CPUS || (rc == GDB_TL_END && n != before)) abort();
		for (int i = 0; i < n; i++)
			if (tids[i] < 0 || pids[i] < 0) abort();
		if (rc != GDB_TL_MORE) break;
		p += len + 1;
	}
	return 0;
}
