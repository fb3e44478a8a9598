/* SPDX-License-Identifier: MIT */
/* test_vmlinuz.c: bzImage payload extraction: round trips per codec, bad images, a real image. */
#include "check.h"
#include "../../sampler/vmlinuz.h"
#include <elf.h>
#include <lz4.h>
#include <lzma.h>
#include <stdint.h>
#include <stdlib.h>
#include <zlib.h>
#include <zstd.h>

static const char *const supported[] = { "gzip", "xz", "zstd", "lz4" };

static void put32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++) p[i] = (uint8_t)(v >> 8 * i);
}

/* A small valid ELF64: header, textlen bytes of .text (compressible noise), .shstrtab, 3 section headers. */
static uint8_t *make_elf(size_t textlen, size_t *n)
{
	static const char names[] = "\0.text\0.shstrtab";
	size_t text = sizeof(Elf64_Ehdr), str = text + textlen, sh = (str + sizeof names + 7) & ~(size_t)7;
	*n = sh + 3 * sizeof(Elf64_Shdr);
	uint8_t *b = calloc(1, *n);
	Elf64_Ehdr eh = { .e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT,
		.e_entry = 0xffffffff81000000ull, .e_shoff = sh, .e_ehsize = sizeof eh,
		.e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 3, .e_shstrndx = 2 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(b, &eh, sizeof eh);
	uint32_t x = 12345;
	for (size_t i = 0; i < textlen; i++) { /* 16 distinct byte values: compresses, but not to nothing */
		x = x * 1103515245u + 12345u;
		b[text + i] = (uint8_t)(0x90 + (x >> 28));
	}
	memcpy(b + str, names, sizeof names);
	Elf64_Shdr s[3] = { { 0 },
		{ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
		  .sh_addr = 0xffffffff81000000ull, .sh_offset = text, .sh_size = textlen, .sh_addralign = 16 },
		{ .sh_name = 7, .sh_type = SHT_STRTAB, .sh_offset = str, .sh_size = sizeof names, .sh_addralign = 1 } };
	memcpy(b + sh, s, sizeof s);
	return b;
}

/* Compress with the libraries' encoders, as the kernel build's tools would; malloc'd stream. */
static uint8_t *pack(const char *codec, const uint8_t *in, size_t n, size_t *outn)
{
	size_t cap = n + n / 2 + 4096;
	uint8_t *out = malloc(cap);
	*outn = 0;
	if (!strcmp(codec, "gzip")) {
		z_stream s = { 0 };
		deflateInit2(&s, 9, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
		s.next_in = (Bytef *)in;
		s.avail_in = (uInt)n;
		s.next_out = out;
		s.avail_out = (uInt)cap;
		CHECK(deflate(&s, Z_FINISH) == Z_STREAM_END);
		*outn = s.total_out;
		deflateEnd(&s);
	} else if (!strcmp(codec, "xz")) {
		CHECK(lzma_easy_buffer_encode(1, LZMA_CHECK_CRC32, NULL, in, n, out, outn, cap) == LZMA_OK);
	} else if (!strcmp(codec, "zstd")) {
		ZSTD_CCtx *c = ZSTD_createCCtx();
		ZSTD_CCtx_setParameter(c, ZSTD_c_checksumFlag, 1); /* as the zstd tool writes it */
		*outn = ZSTD_compress2(c, out, cap, in, n);
		CHECK(!ZSTD_isError(*outn));
		ZSTD_freeCCtx(c);
	} else { /* lz4 legacy frame: magic, then [u32 size][block] per 8 MiB of input */
		put32(out, 0x184c2102);
		*outn = 4;
		for (size_t i = 0; i < n; i += 8 << 20) {
			size_t k = n - i < (8 << 20) ? n - i : 8 << 20;
			int c = LZ4_compress_default((const char *)in + i, (char *)out + *outn + 4, (int)k,
				(int)(cap - *outn - 4));
			CHECK(c > 0);
			put32(out + *outn, (uint32_t)c);
			*outn += 4 + (size_t)c;
		}
	}
	return out;
}

/* A synthetic bzImage: boot sector + setup sectors, 0x200 bytes of "decompressor", the payload
 * (stream + size_append trailer usize), then 0x300 bytes of trailing code. */
static uint8_t *make_image(const uint8_t *stream, size_t slen, uint32_t usize, uint8_t setup_sects, size_t *n)
{
	size_t pm = ((setup_sects ? setup_sects : 4) + 1) * 512, poff = 0x200;
	*n = pm + poff + slen + 4 + 0x300;
	uint8_t *b = malloc(*n);
	memset(b, 0, pm);
	memset(b + pm, 0xcc, *n - pm);
	b[0x1f1] = setup_sects;
	b[0x1fe] = 0x55;
	b[0x1ff] = 0xaa;
	memcpy(b + 0x202, "HdrS", 4);
	b[0x206] = 0x0f; /* protocol 2.15 */
	b[0x207] = 0x02;
	b[0x211] = 0x01; /* LOADED_HIGH */
	put32(b + 0x248, (uint32_t)poff);
	put32(b + 0x24c, (uint32_t)slen + 4);
	memcpy(b + pm + poff, stream, slen);
	put32(b + pm + poff + slen, usize);
	return b;
}

/* Compress data with codec and wrap it; the stream is cut to slen - cut bytes. */
static uint8_t *image_of(const char *codec, const uint8_t *data, size_t dn, size_t cut, size_t *n)
{
	size_t slen;
	uint8_t *s = pack(codec, data, dn, &slen);
	uint8_t *img = make_image(s, slen - (cut < slen ? cut : slen / 2), (uint32_t)dn, 1, n);
	free(s);
	return img;
}

/* Expect extraction to fail with an errstr containing words. */
static void expect_fail(const uint8_t *img, size_t n, size_t max_out, const char *words)
{
	struct vmlinuz z = { .max_out = max_out };
	uint8_t *elf = (uint8_t *)1;
	size_t len = 1;
	CHECK(vmlinuz_extract(&z, img, n, &elf, &len) == -1);
	CHECK(elf == NULL && len == 0 && z.err != 0);
	CHECK(strchr(z.errstr, '\n') == NULL);
	CHECK(strstr(z.errstr, words) != NULL);
	if (!strstr(z.errstr, words)) fprintf(stderr, "  want \"%s\" in \"%s\"\n", words, z.errstr);
}

static void roundtrip(const char *codec, const uint8_t *data, size_t dn, uint8_t setup_sects)
{
	size_t slen, n, len = 0;
	uint8_t *s = pack(codec, data, dn, &slen), *elf = NULL;
	uint8_t *img = make_image(s, slen, (uint32_t)dn, setup_sects, &n);
	struct vmlinuz z = { 0 };
	CHECK(vmlinuz_is_bzimage(img, n) == 1);
	CHECK(vmlinuz_extract(&z, img, n, &elf, &len) == 0);
	CHECK_STR(z.codec, codec);
	CHECK(len == dn && elf && !memcmp(elf, data, dn));
	if (z.err) fprintf(stderr, "  %s: %s\n", codec, z.errstr);
	free(elf);
	free(img);
	free(s);
}

static void test_roundtrips(void)
{
	size_t en, bn;
	uint8_t *elf = make_elf(400, &en), *big = make_elf(9 << 20, &bn);
	for (int i = 0; i < 4; i++) {
		roundtrip(supported[i], elf, en, 1);
		roundtrip(supported[i], elf, en, 0); /* setup_sects 0 means 4 */
	}
	roundtrip("lz4", big, bn, 27);  /* two 8 MiB-bounded chunks */
	roundtrip("zstd", big, bn, 27);

	/* Two lz4 legacy frames back to back (the magic reappears between chunks). */
	size_t h = en / 2, a, b, n, len;
	uint8_t *fa = pack("lz4", elf, h, &a), *fb = pack("lz4", elf + h, en - h, &b), *out;
	uint8_t *cat = malloc(a + b);
	memcpy(cat, fa, a);
	memcpy(cat + a, fb, b);
	uint8_t *img = make_image(cat, a + b, (uint32_t)en, 1, &n);
	struct vmlinuz z = { 0 };
	CHECK(vmlinuz_extract(&z, img, n, &out, &len) == 0 && len == en && !memcmp(out, elf, en));
	free(out);
	free(img);
	/* The second frame dropped: chunk boundaries line up, only the size trailer tells. */
	img = make_image(fa, a, (uint32_t)en, 1, &n);
	expect_fail(img, n, 0, "lz4 stream ends early");
	free(img);
	free(cat);
	free(fa);
	free(fb);

	/* A lying size trailer is only a hint: too small, and absurdly large. */
	for (int i = 0; i < 3; i++) {
		size_t slen;
		uint8_t *s = pack(supported[i], big, bn, &slen);
		for (int k = 0; k < 2; k++) {
			img = make_image(s, slen, k ? 0xffffffffu : 16, 1, &n);
			memset(&z, 0, sizeof z);
			CHECK(vmlinuz_extract(&z, img, n, &out, &len) == 0 && len == bn && !memcmp(out, big, bn));
			free(out);
			free(img);
		}
		free(s);
	}
	free(elf);
	free(big);
}

static void test_bad_headers(void)
{
	size_t en, n;
	uint8_t *elf = make_elf(400, &en), *img = image_of("gzip", elf, en, 0, &n);
	CHECK(vmlinuz_is_bzimage(elf, en) == 0);
	CHECK(vmlinuz_is_bzimage(img, 0x24f) == 0);
	expect_fail(elf, en, 0, "not a bzImage");
	expect_fail(img, 0x100, 0, "not a bzImage");
	expect_fail(img, n - 0x300 - 5, 0, "runs past the end"); /* file cut inside the payload */

	uint8_t *bad = malloc(n);
	memcpy(bad, img, n);
	bad[0x206] = 0x06; /* protocol 2.06 */
	expect_fail(bad, n, 0, "predates 2.08");
	memcpy(bad, img, n);
	put32(bad + 0x248, 0xffffffffu);
	expect_fail(bad, n, 0, "runs past the end");
	memcpy(bad, img, n);
	put32(bad + 0x24c, 0xffffffffu);
	expect_fail(bad, n, 0, "runs past the end");
	memcpy(bad, img, n);
	bad[0x1f1] = 0xff;
	expect_fail(bad, n, 0, "runs past the end");
	memcpy(bad, img, n);
	put32(bad + 0x24c, 6);
	expect_fail(bad, n, 0, "payload is only 6 bytes");

	/* Foreign and refused codecs. */
	static const struct { const char *magic; size_t len; const char *words; } foreign[] = {
		{ "BZh91AY&SY", 10, "compressed with bzip2" },
		{ "\x5d\x00\x00\x80\x00\xff\xff\xff", 8, "compressed with lzma" },
		{ "\x89LZO\x00\r\n\x1a", 8, "compressed with lzo" },
		{ "\x7f" "ELF\x02\x01\x01\x00", 8, "not gzip, xz, zstd or lz4 (it starts 7f 45 4c 46)" },
	};
	size_t pay = 2 * 512 + 0x200;
	for (size_t i = 0; i < sizeof foreign / sizeof foreign[0]; i++) {
		memcpy(bad, img, n);
		memcpy(bad + pay, foreign[i].magic, foreign[i].len);
		expect_fail(bad, n, 0, foreign[i].words);
	}
	struct vmlinuz z = { 0 };
	uint8_t *out;
	size_t len;
	memcpy(bad + pay, "BZh9", 4);
	CHECK(vmlinuz_extract(&z, bad, n, &out, &len) == -1);
	CHECK_STR(z.codec, "bzip2");
	free(bad);
	free(img);
	free(elf);
}

static void test_bad_streams(void)
{
	size_t en, n;
	uint8_t *elf = make_elf(400, &en);
	static const char text[] = "this is not an ELF file, just some text that compresses";
	for (int i = 0; i < 4; i++) {
		const char *c = supported[i];
		char words[64];
		snprintf(words, sizeof words, "truncated vmlinuz: the %s stream ends early", c);
		uint8_t *img = image_of(c, elf, en, (size_t)-1, &n); /* half the stream */
		expect_fail(img, n, 0, words);
		free(img);
		img = image_of(c, elf, en, 1, &n); /* one byte short */
		expect_fail(img, n, 0, words);
		free(img);

		img = image_of(c, (const uint8_t *)text, sizeof text, 0, &n);
		expect_fail(img, n, 0, "the payload is not an ELF");
		free(img);

		img = image_of(c, elf, en, 0, &n); /* output bomb, scaled down: a 100-byte cap */
		expect_fail(img, n, 100, "decompresses to more than 100 bytes");
		free(img);

		img = image_of(c, elf, en, 0, &n); /* corrupt in the middle: checksums catch it */
		size_t pay = 2 * 512 + 0x200, slen = n - pay - 4 - 0x300;
		for (size_t k = slen / 3; k < slen / 3 + 8; k++) img[pay + k] ^= 0x55;
		if (strcmp(c, "lz4")) expect_fail(img, n, 0, "vmlinuz");
		free(img);
	}
	/* A real bomb: 64 MiB of zeros in a small zstd stream, capped at 16 MiB. */
	size_t zn = 64 << 20, n2;
	uint8_t *zeros = calloc(1, zn);
	memcpy(zeros, elf, 64);
	uint8_t *img = image_of("zstd", zeros, zn, 0, &n2);
	CHECK(n2 < 64 << 10);
	expect_fail(img, n2, 16 << 20, "more than 16777216 bytes");
	free(img);
	free(zeros);
	free(elf);
}

/* Mutated images: every outcome is 0 with an ELF, or -1 with one line; ASan/UBSan watch the rest. */
static void test_mutations(void)
{
	size_t en;
	uint8_t *elf = make_elf(3000, &en);
	uint32_t x = 2463534242u;
	int bad = 0, ok = 0;
	for (int i = 0; i < 4; i++) {
		size_t n;
		uint8_t *img = image_of(supported[i], elf, en, 0, &n), *m = malloc(n);
		for (int round = 0; round < 300; round++) {
			memcpy(m, img, n);
			size_t mn = n;
			for (int k = 0; k < 1 + round % 4; k++) {
				x ^= x << 13, x ^= x >> 17, x ^= x << 5;
				size_t at = round % 5 == 0 ? 0x1f0 + x % 0x60 : 0x400 + x % (n - 0x400);
				m[at] ^= (uint8_t)(1 + (x >> 24) % 255);
			}
			if (round % 7 == 0) mn = 0x250 + x % (n - 0x250);
			struct vmlinuz z = { .max_out = 1 << 20 };
			uint8_t *out = NULL;
			size_t len = 0;
			int r = vmlinuz_extract(&z, m, mn, &out, &len);
			if (r == 0) ok++;
			if (r == 0 ? !(out && len >= 52 && !memcmp(out, ELFMAG, 4)) :
			    !(r == -1 && !out && z.errstr[0] && !strchr(z.errstr, '\n'))) bad++;
			free(out);
		}
		free(m);
		free(img);
	}
	CHECK(bad == 0);
	CHECK(ok > 0); /* some flips land in filler bytes */
	free(elf);
}

/* A real distro image, when GDBSAMPLE_TEST_VMLINUZ names one. */
static void test_real(void)
{
	const char *path = getenv("GDBSAMPLE_TEST_VMLINUZ");
	FILE *f = path && *path ? fopen(path, "rb") : NULL;
	if (!f) return;
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	rewind(f);
	uint8_t *img = malloc(n > 0 ? (size_t)n : 1);
	CHECK(n > 0 && fread(img, 1, (size_t)n, f) == (size_t)n);
	fclose(f);
	struct vmlinuz z = { 0 };
	uint8_t *elf = NULL;
	size_t len = 0;
	CHECK(vmlinuz_is_bzimage(img, (size_t)n) == 1);
	CHECK(vmlinuz_extract(&z, img, (size_t)n, &elf, &len) == 0);
	if (z.err) fprintf(stderr, "  %s: %s\n", path, z.errstr);
	CHECK(len > 10u << 20 && !memcmp(elf, ELFMAG, SELFMAG));
	free(elf);
	free(img);
}

void test_vmlinuz(void)
{
	test_roundtrips();
	test_bad_headers();
	test_bad_streams();
	test_mutations();
	test_real();
}
