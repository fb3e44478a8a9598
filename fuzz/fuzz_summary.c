/* SPDX-License-Identifier: MIT */
/* fuzz_summary.c: libFuzzer harness -- the summary table's renderings of any bytes as keys, labels
 * and string values: the JSON must be ASCII and one whole JSON value by the QMP reader, every string
 * decoding back to what was given (valid UTF-8) or with U+FFFD (not). */
#include "../sampler/qmp.h"
#include "../sampler/summary.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static struct summary t;
static char out[1 << 20], text[4096], back[16384];

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	size_t n = size < sizeof text - 1 ? size : sizeof text - 1;
	memcpy(text, data, n);
	text[n] = 0; /* a C string: up to the first NUL */
	summary_init(&t);
	summary_str(&t, "s", text, text);
	summary_u64(&t, text[0] ? text : "k", "%v%s%%v", n);
	summary_real(&t, "r", NULL, (int)(n % 10), (double)n / 7.0);
	summary_null(&t, "z");
	summary_text(&t, text);
	out[0] = 0;
	summary_human(&t, out, sizeof out);
	out[0] = 0;
	summary_kv(&t, out, sizeof out);
	out[0] = 0;
	summary_json(&t, out, sizeof out);
	size_t len = strlen(out);
	for (size_t i = 0; i < len; i++)
		if ((unsigned char)out[i] >= 0x80 || ((unsigned char)out[i] < 0x20 && out[i] != '\n')) abort();
	if (len < 2 || out[len - 1] != '\n' || json_scan(out, len) != (long)len - 1) abort(); /* one object, then \n */
	struct jval all = { out, len - 1 }, sm, s;
	if (json_member(&all, "summary", &sm) < 0 || json_member(&sm, "s", &s) < 0) abort();
	if (json_str(&s, back, sizeof back) < 0) abort();
	if (!strstr(out, "\\ufffd") && strcmp(back, text)) abort(); /* valid UTF-8: the same bytes */
	qmp_peer_kind((const char *)data, size);
	return 0;
}
