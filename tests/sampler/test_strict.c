/* test_strict.c: numbers read from text are read whole or refused (textnum.c, the map parser). */
#include "check.h"
#include "../../sampler/symbols.h"
#include "../../sampler/textnum.h"
#include <stdint.h>

static void test_textnum(void)
{
	uint64_t v = 7;
	CHECK(textnum_hexz("ffffffff81000000", UINT64_MAX, &v) == 0 && v == 0xffffffff81000000ull);
	CHECK(textnum_hexz("FFFFFFFFFFFFFFFF", UINT64_MAX, &v) == 0 && v == UINT64_MAX);
	CHECK(textnum_hexz("0000000000000000001", UINT64_MAX, &v) == 0 && v == 1); /* leading zeros: value counts */
	v = 7;
	CHECK(textnum_hexz("10000000000000000", UINT64_MAX, &v) == -1 && v == 7); /* 2^64: overflow, untouched */
	CHECK(textnum_hexz("ffffffff8O1", UINT64_MAX, &v) == -1);   /* a letter O, not a zero */
	CHECK(textnum_hexz("0x10", UINT64_MAX, &v) == -1);
	CHECK(textnum_hexz("-1", UINT64_MAX, &v) == -1);            /* strtoull: 2^64 - 1 */
	CHECK(textnum_hexz("+1", UINT64_MAX, &v) == -1);
	CHECK(textnum_hexz(" 1", UINT64_MAX, &v) == -1);
	CHECK(textnum_hexz("1 ", UINT64_MAX, &v) == -1);
	CHECK(textnum_hexz("", UINT64_MAX, &v) == -1);
	CHECK(textnum_hex("12zz", 2, UINT64_MAX, &v) == 0 && v == 0x12); /* a span: only its bytes */
	CHECK(textnum_decz("18446744073709551615", UINT64_MAX, &v) == 0 && v == UINT64_MAX);
	CHECK(textnum_decz("18446744073709551616", UINT64_MAX, &v) == -1);
	CHECK(textnum_decz("99999999999999999999999", UINT64_MAX, &v) == -1);
	CHECK(textnum_decz("65535", 65535, &v) == 0 && v == 65535);
	CHECK(textnum_decz("65536", 65535, &v) == -1);
	CHECK(textnum_decz("5", 0, &v) == -1);
	CHECK(textnum_decz("0", 0, &v) == 0 && v == 0);
	CHECK(textnum_decz("1e3", UINT64_MAX, &v) == -1);
	CHECK(textnum_decz("a", UINT64_MAX, &v) == -1);
	CHECK(textnum_decz("\xd9\xa3", UINT64_MAX, &v) == -1);      /* ARABIC-INDIC DIGIT THREE */
}

/* Parses text as a map; the error message (or "") into why. */
static int map(const char *text, struct symtab *t, char *why, size_t cap)
{
	memset(t, 0, sizeof *t);
	int rc = syms_parse_map(t, text, strlen(text));
	snprintf(why, cap, "%s", rc ? t->errstr : "");
	return rc;
}

static void test_map_strict(void)
{
	struct symtab t;
	char why[160];
	/* issue 22: "ffffffff8O1..." was read as 0xffffffff8 by sscanf("%llx") */
	CHECK(map("ffffffff81000000 T good\nffffffff8O100000 T wrong\n", &t, why, sizeof why) == -1);
	CHECK(strstr(why, "line 2") && strstr(why, "'ffffffff8O100000'") && strstr(why, "hex"));
	syms_free(&t);
	const char *bad[] = {
		"0xffffffff81000000 T f\n",             /* a prefix no map has */
		"-1 T f\n",                             /* strtoull's 2^64 - 1 */
		"+ff T f\n",
		"10000000000000000 T f\n",              /* 65 bits */
		"ffffffff81000000 00000zz0 T f\n",      /* a bad size (was read as 0) */
		"ffffffff81000000 T\n",                 /* no name */
	};
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		CHECK(map(bad[i], &t, why, sizeof why) == -1);
		CHECK(strstr(why, "line 1") != NULL);
		syms_free(&t);
	}
	static const char nul[] = "ffffffff81000000 T f\0g\n";
	memset(&t, 0, sizeof t);
	CHECK(syms_parse_map(&t, nul, sizeof nul - 1) == -1 && strstr(t.errstr, "NUL"));
	syms_free(&t);
	/* what maps really hold still reads: kallsyms' module field, nm -S, CRLF, tabs, a 300-byte name */
	char longname[301];
	memset(longname, 'n', 300);
	longname[300] = 0;
	char text[1024];
	snprintf(text, sizeof text, "ffffffffc0000000 t modfn\t[mymod]\r\n"
		 "ffffffff81000000 0000000000000040 T sized\n\t \nffffffff81000100 T %s\n"
		 "FFFFFFFF81000200 W upper\n", longname);
	CHECK(map(text, &t, why, sizeof why) == 0);
	CHECK(t.n == 4);
	const struct sym *s = syms_lookup(&t, 0xffffffffc0000010ull);
	CHECK(s && !strcmp(s->name, "modfn"));
	s = syms_lookup(&t, 0xffffffff8100003full);
	CHECK(s && !strcmp(s->name, "sized") && s->size == 0x40);
	s = syms_lookup(&t, 0xffffffff81000101ull);
	CHECK(s && strlen(s->name) == 300);                 /* was cut at 255 */
	s = syms_lookup(&t, 0xffffffff81000200ull);
	CHECK(s && !strcmp(s->name, "upper"));
	syms_free(&t);
}

void test_strict(void)
{
	test_textnum();
	test_map_strict();
}
