/* SPDX-License-Identifier: MIT */
/* fuzz_capture.c: libFuzzer harness -- the capture reader (header, CRC-checked chunks, sample
 * records and their extensions) on a file in memory (fmemopen). The first input byte picks
 * whether the CRCs are first made right, so the fuzzer also explores what lies behind them. */
#include "../sampler/capture.h"
#include <stdlib.h>
#include <string.h>

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> (8 * i));
}

static uint32_t get32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Make the header's and each chunk's CRC match their bytes (docs/capture-format.md). */
static void fix_crcs(uint8_t *b, size_t n)
{
	if (n < CAPTURE_HEADER_SIZE) return;
	put32(b + 124, capture_crc32(b, 124));
	int v2 = (b[8] | b[9] << 8) >= 2;
	for (size_t off = CAPTURE_HEADER_SIZE; n - off >= CAPTURE_CHUNK_HEADER;) {
		uint32_t len = get32(b + off + 8);
		if (get32(b + off) != CAPTURE_CHUNK_MAGIC || len > n - off - CAPTURE_CHUNK_HEADER) break;
		uint8_t *tmp = malloc(12 + (size_t)len);
		if (!tmp) return;
		memcpy(tmp, b + off + 4, 12);
		memcpy(tmp + 12, b + off + CAPTURE_CHUNK_HEADER, len);
		put32(b + off + 16, v2 ? capture_crc32(tmp, 12 + (size_t)len) : capture_crc32(tmp + 12, len));
		free(tmp);
		off += CAPTURE_CHUNK_HEADER + len;
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct capture_reader r;
	static struct sample s;
	uint8_t hdr[CAPTURE_HEADER_SIZE];
	if (size < 2) return 0;
	size_t n = size - 1;
	uint8_t *b = malloc(n);
	if (!b) return 0;
	memcpy(b, data + 1, n);
	if (data[0] & 1) fix_crcs(b, n);
	memset(&r, 0, sizeof r);
	r.f = fmemopen(b, n, "rb"); /* what capture_open does with a path */
	if (r.f && fread(hdr, 1, sizeof hdr, r.f) == sizeof hdr && capture_header_decode(&r.h, hdr) == 0) {
		r.offset = CAPTURE_HEADER_SIZE;
		for (int k = 0; k < 100000; k++) {
			int rc = capture_next(&r, &s);
			if (rc <= 0) break;
			for (int i = 1; i < s.n; i++) unwind_is_exact(s.exact, i);
		}
		if (r.summary[sizeof r.summary - 1]) abort();
	}
	capture_close(&r);
	free(b);
	return 0;
}
