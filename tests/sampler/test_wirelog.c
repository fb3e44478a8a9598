/* SPDX-License-Identifier: MIT */
/* test_wirelog.c: the wire log's lines on literals -- escapes, the time, a cut that says how much. */
#include "check.h"
#include "../../sampler/wirelog.h"

static void test_line(void)
{
	char out[256];
	size_t n = wirelog_format(out, sizeof out, 12345678901234LL, 42, "127.0.0.1:1234", '>',
				  "\x03$g#67\\\n", 8);
	CHECK_STR(out, "12345.678901 42 127.0.0.1:1234 > \\x03$g#67\\\\\\x0a\n");
	CHECK(n == strlen(out));
	n = wirelog_format(out, sizeof out, 0, 1, "guard", '<', "", 0);
	CHECK_STR(out, "0.000000 1 guard < \n");
}

static void test_cut(void)
{
	char big[1000];
	memset(big, 0xff, sizeof big); /* four bytes a byte: far past 128 */
	char out[128];
	size_t n = wirelog_format(out, sizeof out, 0, 1, "w", '<', big, sizeof big);
	CHECK(n == strlen(out) && n < sizeof out);
	CHECK(out[n - 1] == '\n');
	const char *more = strstr(out, "...(");
	CHECK(more != NULL);
	size_t shown = 0;
	for (const char *p = strstr(out, "< ") + 2; p < more; p += 4) shown++;
	char want[32];
	snprintf(want, sizeof want, "...(%zu more)\n", sizeof big - shown);
	CHECK_STR(more, want); /* what was left out, counted */
	CHECK(wirelog_format(out, 1, 0, 1, "w", '<', big, 4) == 0 && out[0] == 0);
}

void test_wirelog(void)
{
	test_line();
	test_cut();
}
