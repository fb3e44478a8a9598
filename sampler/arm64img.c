/* SPDX-License-Identifier: MIT */
/* arm64img.c: the arm64 kernel Image (raw, PE/"MZ"-headed) and EFI zboot images: header checks, text, BTF. */
#include "arm64img.h"
#include "bytes.h"
#include "err.h"
#include "vmlinuz.h"
#include <stdlib.h>

/*
 * The arm64 Image header (Linux Documentation/arch/arm64/booting.rst), 64 bytes, little-endian:
 *
 *   offset  type  field
 *   0x00    u32   code0         executable code (with the EFI stub: "MZ" and a branch)
 *   0x04    u32   code1
 *   0x08    u64   text_offset   image load offset (0 since 3.17 with KASLR-capable kernels)
 *   0x10    u64   image_size    effective image size in memory
 *   0x18    u64   flags         bit 0 endianness (1 = big), bits 1-2 page size, bit 3 placement
 *   0x20    u64   res2, res3, res4
 *   0x38    u32   magic         "ARM\x64"
 *   0x3c    u32   res5          with the EFI stub: offset of the PE header ("PE\0\0")
 *
 * With the EFI stub the PE/COFF section table says where the kernel's text is in the file:
 * section ".text" starts at _stext (file offset == virtual address, 64 KiB into the image on
 * 6.1) and runs to __initdata_begin. Each section's raw data must be in the file: a shorter file
 * is a truncated Image.
 *
 * An EFI zboot image (CONFIG_EFI_ZBOOT, drivers/firmware/efi/libstub/zboot-header.S) is a small
 * EFI application carrying the compressed Image:
 *
 *   0x00 "MZ"   0x04 "zimg"   0x08 u32 payload offset   0x0c u32 payload size
 *   0x18 char[32] compression type ("gzip", "zstd", ...)
 */
#define HDR_LEN 0x40
#define HDR_MAGIC 0x38
#define HDR_PE 0x3c
#define FLAG_BE 1ull
#define PE_SIG_LEN 4
#define COFF_LEN 20              /* the COFF file header after "PE\0\0" */
#define SECT_LEN 40              /* one section table entry */
#define BTF_MAGIC 0xeb9f         /* struct btf_header.magic (include/uapi/linux/btf.h) */
#define BTF_HDR_LEN 24           /* magic, version, flags, hdr_len, type_off/len, str_off/len */
#define RELA_LEN 24              /* Elf64_Rela: r_offset, r_info, r_addend */
#define R_AARCH64_RELATIVE 1027  /* r_info of a relative relocation (symbol 0) */
#define KIMG_ALIGN 0x200000ull   /* MIN_KIMG_ALIGN: the kernel's link address is 2 MiB aligned */
#define ZB_TYPE 4
#define ZB_OFF 8
#define ZB_SIZE 12
#define ZB_COMP 24

int a64img_kind(const uint8_t *b, size_t n)
{
	if (n >= HDR_LEN && !memcmp(b + HDR_MAGIC, "ARM\x64", 4)) return A64IMG_IMAGE;
	if (n >= ZB_COMP + 8 && !memcmp(b, "MZ", 2) && !memcmp(b + ZB_TYPE, "zimg", 4)) return A64IMG_ZBOOT;
	return A64IMG_NONE;
}

int a64img_unzboot(struct a64img *x, const uint8_t *b, size_t n, uint8_t **img, size_t *imglen)
{
	uint64_t off = le32(b + ZB_OFF), len = le32(b + ZB_SIZE);
	char comp[33];
	memcpy(comp, b + ZB_COMP, 32);
	comp[32] = 0;
	for (char *c = comp; *c; c++)
		if (*c < 0x20 || *c > 0x7e) *c = '?';
	if (off > n || len > n - off) {
		ERR_SET(x, ERR_FORMAT, "truncated zboot image: the %s payload (%llu bytes at offset %llu) runs past "
			"the end of the file (%zu bytes)", comp, (unsigned long long)len, (unsigned long long)off, n);
		return -1;
	}
	struct vmlinuz z = { 0 };
	if (vmlinuz_decompress(&z, b + off, len, img, imglen) < 0) {
		ERR_SET(x, ERR_FORMAT, "zboot image (%s payload): %s", comp, z.errstr);
		return -1;
	}
	x->codec = z.codec;
	if (a64img_kind(*img, *imglen) != A64IMG_IMAGE) {
		free(*img);
		*img = NULL;
		ERR_SET(x, ERR_FORMAT, "zboot image: its %s payload is not an arm64 Image (no \"ARM\\x64\" magic)", z.codec);
		return -1;
	}
	return 0;
}

