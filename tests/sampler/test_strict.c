/* SPDX-License-Identifier: MIT */
/* test_strict.c: numbers read from text are read whole or refused (textnum.c, the map parser). */
#include "check.h"
#include "../../sampler/cli.h"
#include "../../sampler/conn.h"
#include "../../sampler/symbols.h"
#include "../../sampler/task.h"
#include "../../sampler/textnum.h"
#include "../../sampler/writer.h"
#include <stdlib.h>
#include <stdint.h>
#include <string.h>

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
	syms_free(&t);
	CHECK(map("                 U undefined\n                 w weak_undef\n", &t, why, sizeof why) == -1 &&
	      strstr(why, "empty")); /* nm's undefined lines: skipped, nothing else here */
	syms_free(&t);
	CHECK(map(text, &t, why, sizeof why) == 0);
	const struct sym *s = syms_lookup(&t, 0xffffffffc0000010ull);
	CHECK(s && !strcmp(s->name, "modfn"));
	s = syms_lookup(&t, 0xffffffff8100003full);
	CHECK(s && !strcmp(s->name, "sized") && s->size == 0x40);
	s = syms_lookup(&t, 0xffffffff81000101ull);
	CHECK(s && strlen(s->name) == 300);                 /* was cut at 255 */
	s = syms_lookup(&t, 0xffffffff81000200ull);
	CHECK(s && !strcmp(s->name, "upper"));
	syms_free(&t);
	/* a name is stored as every output writes it: ';', controls but tab, DEL as \xNN */
	CHECK(map("ffffffff81000000 T a;b\x1b[2J\x7f\x01\xc3\xa9\n", &t, why, sizeof why) == 0);
	CHECK(t.n == 1 && !strcmp(t.syms[0].name, "a\\x3bb\\x1b[2J\\x7f\\x01\xc3\xa9"));
	syms_free(&t);
	memset(&t, 0, sizeof t);
	CHECK(syms_add(&t, 0x1000, 0, "tab\tnl\ncr\r") == 0 && !strcmp(t.syms[0].name, "tab\tnl\\x0acr\\x0d"));
	syms_free(&t);
}

/* --comm: a pattern that would take gigabytes to compile is refused at once (issue 22). */
static void test_comm_cost(void)
{
	struct task_filter f = { 0 };
	char why[100];
	const char *bad[] = { "a{1,32767}", "a{61}", "x{0,100}", "((a{1,16}){1,16}){1,16}", "(a{1,60}){1,60}(b{1,60}){1,60}",
			      "(((((((((((((((((((((((((((((((((a)))))))))))))))))))))))))))))))))" };
	for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
		why[0] = 0;
		CHECK(task_filter_comm(&f, bad[i], why, sizeof why) == -1 && why[0]);
		CHECK(!f.has_re);
	}
	CHECK(task_filter_comm(&f, "a{1,32767}", why, sizeof why) == -1 && strstr(why, "repeat count 32767"));
	const char *good[] = { "^(bash|sh)$", "[[:alpha:]]{1,15}", "kworker/[0-9]+:.*", "a{1,60}", "(a{1,60}){1,60}",
			       "a\\{1,32767\\}", "[{]{1,60}", "[]{]{2}", "\\\\x3b" };
	for (size_t i = 0; i < sizeof good / sizeof *good; i++) {
		CHECK(task_filter_comm(&f, good[i], why, sizeof why) == 0);
		task_filter_free(&f);
	}
	CHECK(task_filter_comm(&f, "a{1,60}", why, sizeof why) == 0);
	struct task_id id = { .pid = 1, .tgid = 1 };
	memcpy(id.comm, "aaaaaaaaaaaaaaa", 15);
	CHECK(task_filter_match(&f, &id, 1));
	task_filter_free(&f);
}

/* cli_parse on "-p 1 FLAG VALUE" (the value may hold spaces). */
static int cli1(struct opts *o, const char *flag, const char *value)
{
	char *argv[] = { "gdbsample", "-p", "1", (char *)flag, (char *)value, "-e", "k", NULL };
	return cli_parse(o, 7, argv);
}

