/* SPDX-License-Identifier: MIT */
/* fuzz_qmp.c: libFuzzer harness -- the QMP JSON reader: json_scan over the stream as next_msg
 * does, then json_member/index/path/str/int/bool on every message. */
#include "../sampler/qmp.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static void walk(const struct jval *v, int depth)
{
	struct jval x;
	char s[256];
	long long i;
	json_str(v, s, sizeof s);
	json_int(v, &i);
	json_bool(v);
	if (depth > 4) return;
	static const char *const keys[] = { "return", "error", "desc", "QMP", "event", "status", "" };
	for (size_t k = 0; k < sizeof keys / sizeof keys[0]; k++)
		if (json_member(v, keys[k], &x) == 0) walk(&x, depth + 1);
	for (int k = 0; k < 3; k++)
		if (json_index(v, k, &x) == 0) walk(&x, depth + 1);
	json_path(v, "return.0.thread-id", &x);
	json_path(v, "return.status", &x);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *buf = malloc(size ? size : 1); /* not NUL-terminated: the reader is given lengths */
	if (!buf) return 0;
	memcpy(buf, data, size);
	size_t off = 0;
	while (off < size) {
		long n = json_scan(buf + off, size - off);
		if (n <= 0) break;
		if ((size_t)n > size - off) abort();
		struct jval v = { buf + off, (size_t)n };
		while (v.len && (*v.p == ' ' || *v.p == '\t' || *v.p == '\r' || *v.p == '\n')) v.p++, v.len--;
		walk(&v, 0);
		off += (size_t)n;
	}
	free(buf);
	return 0;
}
