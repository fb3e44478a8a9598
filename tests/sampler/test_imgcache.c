/* SPDX-License-Identifier: MIT */
/* test_imgcache.c: the image cache's header on literal bytes -- a round trip, SHA-256 against the
 * FIPS 180-2 vector, and every refusal: magic, version, another image's key, a length the file
 * does not have, an unknown codec, a damaged payload, a payload that is no ELF. */
#include "check.h"
#include "../../sampler/imgcache.h"
#include <stdint.h>

void test_imgcache(void)
{
	uint8_t sum[IMGCACHE_SHA], key[IMGCACHE_SHA], other[IMGCACHE_SHA], hdr[IMGCACHE_HDR], b[IMGCACHE_HDR];
	static const uint8_t abc_sha[8] = { 0xba, 0x78, 0x16, 0xbf, 0x8f, 0x01, 0xcf, 0xea }; /* SHA-256("abc") */
	imgcache_sha256((const uint8_t *)"abc", 3, sum);
	CHECK(!memcmp(sum, abc_sha, sizeof abc_sha));

	uint8_t payload[256];
	memset(payload, 0x5a, sizeof payload);
	memcpy(payload, "\177ELF", 4);
	imgcache_sha256((const uint8_t *)"vmlinuz", 7, key);
	imgcache_sha256((const uint8_t *)"vmlinuz2", 8, other);
	imgcache_encode(hdr, key, "xz", payload, sizeof payload);
	CHECK(!memcmp(hdr, "gdbsimg\0", 8) && hdr[8] == 1 && hdr[12] == IMGCACHE_HDR && !memcmp(hdr + 16, key, 32));

	struct imgcache_hdr h;
	char why[200];
	uint64_t size = IMGCACHE_HDR + sizeof payload;
	CHECK(imgcache_parse(hdr, sizeof hdr, key, size, &h, why, sizeof why) == 0);
	CHECK(h.len == sizeof payload);
	CHECK_STR(h.codec, "xz");
	CHECK(imgcache_verify(&h, payload, sizeof payload, why, sizeof why) == 0);

	CHECK(imgcache_parse(hdr, sizeof hdr, other, size, &h, why, sizeof why) < 0 && strstr(why, "another image"));
	CHECK(imgcache_parse(hdr, sizeof hdr, key, size - 1, &h, why, sizeof why) < 0 && strstr(why, "truncated"));
	CHECK(imgcache_parse(hdr, sizeof hdr, key, 10, &h, why, sizeof why) < 0);       /* shorter than a header */
	CHECK(imgcache_parse(hdr, 100, key, size, &h, why, sizeof why) < 0);              /* header cut */
	memcpy(b, hdr, sizeof b);
	b[0] = 'G';
	CHECK(imgcache_parse(b, sizeof b, key, size, &h, why, sizeof why) < 0 && strstr(why, "not a gdbsample"));
	memcpy(b, hdr, sizeof b);
	b[8] = 2;
	CHECK(imgcache_parse(b, sizeof b, key, size, &h, why, sizeof why) < 0 && strstr(why, "version"));
	memcpy(b, hdr, sizeof b);
	memcpy(b + 88, "bzip2\0\0\0", 8);
	CHECK(imgcache_parse(b, sizeof b, key, size, &h, why, sizeof why) < 0 && strstr(why, "codec"));
	memcpy(b + 88, "xzxzxzxz", 8); /* no NUL within its 8 bytes: no codec, not read past them */
	CHECK(imgcache_parse(b, sizeof b, key, size, &h, why, sizeof why) < 0);

	CHECK(imgcache_parse(hdr, sizeof hdr, key, size, &h, why, sizeof why) == 0);
	payload[100] ^= 1;
	CHECK(imgcache_verify(&h, payload, sizeof payload, why, sizeof why) < 0 && strstr(why, "damaged"));
	payload[100] ^= 1;
	CHECK(imgcache_verify(&h, payload, sizeof payload - 1, why, sizeof why) < 0);
	payload[0] = 0; /* a matching sum over bytes that are no ELF */
	imgcache_encode(hdr, key, "gzip", payload, sizeof payload);
	CHECK(imgcache_parse(hdr, sizeof hdr, key, size, &h, why, sizeof why) == 0);
	CHECK(imgcache_verify(&h, payload, sizeof payload, why, sizeof why) < 0 && strstr(why, "not an ELF"));
}
