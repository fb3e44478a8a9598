/* SPDX-License-Identifier: MIT */
/* image.c: the guest kernel as given with -e -- an ELF, a compressed vmlinuz, a symbol map, or an
 * image and a map together: names, text, and whichever unwind tables the image carries. */
#include "image.h"
#include "offcpu_linux.h"
#include "arch.h"
#include "elfsec.h"
#include "err.h"
#include "files.h"
#include "imgcache.h"
#include "kallsyms.h"
#include "vmlinuz.h"
#include <stdlib.h>
#include <sys/stat.h>

static void what_add(struct image *im, const char *fmt, const char *a, const char *b)
{
	size_t o = strlen(im->what);
	snprintf(im->what + o, sizeof im->what - o, fmt, o ? " + " : "", a, b);
}

static void image_guestos(struct image *im, const char *path, const uint8_t *btf, size_t len);

/* A Linux kernel's BTF (an ELF's .BTF, an arm64 Image's blob): struct module's layout from it, for
 * the modules in guest memory; kept as offsets, as the image's bytes are dropped after loading. */
static void image_btf(struct image *im, const uint8_t *btf, size_t len)
{
	im->has_btf = 1;
	mods_layout_btf(&im->modl, btf, len);
	if (im->want & IMG_WANT_OFFCPU)
		im->ocl_ok = offcpu_linux_btf(btf, len, &im->ocl, im->ocl_why, sizeof im->ocl_why) == 0;
}

/* The ELF's own tables: ORC (.orc_unwind_ip, .orc_unwind, .orc_header) and CFI. */
static int load_tables(struct image *im, const char *path, int want)
{
	size_t iplen, elen, hlen = 0;
	uint64_t ipaddr;
	const uint8_t *ips = elfsec_bytes(im->elf, ".orc_unwind_ip", &iplen, &ipaddr);
	const uint8_t *ents = elfsec_bytes(im->elf, ".orc_unwind", &elen, NULL);
	const uint8_t *hdr = elfsec_bytes(im->elf, ".orc_header", &hlen, NULL);
	if ((want & IMG_WANT_ORC) && ips && ents) {
		if (orc_load(&im->orc, ips, iplen, ipaddr, ents, elen, hdr, hlen, im->text_lo, im->text_hi) < 0) {
			ERR_SET(im, ERR_FORMAT, "%s: %s", file_base(path), im->orc.errstr);
			return -1;
		}
		im->has_orc = 1;
	}
	if (want & IMG_WANT_CFI) {
		GElf_Ehdr eh;
		const struct arch *a = gelf_getehdr(im->elf, &eh) ? arch_by_machine(eh.e_machine) : NULL;
		im->has_cfi = a && cfi_open(&im->cfi, im->elf, a->uw) == 0;
	}
	size_t blen = 0;
	const uint8_t *btf = elfsec_bytes(im->elf, ".BTF", &blen, NULL);
	image_guestos(im, path, btf, blen);
	if (im->err) return -1;
	if (btf) image_btf(im, btf, blen);
	return 0;
}

/* Who runs on each vCPU (guestos.h): Linux from the image's .BTF (btf, or NULL), our kernel from
 * its DWARF. */
static void image_guestos(struct image *im, const char *path, const uint8_t *btf, size_t len)
{
	struct guestos *os = &im->os;
	int want = im->want_os;
	os->os = OS_NONE;
	if (im->desc) {
		char err[ERR_MAX - 256];
		if (guestos_desc_dwarf(os, im->elf, im->desc, err, sizeof err) < 0)
			ERR_SET(im, ERR_USAGE, "--tasks: %s (in %s)", err, file_base(path));
		return;
	}
	if (want == OS_NONE) {
		snprintf(os->why, sizeof os->why, "--os none");
		return;
	}
	if (want == OS_LINUX || (want == OS_AUTO && btf)) {
		if (!btf) snprintf(os->why, sizeof os->why, "%s has no .BTF section (a kernel built without "
				   "CONFIG_DEBUG_INFO_BTF)", file_base(path));
		else guestos_linux_btf(os, btf, len);
		return;
	}
	guestos_testkernel_dwarf(os, im->elf);
	if (os->os == OS_NONE && want == OS_AUTO)
		snprintf(os->why, sizeof os->why, "%s has neither BTF (Linux) nor our test kernel's DWARF",
			 file_base(path));
}

