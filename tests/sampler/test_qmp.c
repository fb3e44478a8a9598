/* SPDX-License-Identifier: MIT */
/* test_qmp.c: the JSON reader behind the QMP client, on literal byte strings. */
#include "check.h"
#include "../../sampler/qmp.h"

static struct jval J(const char *s)
{
	struct jval v = { s, strlen(s) };
	return v;
}

static void scan(void)
{
	const char *greet = "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 0, \"minor\": 2, \"major\": 7}}, "
			    "\"capabilities\": [\"oob\"]}}\r\n";
	CHECK(json_scan(greet, strlen(greet)) == (long)strlen(greet) - 2);
	for (size_t cut = 0; cut < strlen(greet) - 2; cut++) /* every prefix: read more */
		CHECK(json_scan(greet, cut) == 0);
	const char *two = "{\"return\": {}}\r\n{\"event\": \"STOP\"}";
	CHECK(json_scan(two, strlen(two)) == 14);
	CHECK(json_scan("  {\"a\":[1,2.5e3,-0,true,false,null]}", 36) == 36);
	CHECK(json_scan("hello\n", 6) == -1);             /* not JSON: a serial console */
	CHECK(json_scan("{\"a\" 1}", 7) == -1);           /* missing colon */
	CHECK(json_scan("{\"a\":tru}", 9) == -1);         /* bad literal */
	CHECK(json_scan("{\"a\":01}", 8) == -1);          /* leading zero */
	CHECK(json_scan("{\"a\":\"x\ny\"}", 10) == -1);   /* raw control character in a string */
	CHECK(json_scan("[1,]", 4) == -1);
	CHECK(json_scan("{\"a\":\"\\\"}\"}", 11) == 11);  /* escaped quote does not end the string */
	char deep[200];
	memset(deep, '[', sizeof deep);
	CHECK(json_scan(deep, sizeof deep) == -1);        /* deeper than any QMP reply */
}

static void walk(void)
{
	struct jval v = J("{\"return\": [{\"cpu-index\": 0, \"thread-id\": 4242, \"props\": {\"core-id\": 0}},"
			  " {\"cpu-index\": 1, \"thread-id\": 4243}], \"id\": \"x\"}");
	struct jval x;
	long long n = 0;
	CHECK(json_path(&v, "return.1.thread-id", &x) == 0 && json_int(&x, &n) == 0 && n == 4243);
	CHECK(json_path(&v, "return.0.props.core-id", &x) == 0 && json_int(&x, &n) == 0 && n == 0);
	CHECK(json_path(&v, "return.2", &x) == -1);
	CHECK(json_path(&v, "return.0.nope", &x) == -1);
	CHECK(json_member(&v, "event", &x) == -1);
	struct jval kvm = J("{\"return\": {\"enabled\": false, \"present\": true}}");
	CHECK(json_path(&kvm, "return.enabled", &x) == 0 && json_bool(&x) == 0);
	CHECK(json_path(&kvm, "return.present", &x) == 0 && json_bool(&x) == 1);
	struct jval empty = J("{\"return\": {}}");
	CHECK(json_path(&empty, "return", &x) == 0 && x.len == 2);
	CHECK(json_member(&x, "status", &x) == -1);
	struct jval arr = J("[]");
	CHECK(json_index(&arr, 0, &x) == -1);
}

static void strings(void)
{
	char out[64];
	struct jval s = J("\"gdb: filename=tcp:127.0.0.1:1234,server=on\\r\\nserial0: x\\r\\n\"");
	CHECK(json_str(&s, out, sizeof out) > 0);
	CHECK_STR(out, "gdb: filename=tcp:127.0.0.1:1234,server=on\r\nserial0: x\r\n");
	struct jval u = J("\"\\u00e9\\u20ac\\ud83d\\ude00\\/\\\\\"");
	CHECK(json_str(&u, out, sizeof out) == 11);
	CHECK_STR(out, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80/\\");
	struct jval lone = J("\"\\udc00\"");
	CHECK(json_str(&lone, out, sizeof out) == -1);    /* a lone low surrogate */
	struct jval bad = J("\"\\q\"");
	CHECK(json_str(&bad, out, sizeof out) == -1);
	struct jval num = J("42");
	CHECK(json_str(&num, out, sizeof out) == -1);     /* not a string */
	CHECK(json_str(&s, out, 8) == -1);                /* does not fit: refused, not cut */
	struct jval key = J("{\"st\\u0061tus\": \"paused\"}");  /* keys are compared decoded */
	struct jval x;
	CHECK(json_member(&key, "status", &x) == 0 && json_str(&x, out, sizeof out) == 6);
	CHECK_STR(out, "paused");
}

void test_qmp(void)
{
	scan();
	walk();
	strings();
}