/* The PE section table: the ".text" section and the end of the last section's raw data. */
static int pe_sections(struct a64img *x, const uint8_t *b, size_t n)
{
	uint64_t pe = le32(b + HDR_PE);
	if (pe + PE_SIG_LEN + COFF_LEN > n || memcmp(b + pe, "PE\0\0", 4)) {
		ERR_SET(x, ERR_FORMAT, "arm64 Image: the \"MZ\" header points at no PE header (offset %llu of %zu bytes)",
			(unsigned long long)pe, n);
		return -1;
	}
	const uint8_t *coff = b + pe + PE_SIG_LEN;
	unsigned nsec = le16(coff + 2), optlen = le16(coff + 16);
	uint64_t st = pe + PE_SIG_LEN + COFF_LEN + optlen, end = 0;
	if (st + (uint64_t)nsec * SECT_LEN > n) {
		ERR_SET(x, ERR_FORMAT, "truncated arm64 Image: its PE section table runs past the end (%zu bytes)", n);
		return -1;
	}
	for (unsigned i = 0; i < nsec; i++) {
		const uint8_t *s = b + st + (uint64_t)i * SECT_LEN;
		uint64_t rsize = le32(s + 16), rptr = le32(s + 20);
		if (rptr + rsize > end) end = rptr + rsize;
		if (!memcmp(s, ".text\0\0\0", 8)) {
			x->text_foff = rptr;
			x->text_len = rsize;
		}
	}
	if (end > n) {
		ERR_SET(x, ERR_FORMAT, "truncated arm64 Image: %zu bytes, its PE sections end at %llu", n,
			(unsigned long long)end);
		return -1;
	}
	if (!x->text_len) {
		ERR_SET(x, ERR_FORMAT, "arm64 Image: its PE header has no .text section");
		return -1;
	}
	return 0;
}

/* The first well-formed BTF header (magic, version 1, 24-byte header, types then strings
 * inside the file) at a 4-byte aligned offset: the kernel's .BTF in its read-only data. */
static void find_btf(struct a64img *x, const uint8_t *b, size_t n)
{
	for (size_t i = 0; i + BTF_HDR_LEN <= n; i += 4) {
		if (b[i] != (BTF_MAGIC & 0xff) || b[i + 1] != BTF_MAGIC >> 8 || b[i + 2] != 1) continue;
		uint64_t hl = le32(b + i + 4), toff = le32(b + i + 8), tlen = le32(b + i + 12);
		uint64_t soff = le32(b + i + 16), slen = le32(b + i + 20);
		if (hl != BTF_HDR_LEN || toff != 0 || soff < toff + tlen || !tlen || !slen) continue;
		uint64_t len = hl + soff + slen;
		if (len > n - i) continue;
		x->btf_foff = i;
		x->btf_len = len;
		return;
	}
}

/*
 * A relocatable Image (CONFIG_RELOCATABLE, linked -pie --no-apply-dynamic-relocs) carries its
 * .rela.dyn between __rela_start and __rela_end (in its init data); each R_AARCH64_RELATIVE
 * entry says "store r_addend + the KASLR offset at r_offset", both link addresses. The entry
 * for place p has r_offset = L + p, L being the link address of the file's first byte: L is
 * 2 MiB aligned and in the upper half, and the stored value lies inside the image. Exactly one
 * entry must fit (another entry's r_offset could share p's low bits by chance, never its
 * alignment too -- checked on Debian's 6.1: five share the low 16 bits, one fits).
 */
int a64img_link(struct a64img *x, const uint8_t *b, size_t n, uint64_t place, uint64_t *text_link,
		uint64_t *value)
{
	int found = 0;
	uint64_t span = x->image_size > n ? x->image_size : n;
	for (size_t i = 0; i + RELA_LEN <= n; i += 8) {
		if (le64(b + i + 8) != R_AARCH64_RELATIVE) continue;
		uint64_t off = le64(b + i), add = le64(b + i + 16), l = off - place;
		if (off < place || (l & (KIMG_ALIGN - 1)) || !(l >> 63) || add < l || add - l >= span) continue;
		if (found && l == *text_link && add == *value) continue; /* the same, twice */
		if (found++) break;
		*text_link = l;
		*value = add;
	}
	if (found != 1) {
		ERR_SET(x, ERR_FORMAT, "arm64 Image: %s relocation fills offset 0x%llx (is it a relocatable "
			"kernel?)", found ? "more than one" : "no", (unsigned long long)place);
		return -1;
	}
	return 0;
}

int a64img_parse(struct a64img *x, const uint8_t *b, size_t n)
{
	if (a64img_kind(b, n) != A64IMG_IMAGE) {
		ERR_SET(x, ERR_FORMAT, "not an arm64 Image (no \"ARM\\x64\" magic at 0x38)");
		return -1;
	}
	x->text_offset = le64(b + 0x08);
	x->image_size = le64(b + 0x10);
	x->flags = le64(b + 0x18);
	if (x->flags & FLAG_BE) {
		ERR_SET(x, ERR_FORMAT, "arm64 Image: a big-endian kernel, which gdbsample does not read");
		return -1;
	}
	x->has_pe = !memcmp(b, "MZ", 2);
	if (x->has_pe && pe_sections(x, b, n) < 0) return -1;
	if (!x->has_pe) { /* no section table: the text runs from the header to the file's end */
		if (x->image_size && x->image_size < n) {
			ERR_SET(x, ERR_FORMAT, "arm64 Image: %zu bytes, more than the %llu its header says", n,
				(unsigned long long)x->image_size);
			return -1;
		}
		x->text_foff = 0;
		x->text_len = n;
	}
	if (x->image_size && x->text_foff + x->text_len > x->image_size) {
		ERR_SET(x, ERR_FORMAT, "arm64 Image: its text ends past the image_size of its header");
		return -1;
	}
	find_btf(x, b, n);
	return 0;
}