/* An ELF image (from a file, or a vmlinuz's payload: im->codec says how it was compressed): text,
 * symbols if any, tables. Takes buf. */
static int load_elf(struct image *im, const char *path, uint8_t *buf, size_t len, int want)
{
	im->elfbuf = buf;
	im->elflen = len;
	if (syms_add_elf(&im->syms, file_base(path), buf, len) < 0) {
		ERR_SET(im, im->syms.err, "%s", im->syms.errstr);
		return -1;
	}
	im->elf = elf_memory((char *)buf, len);
	if (!im->elf) {
		ERR_SET(im, ERR_FORMAT, "%s: bad ELF: %s", file_base(path), elf_errmsg(-1));
		return -1;
	}
	for (int i = 0; i < im->syms.nsecs; i++) {
		const struct textsec *s = &im->syms.secs[i];
		if (!im->text_lo || s->addr < im->text_lo) im->text_lo = s->addr;
		if (s->addr + s->len > im->text_hi) im->text_hi = s->addr + s->len;
	}
	if (load_tables(im, path, want) < 0) return -1;
	if (im->codec) what_add(im, "%s%s (%s payload)", file_base(path), im->codec);
	else what_add(im, "%s%s%s", file_base(path), "");
	return 0;
}

/* Keeps a decompressed payload for the next start. im->cache and im->cache_why say how it went --
 * unless an entry was refused, which is what the user is told (and cache_stored, that it was
 * replaced). */
static void cache_store(struct image *im, const char *dir, const uint8_t *key, const char *codec,
			const uint8_t *elf, size_t n)
{
	char w[sizeof im->cache_why];
	im->cache_stored = imgcache_put(dir, key, codec, elf, n, w, sizeof w) == 0;
	if (im->cache == IMGCACHE_REFUSED) return;
	im->cache = im->cache_stored ? IMGCACHE_STORED : IMGCACHE_UNSTORED;
	snprintf(im->cache_why, sizeof im->cache_why, "%s", im->cache_stored ? dir : w);
}

/* The ELF's bytes gone: freed, or unmapped when they were an image cache entry's. */
static void elfbuf_release(struct image *im)
{
	if (im->elfmap) imgcache_release(im->elfmap, im->elfmaplen);
	else free(im->elfbuf);
	im->elfmap = NULL;
	im->elfbuf = NULL;
}

/* A bzImage's ELF payload (vmlinuz.h), in place of the file's bytes (freed); im->codec says how
 * it was compressed. Through the image cache (imgcache.h): the entry for the file's SHA-256, else
 * the payload decompressed and kept; im->cache and im->cache_why say what the cache did. */
static int unpack_vmlinuz(struct image *im, const char *path, uint8_t **buf, size_t *len)
{
	char dir[512];
	uint8_t key[IMGCACHE_SHA], *elf = NULL;
	size_t elflen = 0;
	const char *codec = NULL;
	int use = !(im->want & IMG_NO_CACHE) && file_cache_dir(dir, sizeof dir) == 0;
	im->elfmap = NULL;
	im->cache = IMGCACHE_OFF;
	if (use) {
		imgcache_sha256(*buf, *len, key);
		int rc = imgcache_get(dir, key, &elf, &elflen, &codec, &im->elfmap, &im->elfmaplen, im->cache_why,
				      sizeof im->cache_why);
		if (rc == 1) {
			im->cache = IMGCACHE_HIT;
			snprintf(im->cache_why, sizeof im->cache_why, "%s", dir);
		} else if (rc < 0) {
			im->cache = IMGCACHE_REFUSED; /* decompressed again below; the entry replaced */
		}
	}
	if (im->cache != IMGCACHE_HIT) {
		struct vmlinuz z = { 0 };
		if (vmlinuz_extract(&z, *buf, *len, &elf, &elflen) < 0) {
			ERR_SET(im, ERR_FORMAT, "%s: %s", file_base(path), z.errstr);
			free(*buf);
			*buf = NULL;
			return -1;
		}
		codec = z.codec;
		if (use) cache_store(im, dir, key, codec, elf, elflen);
	}
	free(*buf);
	im->codec = codec;
	*buf = elf;
	*len = elflen;
	return 0;
}

