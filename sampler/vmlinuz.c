/* SPDX-License-Identifier: MIT */
/* vmlinuz.c: extract the kernel ELF from a compressed x86 bzImage (zlib, liblzma, libzstd, liblz4). */
#define ZLIB_CONST
#include "vmlinuz.h"
#include "bytes.h"
#include "err.h"
#include <elf.h>
#include <limits.h>
#include <lz4.h>
#include <lzma.h>
#include <stdlib.h>
#include <zlib.h>
#include <zstd.h>

/*
 * bzImage layout (Linux Documentation/arch/x86/boot.rst, "The Real-Mode Kernel Header"):
 *
 *   offset  type  field            meaning
 *   0x1f1   u8    setup_sects      real-mode setup sectors after the boot sector (0 means 4)
 *   0x202   u32   header           "HdrS"
 *   0x206   u16   version          boot protocol, major << 8 | minor
 *   0x211   u8    loadflags        bit 0 LOADED_HIGH: protected-mode code loads at 1 MiB (bzImage)
 *   0x248   u32   payload_offset   (protocol >= 2.08) payload start, relative to the PM code
 *   0x24c   u32   payload_length   (protocol >= 2.08) payload bytes
 *
 * The protected-mode code starts at file offset (setup_sects + 1) * 512: after the boot sector
 * and the setup sectors.  The payload is vmlinux (the kernel ELF) compressed by the kernel build,
 * which then appends its "size_append" trailer: the uncompressed size as a little-endian u32,
 * counted in payload_length.  So the compressed stream is the payload minus its last 4 bytes.
 * Decoders stop at their stream's own end; the trailer is a size hint, and for lz4, whose legacy
 * frame has no end mark, the check that no chunk is missing.
 */
#define HDR_SETUP_SECTS 0x1f1
#define HDR_MAGIC 0x202
#define HDR_VERSION 0x206
#define HDR_LOADFLAGS 0x211
#define HDR_PAYLOAD_OFF 0x248
#define HDR_PAYLOAD_LEN 0x24c
#define HDR_END 0x250            /* the header through payload_length */
#define LOADED_HIGH 0x01         /* loadflags bit 0 */
#define PROTO_PAYLOAD 0x0208     /* first protocol with payload_offset/payload_length */
#define SECTOR 512
#define SIZE_APPEND 4            /* the trailer's bytes */

#define OUT_STEP ((size_t)1 << 20)          /* least free room offered to a stream decoder */
#define XZ_MEMLIMIT ((uint64_t)256 << 20)   /* kernels use a 32 MiB dictionary */

int vmlinuz_is_bzimage(const uint8_t *img, size_t n)
{
	return n >= HDR_END && !memcmp(img + HDR_MAGIC, "HdrS", 4) && (img[HDR_LOADFLAGS] & LOADED_HIGH);
}

/* The decompressed kernel, growing; it may run up to max + one step past max, to see a bomb. */
struct out {
	uint8_t *p;   /* malloc'd */
	size_t n;     /* bytes written */
	size_t cap;   /* bytes allocated */
	size_t max;   /* most bytes accepted */
};

/* -1 (with the error set) once the output has passed its cap. */
static int out_over(struct vmlinuz *z, const struct out *o)
{
	if (o->n <= o->max) return 0;
	ERR_SET(z, ERR_FORMAT, "vmlinuz: the %s payload decompresses to more than %zu bytes; refusing",
		z->codec, o->max);
	return -1;
}

/* Make room for at least want more bytes (doubling); 0 or -1. */
static int out_room(struct vmlinuz *z, struct out *o, size_t want)
{
	if (out_over(z, o) < 0) return -1;
	if (o->cap - o->n >= want) return 0;
	size_t cap = o->cap > want ? o->cap : want;
	while (cap - o->n < want) cap *= 2;
	if (cap > o->max + want) cap = o->max + want;
	uint8_t *p = realloc(o->p, cap);
	if (!p) {
		ERR_SET(z, ERR_SYS, "vmlinuz: out of memory for %zu bytes of kernel", cap);
		return -1;
	}
	o->p = p;
	o->cap = cap;
	return 0;
}

/* One call of a streaming decoder on in[*ipos..len) into out[*opos..cap), advancing both:
 * 1 at the end of the stream, 0 to go on, -1 on a decoding error. */
typedef int step_fn(struct vmlinuz *z, void *st, const uint8_t *in, size_t len, size_t *ipos,
	uint8_t *out, size_t cap, size_t *opos);

