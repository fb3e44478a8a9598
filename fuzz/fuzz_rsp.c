/* SPDX-License-Identifier: MIT */
/* fuzz_rsp.c: libFuzzer harness -- the RSP decoder over arbitrary byte splits, checked against
 * byte-at-a-time decoding, plus the reply classifiers and hex helpers on what it decodes. */
#include "../sampler/rsp.h"
#include <stdlib.h>
#include <string.h>

/* Decode data in slices whose sizes come from the input itself; write a digest of the events
 * (type, and for packets the payload) into out. */
static size_t decode(const uint8_t *data, size_t n, const uint8_t *sizes, size_t nsizes, uint8_t *out, size_t cap)
{
	static struct rsp_dec d;
	size_t off = 0, o = 0, k = 0;
	rsp_dec_init(&d);
	while (off < n) {
		size_t slice = nsizes ? (size_t)sizes[k++ % nsizes] + 1 : n - off, used = 0;
		if (slice > n - off) slice = n - off;
		size_t end = off + slice;
		while (off < end) {
			enum rsp_event ev = rsp_feed(&d, data + off, end - off, &used);
			if (used == 0 || used > end - off) abort(); /* must always make progress */
			off += used;
			if (ev == RSP_NONE) continue;
			if (o < cap) out[o++] = (uint8_t)ev;
			if (ev == RSP_PACKET) {
				if (d.len > RSP_PKT_MAX || d.pkt[d.len] != 0) abort();
				for (size_t i = 0; i < d.len && o < cap; i++) out[o++] = (uint8_t)d.pkt[i];
				rsp_is_error(d.pkt, d.len);
				rsp_is_console(d.pkt, d.len);
				rsp_is_stop(d.pkt, d.len);
				static uint8_t bin[RSP_PKT_MAX / 2 + 1];
				rsp_unhex(bin, d.pkt, d.len / 2);
				if (d.len >= 8) rsp_le(bin, 8);
			}
		}
	}
	return o;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static uint8_t a[1 << 20], b[1 << 20];
	if (size < 1) return 0;
	size_t nsizes = data[0] & 15; /* the first byte: how many split sizes follow */
	if (size < 1 + nsizes) return 0;
	const uint8_t *sizes = data + 1, *p = data + 1 + nsizes;
	size_t n = size - 1 - nsizes;
	size_t la = decode(p, n, sizes, nsizes, a, sizeof a);
	size_t lb = decode(p, n, NULL, 0, b, sizeof b); /* all at once */
	if (la != lb || memcmp(a, b, la)) abort(); /* how bytes are split must not change the result */
	/* Round trip: whatever is encoded decodes to itself. */
	static char enc[2 * 4096 + 8];
	size_t m = n < 4096 ? n : 4096;
	int k = rsp_encode(enc, sizeof enc, (const char *)p, m);
	if (k < 0) abort();
	static struct rsp_dec d;
	size_t used;
	rsp_dec_init(&d);
	if (rsp_feed(&d, (const uint8_t *)enc, (size_t)k, &used) != RSP_PACKET || used != (size_t)k || d.len != m ||
	    memcmp(d.pkt, p, m))
		abort();
	return 0;
}