/* An arm64 Image (or a zboot image's payload): checked and kept until the map is read. Takes buf. */
static int load_a64_file(struct image *im, const char *path, uint8_t *buf, size_t len)
{
	int kind = a64img_kind(buf, len);
	if (kind == A64IMG_ZBOOT) {
		uint8_t *img;
		size_t ilen;
		int rc = a64img_unzboot(&im->a64, buf, len, &img, &ilen);
		free(buf);
		if (rc < 0) {
			ERR_SET(im, ERR_FORMAT, "%s: %s", file_base(path), im->a64.errstr);
			return -1;
		}
		buf = img;
		len = ilen;
		im->codec = im->a64.codec;
	}
	im->a64buf = buf;
	im->a64len = len;
	snprintf(im->a64name, sizeof im->a64name, "%s", file_base(path));
	if (a64img_parse(&im->a64, buf, len) < 0) {
		ERR_SET(im, ERR_FORMAT, "%s: %s", file_base(path), im->a64.errstr);
		return -1;
	}
	if (kind == A64IMG_ZBOOT) what_add(im, "%s%s (zboot, %s payload)", file_base(path), im->codec);
	else what_add(im, "%s%s (arm64 Image)", file_base(path), "");
	return 0;
}

/* The image's own kallsyms tables (k, freed here) as its names: an arm64 Image's, or a stripped
 * ELF's in its .rodata. */
static int names_from_kallsyms(struct image *im, struct kallsyms *k)
{
	int rc = image_add_kallsyms(&im->syms, k);
	ksyms_free(k);
	if (rc < 0) {
		ERR_SET(im, im->syms.err, "%s", im->syms.errstr);
		return -1;
	}
	im->names_kallsyms = 1;
	what_add(im, "%s%s%s", "its kallsyms", "");
	return 0;
}

/* The Image's text (_stext to _etext at most) at link address lo, and its BTF (the task layout). */
static int a64_text(struct image *im, uint64_t lo, uint64_t etext)
{
	struct symtab *t = &im->syms;
	struct a64img *x = &im->a64;
	uint64_t len = x->text_len;
	if (etext > lo && etext - lo < len) len = etext - lo;
	if (syms_add_text(t, lo, im->a64buf + x->text_foff, len) < 0) {
		ERR_SET(im, ERR_SYS, "-e %s: out of memory for its text", im->a64name);
		return -1;
	}
	t->machine = EM_AARCH64;
	im->text_lo = lo;
	im->text_hi = lo + len;
	struct guestos *os = &im->os;
	os->os = OS_NONE;
	if (im->want_os == OS_NONE) snprintf(os->why, sizeof os->why, "--os none");
	else if (!x->btf_len) snprintf(os->why, sizeof os->why, "%s holds no BTF blob (a kernel built without "
				       "CONFIG_DEBUG_INFO_BTF)", im->a64name);
	else guestos_linux_btf(os, im->a64buf + x->btf_foff, x->btf_len);
	if (x->btf_len) image_btf(im, im->a64buf + x->btf_foff, x->btf_len);
	return 0;
}

/*
 * An arm64 Image and no map: the names from its own kallsyms tables (kallsyms.h). A relocatable
 * Image's tables give each symbol as an offset from kallsyms_relative_base, which the file holds
 * as zero (a relocation fills it at boot): the relocation's value (arm64img.h) makes them link
 * addresses, so the KASLR offset found is against the link address, as for an ELF. The text then
 * lies at the link address of _stext: the file offset of the PE .text section from the link
 * address of the file's first byte -- and _stext in the tables must say the same.
 */
static int a64_names(struct image *im)
{
	struct a64img *x = &im->a64;
	struct kallsyms k;
	uint64_t text_link = 0, bias = 0, stext = 0, etext = 0;
	if (ksyms_find(&k, im->a64buf, im->a64len, 0) < 0) {
		ERR_SET(im, ERR_USAGE, "no function names in %s: %s; give this boot's kallsyms dump (-e MAP)",
			im->a64name, k.errstr);
		return -1;
	}
	if (k.addrs != KSYMS_ABSOLUTE && k.base == 0) { /* relocatable: offsets from a relocated base */
		if (a64img_link(x, im->a64buf, im->a64len, k.at[KT_BASE], &text_link, &bias) < 0) {
			ERR_SET(im, ERR_FORMAT, "-e %s: %s: its kallsyms addresses cannot be placed; give this boot's "
				"kallsyms dump too (-e MAP)", im->a64name, x->errstr);
			ksyms_free(&k);
			return -1;
		}
	}
	for (size_t i = 0; i < k.n; i++) {
		k.syms[i].addr += bias;
		const char *n = ksyms_name(&k, i);
		if (!strcmp(n, "_stext")) stext = k.syms[i].addr;
		else if (!strcmp(n, "_etext")) etext = k.syms[i].addr;
		else if (!strcmp(n, "vectors")) im->a64_vectors = k.syms[i].addr;
	}
	if (!text_link && stext >= x->text_foff) text_link = stext - x->text_foff; /* not relocatable */
	if (!stext || !text_link || stext != text_link + x->text_foff) {
		ERR_SET(im, ERR_FORMAT, "-e %s: its kallsyms tables %s (0x%llx), not at the PE .text section's "
			"link address: tables of an unknown layout", im->a64name, stext ? "put _stext elsewhere" :
			"have no _stext", (unsigned long long)stext);
		ksyms_free(&k);
		return -1;
	}
	if (names_from_kallsyms(im, &k) < 0) return -1;
	return a64_text(im, stext, etext);
}

