/* SPDX-License-Identifier: MIT */
/* test_rsp.c: the RSP codec on literal byte strings. */
#include "check.h"
#include "../../sampler/rsp.h"

/* Feed a literal and collect the events and packets it produces, joined with '|'. */
static void run(struct rsp_dec *d, const char *bytes, size_t n, char *out, size_t cap)
{
	size_t off = 0, used;
	out[0] = 0;
	while (off < n) {
		enum rsp_event ev = rsp_feed(d, (const uint8_t *)bytes + off, n - off, &used);
		off += used;
		const char *tag = ev == RSP_ACK ? "+" : ev == RSP_NAK ? "-" : ev == RSP_BADSUM ? "BAD" :
			ev == RSP_OVERFLOW ? "OVER" : NULL;
		if (ev == RSP_PACKET) tag = d->pkt;
		if (tag) {
			if (out[0]) strncat(out, "|", cap - strlen(out) - 1);
			strncat(out, tag, cap - strlen(out) - 1);
		}
	}
}

#define RUN(lit, out) run(&d, lit, sizeof(lit) - 1, out, sizeof out)

static void test_encode(void)
{
	char buf[64];
	int n = rsp_encode(buf, sizeof buf, "g", 1);
	CHECK(n == 5);
	buf[n] = 0;
	CHECK_STR(buf, "$g#67");
	n = rsp_encode(buf, sizeof buf, "OK", 2);
	buf[n] = 0;
	CHECK_STR(buf, "$OK#9a");
	/* '#' and '}' are escaped with '}' and XOR 0x20; the sum covers the escaped bytes. */
	n = rsp_encode(buf, sizeof buf, "a#}", 3);
	buf[n] = 0;
	CHECK_STR(buf, "$a}\x03}]#bb");
	CHECK(rsp_encode(buf, 5, "abc", 3) == -1); /* too small */
	size_t off = 0;
	CHECK(rsp_append(buf, sizeof buf, &off, "c") == 0);
	CHECK(rsp_append(buf, sizeof buf, &off, "D;1") == 0);
	buf[off] = 0;
	CHECK_STR(buf, "$c#63$D;1#b0");
}

static void test_decode(void)
{
	struct rsp_dec d;
	char out[512];
	rsp_dec_init(&d);

	RUN("+$OK#9a", out);
	CHECK_STR(out, "+|OK");

	/* A packet split across three reads. */
	run(&d, "+$T02thr", 8, out, sizeof out);
	CHECK_STR(out, "+");
	run(&d, "ead:01;#", 8, out, sizeof out);
	CHECK_STR(out, "");
	run(&d, "04", 2, out, sizeof out);
	CHECK_STR(out, "T02thread:01;");

	/* Two packets clubbed in one read, with acks between. */
	RUN("+$OK#9a+$E14#aa", out);
	CHECK_STR(out, "+|OK|+|E14");

	/* Escapes: "}\x03" is '#', "}]" is '}'. */
	RUN("$a}\x03}]#bb", out);
	CHECK_STR(out, "a#}");

	/* Run-length: "0* " repeats '0' (' ' - 29) = 3 more times -> "0000". Sum of "0* " = 0x7a. */
	RUN("$0* #7a", out);
	CHECK_STR(out, "0000");
	/* "a*!" -> 'a' + 4 more; then "b". */
	RUN("$a*!b#0e", out);
	CHECK_STR(out, "aaaaab");

	/* A bad checksum is reported and the next packet still decodes. */
	RUN("$OK#00$OK#9a", out);
	CHECK_STR(out, "BAD|OK");
	/* A non-hex checksum digit is a bad checksum. */
	RUN("$OK#zz", out);
	CHECK_STR(out, "BAD");

	/* Stray acks, naks and garbage between packets. */
	RUN("++-x$OK#9a", out);
	CHECK_STR(out, "+|+|-|OK");
	CHECK(d.stray >= 1);

	/* Upper-case checksum digits are accepted. */
	RUN("$OK#9A", out);
	CHECK_STR(out, "OK");

	/* qRcmd output: console packets ("O" + hex) before the final OK; an E reply. */
	RUN("+$O48690a#bb+$OK#9a+$E14#aa", out);
	CHECK_STR(out, "+|O48690a|+|OK|+|E14");

	/* An empty packet (unsupported command reply). */
	RUN("$#00", out);
	CHECK_STR(out, "");
	CHECK(d.len == 0);
}