/* Option values strtoul/strtod took in part or with what they skip (issue 22's sibling class). */
static void test_cli_values(void)
{
	struct opts o;
	const char *range_bad[] = { " ff:100", "ff: 100", "-1:ffff", "ff:-1", "+ff:100", "ff:0x", "0xg:ff",
				    "ff:10000000000000000", "ffffffff8O:ffffffffff" };
	for (size_t i = 0; i < sizeof range_bad / sizeof *range_bad; i++)
		CHECK(cli1(&o, "--kernel-range", range_bad[i]) == -1 && strstr(o.errstr, "--kernel-range"));
	CHECK(cli1(&o, "--kernel-range", "0xffffffff80000000:FFFFFFFFBFFFFFFF") == 0 &&
	      o.klo == 0xffffffff80000000ull && o.khi == 0xffffffffbfffffffull);
	const char *cpus_bad[] = { " 1", "+1", "1, 2", "1 ", "0-+3", "99999999999999999999", "0x1", "1-", "-1" };
	for (size_t i = 0; i < sizeof cpus_bad / sizeof *cpus_bad; i++)
		CHECK(cli1(&o, "--cpus", cpus_bad[i]) == -1 && strstr(o.errstr, "--cpus"));
	CHECK(cli1(&o, "--cpus", "0,2-3") == 0);
	const char *dur_bad[] = { " 1", "+1", "0x10", "1e", "inf", "nan", "1,5", ".", "1 " };
	for (size_t i = 0; i < sizeof dur_bad / sizeof *dur_bad; i++) {
		CHECK(cli1(&o, "-d", dur_bad[i]) == -1 && strstr(o.errstr, "-d"));
		CHECK(cli1(&o, "--max-pause", dur_bad[i]) == -1 && strstr(o.errstr, "--max-pause"));
	}
	CHECK(cli1(&o, "-d", "2.5") == 0 && o.duration == 2.5);
	CHECK(cli1(&o, "-d", "1e1") == 0 && o.duration == 10);
	CHECK(cli1(&o, "-d", ".5") == 0 && o.duration == 0.5);
	CHECK(cli1(&o, "--max-pause", "0") == 0 && o.max_pause == 0);
	const char *kaslr_bad[] = { " 1000", "+1000", "--1000", "0x", "1000 ", "-0x-1000", "10000000000000000000" };
	for (size_t i = 0; i < sizeof kaslr_bad / sizeof *kaslr_bad; i++)
		CHECK(cli1(&o, "--kaslr-offset", kaslr_bad[i]) == -1 && strstr(o.errstr, "--kaslr-offset"));
	CHECK(cli1(&o, "--kaslr-offset", "-0x200000") == 0 && o.kaslr == -0x200000);
	CHECK(cli1(&o, "--kaslr-offset", "1e00000") == 0 && o.kaslr == 0x1e00000);
	CHECK(cli1(&o, "--comm", "a{1,32767}") == -1 && strstr(o.errstr, "--comm") && strstr(o.errstr, "repeat count"));
}

/* The report's header lines keep one line each whatever a file name holds. */
static void test_report_header(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);
	struct writer *w = report_writer_new(f, NULL, 8, 0);
	struct run_info ri = { 1, 100, 1000000000LL, 0, 0, 0, NULL, "via qmp\x1b[2J", "kernel evil\nname.elf", NULL, NULL };
	w->finish(w, &ri);
	w->free(w);
	fclose(f);
	CHECK(strstr(buf, "\nattached via qmp\\x1b[2J\nkernel evil\\x0aname.elf\n") != NULL);
	free(buf);
}

/* -H HOST:PORT: the port is digits only, 1-65535 (strtol took " 80" and "+80") */
static void test_hostport(void)
{
	char host[64];
	int port = 7;
	CHECK(conn_parse_hostport("127.0.0.1:1234", host, sizeof host, &port) == 0 && port == 1234 &&
	      !strcmp(host, "127.0.0.1"));
	CHECK(conn_parse_hostport("[::1]:65535", host, sizeof host, &port) == 0 && port == 65535 && !strcmp(host, "::1"));
	port = 7;
	CHECK(conn_parse_hostport("host: 80", host, sizeof host, &port) == -1 && port == 7);
	CHECK(conn_parse_hostport("host:+80", host, sizeof host, &port) == -1);
	CHECK(conn_parse_hostport("host:80 ", host, sizeof host, &port) == -1);
	CHECK(conn_parse_hostport("host:0", host, sizeof host, &port) == -1);
	CHECK(conn_parse_hostport("host:65536", host, sizeof host, &port) == -1);
	CHECK(conn_parse_hostport("host:", host, sizeof host, &port) == -1);
	CHECK(conn_parse_hostport(":80", host, sizeof host, &port) == -1);
}

void test_strict(void)
{
	test_textnum();
	test_hostport();
	test_map_strict();
	test_comm_cost();
	test_cli_values();
	test_report_header();
}