/*
 * An arm64 Image has no ELF sections and no symbols. With a map, its text is placed at the
 * map's _stext (the Image's .text starts there), so with a map dumped from the running boot the
 * text is already where the guest runs it -- the KASLR check then compares it at offset 0 --
 * and runs to the map's _etext. Without one, the Image's own kallsyms name it (a64_names).
 */
static int place_a64(struct image *im)
{
	struct symtab *t = &im->syms;
	int rc;
	if (!im->has_map) {
		rc = a64_names(im);
	} else if (!((t->marks >> MARK_STEXT) & 1)) {
		ERR_SET(im, ERR_USAGE, "-e %s: the map has no _stext to place the arm64 Image's text at: give "
			"this boot's kallsyms dump", im->a64name);
		rc = -1;
	} else {
		im->text_from_map = 1;
		rc = a64_text(im, t->mark[MARK_STEXT], (t->marks >> MARK_ETEXT) & 1 ? t->mark[MARK_ETEXT] : 0);
	}
	free(im->a64buf);
	im->a64buf = NULL;
	return rc;
}

int image_add_kallsyms(struct symtab *t, const struct kallsyms *k)
{
	for (size_t i = 0; i < k->n; i++) {
		const char *name = ksyms_name(k, i);
		syms_mark(t, name, k->syms[i].addr);
		if (strchr("tTwW", k->syms[i].type) && syms_add(t, k->syms[i].addr, 0, name) < 0) return -1;
	}
	syms_finish(t);
	return 0;
}

/* A stripped image and no map: the names from the kernel's own kallsyms tables in its .rodata. */
static int image_kallsyms(struct image *im, const char *path)
{
	size_t len;
	uint64_t addr;
	const uint8_t *ro = elfsec_bytes(im->elf, ".rodata", &len, &addr);
	struct kallsyms k;
	if (!ro) {
		ERR_SET(im, ERR_USAGE, "no function names: %s has neither symbols nor .rodata (for its kallsyms "
			"tables); give a System.map or a kallsyms dump too (-e MAP)", file_base(path));
		return -1;
	}
	if (ksyms_find(&k, ro, len, addr) < 0) {
		ERR_SET(im, ERR_USAGE, "no function names: %s has no symbols, and its kallsyms tables: %s; give a "
			"System.map or a kallsyms dump too (-e MAP)", file_base(path), k.errstr);
		return -1;
	}
	return names_from_kallsyms(im, &k);
}

