/* SPDX-License-Identifier: MIT */
/* fuzz_stop.c: libFuzzer harness -- stop-reply, thread-id and run-state parsing (gdb_parse_stop,
 * gdb_parse_tid, gdb_parse_status and gdb_parse_migration: QEMU's "info status" and "info
 * migrate" texts). */
#include "../sampler/gdb_reply.h"
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct gdb_stopinfo si;
	char *s = malloc(size + 1); /* exact size: ASan sees any read past the reply */
	if (!s) return 0;
	memcpy(s, data, size);
	s[size] = 0;
	if (gdb_parse_stop(s, size, &si) == 0) {
		if (si.kind != 'T' && si.kind != 'S' && si.kind != 'W' && si.kind != 'X') abort();
		if (si.sig < 0 || si.sig > 255 || si.tid < -1 || (si.tid >= 0) != (si.pid >= 0)) abort();
		if (gdb_stop_tid(s, size) != si.tid) abort();
	}
	const char *end = NULL;
	int t = gdb_parse_tid(s, &end);
	if (t >= 0 && (end < s || end > s + size)) abort();
	char st[24];
	int r = gdb_parse_status(s, st, sizeof st);
	if (r < -1 || r > 1 || strlen(st) >= sizeof st || (r != 1 && st[0])) abort();
	for (const char *q = st; *q; q++)
		if ((*q < 'a' || *q > 'z') && *q != '-') abort();
	int m = gdb_parse_migration(s);
	if (m < -1 || m > 1) abort();
	free(s);
	return 0;
}