/* Run a streaming decoder to the end of its stream: room before each call, and a call that
 * makes no progress means the input ran out (or the decoder is stuck on corrupt data). */
static int drive(struct vmlinuz *z, step_fn *step, void *st, const uint8_t *in, size_t len, struct out *o)
{
	size_t ipos = 0;
	for (;;) {
		if (out_room(z, o, OUT_STEP) < 0) return -1;
		size_t i0 = ipos, n0 = o->n;
		int r = step(z, st, in, len, &ipos, o->p, o->cap, &o->n);
		if (r < 0) return -1;
		if (r > 0) return 0;
		if (ipos == i0 && o->n == n0) {
			if (ipos == len) ERR_SET(z, ERR_FORMAT, "truncated vmlinuz: the %s stream ends early", z->codec);
			else ERR_SET(z, ERR_FORMAT, "vmlinuz: the %s stream is corrupt (no progress)", z->codec);
			return -1;
		}
	}
}

static unsigned clamp_uint(size_t v) { return v > UINT_MAX ? UINT_MAX : (unsigned)v; }

static int step_gzip(struct vmlinuz *z, void *st, const uint8_t *in, size_t len, size_t *ipos,
	uint8_t *out, size_t cap, size_t *opos)
{
	z_stream *s = st;
	s->next_in = in + *ipos;
	s->avail_in = clamp_uint(len - *ipos);
	s->next_out = out + *opos;
	s->avail_out = clamp_uint(cap - *opos);
	int r = inflate(s, Z_NO_FLUSH);
	*ipos = (size_t)(s->next_in - in);
	*opos = (size_t)(s->next_out - out);
	if (r == Z_STREAM_END) return 1;
	if (r == Z_OK || r == Z_BUF_ERROR) return 0;
	ERR_SET(z, ERR_FORMAT, "vmlinuz: the gzip stream is corrupt (%s)", s->msg ? s->msg : zError(r));
	return -1;
}

static int dec_gzip(struct vmlinuz *z, const uint8_t *in, size_t len, struct out *o)
{
	z_stream s = { 0 };
	if (inflateInit2(&s, 16 + MAX_WBITS) != Z_OK) { /* 16+: a gzip wrapper, not zlib's */
		ERR_SET(z, ERR_SYS, "vmlinuz: cannot start zlib");
		return -1;
	}
	int r = drive(z, step_gzip, &s, in, len, o);
	inflateEnd(&s);
	return r;
}

static int step_xz(struct vmlinuz *z, void *st, const uint8_t *in, size_t len, size_t *ipos,
	uint8_t *out, size_t cap, size_t *opos)
{
	lzma_stream *s = st;
	s->next_in = in + *ipos;
	s->avail_in = len - *ipos;
	s->next_out = out + *opos;
	s->avail_out = cap - *opos;
	lzma_ret r = lzma_code(s, LZMA_RUN);
	*ipos = (size_t)(s->next_in - in);
	*opos = (size_t)(s->next_out - out);
	if (r == LZMA_STREAM_END) return 1; /* without LZMA_CONCATENATED: after the first stream */
	if (r == LZMA_OK || r == LZMA_BUF_ERROR) return 0;
	ERR_SET(z, ERR_FORMAT, "vmlinuz: the xz stream is corrupt (%s)",
		r == LZMA_MEMLIMIT_ERROR ? "needs more than 256 MiB to decode" :
		r == LZMA_OPTIONS_ERROR ? "unsupported options" :
		r == LZMA_MEM_ERROR ? "out of memory" : "bad data or checksum");
	return -1;
}

static int dec_xz(struct vmlinuz *z, const uint8_t *in, size_t len, struct out *o)
{
	lzma_stream s = LZMA_STREAM_INIT;
	if (lzma_stream_decoder(&s, XZ_MEMLIMIT, 0) != LZMA_OK) {
		ERR_SET(z, ERR_SYS, "vmlinuz: cannot start liblzma");
		return -1;
	}
	int r = drive(z, step_xz, &s, in, len, o);
	lzma_end(&s);
	return r;
}

static int step_zstd(struct vmlinuz *z, void *st, const uint8_t *in, size_t len, size_t *ipos,
	uint8_t *out, size_t cap, size_t *opos)
{
	ZSTD_inBuffer ib = { in, len, *ipos };
	ZSTD_outBuffer ob = { out, cap, *opos };
	size_t r = ZSTD_decompressStream(st, &ob, &ib);
	*ipos = ib.pos;
	*opos = ob.pos;
	if (!ZSTD_isError(r)) return r == 0; /* 0: the frame is decoded and flushed */
	ERR_SET(z, ERR_FORMAT, "vmlinuz: the zstd stream is corrupt (%s)", ZSTD_getErrorName(r));
	return -1;
}