int image_load(struct image *im, const char *const *paths, int npaths, int want, int want_os,
	       const struct taskdesc *desc)
{
	const char *elfpath = NULL;
	int nkos = 0;
	memset(im, 0, sizeof *im);
	im->want_os = want_os;
	im->want = want;
	im->desc = desc;
	snprintf(im->ocl_why, sizeof im->ocl_why, "no BTF in the image (a Linux kernel built with CONFIG_DEBUG_INFO_BTF has it)");
	snprintf(im->os.why, sizeof im->os.why, "a symbol map has no types to find the task layout in (BTF "
		 "or DWARF): give the kernel image (-e vmlinuz) too");
	elf_version(EV_CURRENT);
	for (int i = 0; i < npaths; i++) {
		uint8_t *buf;
		size_t len;
		char why[160];
		const char *p = paths[i];
		struct stat st;
		if (stat(p, &st) == 0 && S_ISDIR(st.st_mode)) { /* searched for each loaded module's NAME.ko */
			if (ko_add_dir(&im->kos, p) < 0) {
				ERR_SET(im, im->kos.err, "%s", im->kos.errstr);
				return -1;
			}
			nkos++;
			continue;
		}
		if (file_read(p, FILE_MAX_IMAGE, &buf, &len, why, sizeof why) < 0) {
			ERR_SET(im, ERR_USAGE, "-e %s", why);
			return -1;
		}
		int is_elf = len >= 4 && !memcmp(buf, ELFMAG, SELFMAG), is_bz = vmlinuz_is_bzimage(buf, len);
		int is_a64 = a64img_kind(buf, len) != A64IMG_NONE;
		if (is_elf && len >= 18 && buf[16] == ET_REL && buf[17] == 0) { /* e_type: a .ko (kofile.c) */
			if (ko_add_file(&im->kos, p, buf, len) < 0) {
				ERR_SET(im, im->kos.err, "%s", im->kos.errstr);
				return -1;
			}
			nkos++;
			continue;
		}
		if ((is_elf || is_bz || is_a64) && (im->elfbuf || im->a64name[0])) {
			free(buf);
			ERR_SET(im, ERR_USAGE, "-e %s: a second kernel image (give one image and at most one map)",
				file_base(p));
			return -1;
		}
		if (is_elf || is_bz) elfpath = p;
		if (is_a64) {
			if (load_a64_file(im, p, buf, len) < 0) return -1;
		} else if (is_elf || is_bz) { /* an ELF, or a vmlinuz's compressed one */
			if (is_bz && unpack_vmlinuz(im, p, &buf, &len) < 0) return -1;
			if (load_elf(im, p, buf, len, want) < 0) return -1;
		} else {
			if (!len) {
				free(buf);
				ERR_SET(im, ERR_USAGE, "-e %s: empty file", file_base(p));
				return -1;
			}
			if (im->has_map) {
				free(buf);
				ERR_SET(im, ERR_USAGE, "-e %s: a second symbol map (give at most one)", file_base(p));
				return -1;
			}
			size_t before = im->syms.n;
			int rc = syms_parse_map(&im->syms, (const char *)buf, len);
			int placeholder = strstr((const char *)buf, "The real System.map is in") != NULL;
			free(buf);
			if (rc < 0) {
				ERR_SET(im, ERR_FORMAT, "-e %s: %s", file_base(p), im->syms.errstr);
				return -1;
			}
			if (placeholder && im->syms.n == before) {
				ERR_SET(im, ERR_FORMAT, "-e %s: Debian's placeholder System.map (the real one is in the "
					"-dbg package); give a kallsyms dump of the guest", file_base(p));
				return -1;
			}
			im->has_map = 1;
			what_add(im, "%s%s%s", file_base(p), "");
		}
	}
	if (nkos == npaths) { /* module files alone: the kernel is found in guest memory (kfind.c) */
		im->only_kos = 1;
		return 0;
	}
	if (desc && im->os.os != OS_DESC) {
		ERR_SET(im, ERR_USAGE, "--tasks: no kernel ELF among the -e files to resolve the description in "
			"(it needs the image's DWARF: a vmlinux or an ELF built with -g, not a map, .ko or arm64 Image)");
		return -1;
	}
	if (im->a64buf && place_a64(im) < 0) return -1;
	if (!im->syms.n && im->elf && image_kallsyms(im, elfpath) < 0) return -1;
	if (!im->syms.n) {
		ERR_SET(im, ERR_USAGE, "no function names: %s has no symbols; give a System.map or a kallsyms "
			"dump too (-e MAP)", npaths ? file_base(paths[0]) : "the image");
		return -1;
	}
	/* Keep the ELF only while libdw reads CFI from it: a decompressed distro image is ~60 MB. */
	if (!im->has_cfi && im->elf) {
		elf_end(im->elf);
		im->elf = NULL;
		elfbuf_release(im);
	}
	return 0;
}

void image_relocate(struct image *im, int64_t text_slide, int64_t names_slide)
{
	syms_relocate(&im->syms, names_slide, text_slide);
	im->orc.bias = (uint64_t)text_slide;
	im->cfi.bias = (uint64_t)text_slide;
}

void image_free(struct image *im)
{
	if (im->has_orc) orc_free(&im->orc);
	if (im->has_cfi) cfi_free(&im->cfi);
	if (im->elf) elf_end(im->elf);
	elfbuf_release(im);
	free(im->a64buf);
	syms_free(&im->syms);
	ko_free(&im->kos);
	memset(im, 0, sizeof *im);
}