static void test_classify(void)
{
	CHECK(rsp_is_error("E14", 3));
	CHECK(!rsp_is_error("E1", 2));
	CHECK(!rsp_is_error("OK", 2));
	CHECK(rsp_is_console("O48690a", 7));
	CHECK(!rsp_is_console("OK", 2));
	CHECK(!rsp_is_console("O4869Z", 6));
	CHECK(rsp_is_stop("T02thread:01;", 13));
	CHECK(rsp_is_stop("T05thread:p01.02;", 17));
	CHECK(rsp_is_stop("S05", 3));
	CHECK(!rsp_is_stop("OK", 2));
	CHECK(!rsp_is_stop("0011", 4));
}

static void test_hex(void)
{
	uint8_t b[4];
	char h[9];
	CHECK(rsp_unhex(b, "deadBEEF", 4) == 0);
	CHECK(b[0] == 0xde && b[3] == 0xef);
	uint8_t junk[2];
	CHECK(rsp_unhex(junk, "xx", 1) == -1);
	CHECK(rsp_unhex(junk, "0g", 1) == -1 && rsp_unhex(junk, "g0", 1) == -1);
	CHECK(rsp_unhex(junk, "0a0:", 2) == -1 && rsp_unhex(junk, "0aFf", 2) == 0 && junk[1] == 0xff);
	rsp_hex(h, b, 4);
	CHECK_STR(h, "deadbeef");
	uint8_t le[8] = { 0x78, 0x56, 0x34, 0x12, 0, 0, 0, 0x80 };
	CHECK(rsp_le(le, 4) == 0x12345678);
	CHECK(rsp_le(le, 8) == 0x8000000012345678ull);
}

static uint8_t sum_of(const char *s)
{
	uint8_t sum = 0;
	while (*s) sum += (uint8_t)*s++;
	return sum;
}

/* The fast path for plain runs must agree with byte-by-byte feeding, and overflow is caught. */
static void test_runs_and_overflow(void)
{
	static char big[RSP_PKT_MAX + 64];
	char pk[80], whole[256], bytes[256], ev[16];
	struct rsp_dec d;
	/* an escape ("}]" is ']' ^ 0x20 = '}'), a run length ("b*\"" is b and 5 more) and plain runs */
	snprintf(pk, sizeof pk, "+$0123}]ab*\"cd#%02x$deadbeef#%02x", sum_of("0123}]ab*\"cd"), sum_of("deadbeef"));
	rsp_dec_init(&d);
	run(&d, pk, strlen(pk), whole, sizeof whole);
	CHECK_STR(whole, "+|0123}abbbbbbcd|deadbeef");
	rsp_dec_init(&d);
	bytes[0] = 0;
	for (size_t i = 0; i < strlen(pk); i++) {
		run(&d, pk + i, 1, ev, sizeof ev);
		if (!ev[0]) continue;
		if (bytes[0]) strcat(bytes, "|");
		strcat(bytes, i == 0 ? "+" : d.pkt); /* the ack is byte 0; packets end on their last */
	}
	CHECK_STR(bytes, whole);
	/* One byte more than fits: OVER, and the decoder is ready for the next packet. */
	size_t o = 0;
	big[o++] = '$';
	for (size_t i = 0; i < RSP_PKT_MAX + 1; i++) big[o++] = 'a';
	o += (size_t)snprintf(big + o, sizeof big - o, "#%02x$OK#9a", (uint8_t)('a' * (RSP_PKT_MAX + 1)));
	rsp_dec_init(&d);
	run(&d, big, o, whole, sizeof whole);
	CHECK_STR(whole, "OVER|OK");
}

void test_rsp(void)
{
	test_runs_and_overflow();
	test_encode();
	test_decode();
	test_classify();
	test_hex();
}