static int dec_zstd(struct vmlinuz *z, const uint8_t *in, size_t len, struct out *o)
{
	ZSTD_DCtx *d = ZSTD_createDCtx();
	if (!d) {
		ERR_SET(z, ERR_SYS, "vmlinuz: cannot start libzstd");
		return -1;
	}
	int r = drive(z, step_zstd, d, in, len, o);
	ZSTD_freeDCtx(d);
	return r;
}

/*
 * lz4 legacy frame (what "lz4 -l" writes; lz4's doc/lz4_Frame_format.md, "Legacy frame"):
 * the magic 02 21 4c 18, then chunks [u32 LE compressed size][LZ4 block], each block
 * decompressing to at most 8 MiB.  There is no end mark: the chunks run to the end of the
 * stream.  The magic may reappear where frames were concatenated; it is skipped.
 */
#define LZ4_LEGACY_MAGIC 0x184c2102u
#define LZ4_LEGACY_BLOCK ((size_t)8 << 20)

static int dec_lz4(struct vmlinuz *z, const uint8_t *in, size_t len, struct out *o)
{
	size_t pos = 4;
	while (pos < len) {
		uint32_t c = len - pos >= 4 ? le32(in + pos) : 0;
		if (c == LZ4_LEGACY_MAGIC) {
			pos += 4;
			continue;
		}
		if (len - pos < 4 || c > len - pos - 4) {
			ERR_SET(z, ERR_FORMAT, "truncated vmlinuz: the lz4 stream ends early");
			return -1;
		}
		pos += 4;
		if (c == 0 || c > (uint32_t)LZ4_compressBound((int)LZ4_LEGACY_BLOCK)) {
			ERR_SET(z, ERR_FORMAT, "vmlinuz: the lz4 stream is corrupt (chunk of %u bytes)", c);
			return -1;
		}
		if (out_room(z, o, LZ4_LEGACY_BLOCK) < 0) return -1;
		int r = LZ4_decompress_safe((const char *)in + pos, (char *)o->p + o->n, (int)c, (int)LZ4_LEGACY_BLOCK);
		if (r < 0) {
			ERR_SET(z, ERR_FORMAT, "vmlinuz: the lz4 stream is corrupt (bad block at byte %zu)", pos);
			return -1;
		}
		o->n += (size_t)r;
		pos += c;
	}
	return 0;
}

/* The formats a kernel build may compress with (magic numbers from each format's spec). */
static const struct codec {
	const char *name;
	uint8_t magic[6];
	size_t mlen;
	int (*decode)(struct vmlinuz *z, const uint8_t *in, size_t len, struct out *o); /* NULL: refused */
} codecs[] = {
	{ "gzip", { 0x1f, 0x8b }, 2, dec_gzip },
	{ "xz", { 0xfd, '7', 'z', 'X', 'Z', 0x00 }, 6, dec_xz },
	{ "zstd", { 0x28, 0xb5, 0x2f, 0xfd }, 4, dec_zstd },
	{ "lz4", { 0x02, 0x21, 0x4c, 0x18 }, 4, dec_lz4 },
	{ "bzip2", { 'B', 'Z', 'h' }, 3, NULL },
	{ "lzma", { 0x5d, 0x00, 0x00 }, 3, NULL },
	{ "lzo", { 0x89, 'L', 'Z', 'O' }, 4, NULL },
};

int vmlinuz_extract(struct vmlinuz *z, const uint8_t *img, size_t n, uint8_t **elf, size_t *elflen)
{
	*elf = NULL;
	*elflen = 0;
	if (!vmlinuz_is_bzimage(img, n)) {
		ERR_SET(z, ERR_FORMAT, "vmlinuz: not a bzImage (no x86 \"HdrS\" boot header with LOADED_HIGH)");
		return -1;
	}
	unsigned ver = le16(img + HDR_VERSION);
	if (ver < PROTO_PAYLOAD) {
		ERR_SET(z, ERR_FORMAT, "vmlinuz: boot protocol %u.%02u predates 2.08 (no payload fields); "
			"give the vmlinux ELF instead", ver >> 8, ver & 0xff);
		return -1;
	}
	uint64_t sects = img[HDR_SETUP_SECTS] ? img[HDR_SETUP_SECTS] : 4;
	uint64_t off = (sects + 1) * SECTOR + le32(img + HDR_PAYLOAD_OFF), len = le32(img + HDR_PAYLOAD_LEN);
	if (off > n || len > n - off) {
		ERR_SET(z, ERR_FORMAT, "truncated vmlinuz: the payload (%llu bytes at offset %llu) runs past "
			"the end of the file (%zu bytes)", (unsigned long long)len, (unsigned long long)off, n);
		return -1;
	}
	const uint8_t *p = img + off;
	if (len < 8 + SIZE_APPEND) { /* room for the longest magic and the trailer */
		ERR_SET(z, ERR_FORMAT, "truncated vmlinuz: the payload is only %llu bytes", (unsigned long long)len);
		return -1;
	}
	const struct codec *c = NULL;
	for (size_t i = 0; i < sizeof codecs / sizeof codecs[0] && !c; i++)
		if (!memcmp(p, codecs[i].magic, codecs[i].mlen)) c = &codecs[i];
	if (!c) {
		ERR_SET(z, ERR_FORMAT, "vmlinuz: the payload is not gzip, xz, zstd or lz4 "
			"(it starts %02x %02x %02x %02x)", p[0], p[1], p[2], p[3]);
		return -1;
	}
	z->codec = c->name;
	if (!c->decode) {
		ERR_SET(z, ERR_FORMAT, "vmlinuz: payload compressed with %s, which gdbsample does not read; "
			"give the vmlinux ELF instead", c->name);
		return -1;
	}

	uint32_t hint = le32(p + len - SIZE_APPEND); /* the size_append trailer */
	struct out o = { .max = z->max_out ? z->max_out : VMLINUZ_MAX_OUT };
	if (o.max > SIZE_MAX / 4) o.max = SIZE_MAX / 4; /* so that cap arithmetic cannot wrap */
	size_t first = hint;                         /* trust the hint only as far as is plausible */
	if (first > o.max) first = o.max;
	if (first > len * 16) first = (size_t)len * 16;
	if (out_room(z, &o, first + OUT_STEP) < 0 || c->decode(z, p, len - SIZE_APPEND, &o) < 0 ||
	    out_over(z, &o) < 0)
		goto fail;
	if (c->decode == dec_lz4 && o.n != hint) {
		ERR_SET(z, ERR_FORMAT, "truncated vmlinuz: the lz4 stream ends early (%zu of %u bytes)", o.n, hint);
		goto fail;
	}
	if (o.n < sizeof(Elf32_Ehdr) || memcmp(o.p, ELFMAG, SELFMAG)) {
		ERR_SET(z, ERR_FORMAT, "vmlinuz: the payload is not an ELF (%zu bytes of %s output)", o.n, c->name);
		goto fail;
	}
	*elf = o.p;
	*elflen = o.n;
	return 0;
fail:
	free(o.p);
	return -1;
}

int vmlinuz_decompress(struct vmlinuz *z, const uint8_t *p, size_t len, uint8_t **out, size_t *outlen)
{
	*out = NULL;
	*outlen = 0;
	const struct codec *c = NULL;
	for (size_t i = 0; len >= 8 && i < sizeof codecs / sizeof codecs[0] && !c; i++)
		if (!memcmp(p, codecs[i].magic, codecs[i].mlen)) c = &codecs[i];
	if (!c) {
		ERR_SET(z, ERR_FORMAT, "the payload is not gzip, xz or zstd%s", len < 8 ? " (too short)" : "");
		return -1;
	}
	z->codec = c->name;
	if (!c->decode || c->decode == dec_lz4) { /* lz4's legacy frame has no end mark to check */
		ERR_SET(z, ERR_FORMAT, "payload compressed with %s, which gdbsample does not read here", c->name);
		return -1;
	}
	struct out o = { .max = z->max_out ? z->max_out : VMLINUZ_MAX_OUT };
	if (o.max > SIZE_MAX / 4) o.max = SIZE_MAX / 4;
	size_t first = len * 4 < o.max ? len * 4 : o.max;
	if (out_room(z, &o, first + OUT_STEP) < 0 || c->decode(z, p, len, &o) < 0 || out_over(z, &o) < 0) {
		free(o.p);
		return -1;
	}
	*out = o.p;
	*outlen = o.n;
	return 0;
}
