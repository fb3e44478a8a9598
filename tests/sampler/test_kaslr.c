/* SPDX-License-Identifier: MIT */
/* test_kaslr.c: finding the KASLR offset from text and from linux_banner, against a fake guest. */
#include "check.h"
#include "../../sampler/kaslr.h"
#include "../../sampler/err.h"
#include "../../sampler/arm64img.h"
#include <stdlib.h>

#define LINK 0xffffffff81000000ull
#define TEXT_LEN 0x10000
#define SLIDE 0x1e00000ll
#define BANNER_AT 0xffffffff82000000ull

static uint8_t image[TEXT_LEN];    /* the image's text, as linked */
static uint8_t running[TEXT_LEN];  /* the guest's, at LINK + SLIDE: patched here and there */
static int fail_with;              /* 0, or what the fake guest's every read returns */
static int reads;

static int guest_read(void *arg, uint64_t addr, uint8_t *buf, int len)
{
	(void)arg;
	static const char banner[] = "Linux version 6.1.0-57-amd64";
	reads++;
	if (fail_with) return fail_with;
	uint64_t t = LINK + (uint64_t)SLIDE, b = BANNER_AT + (uint64_t)SLIDE;
	if (addr >= t && addr + (uint64_t)len <= t + TEXT_LEN) {
		memcpy(buf, running + (addr - t), (size_t)len);
		return 0;
	}
	if (addr >= b && addr + (uint64_t)len <= b + sizeof banner) {
		memcpy(buf, banner + (addr - b), (size_t)len);
		return 0;
	}
	return -1; /* unmapped */
}

static void make_text(uint32_t seed)
{
	for (int i = 0; i < TEXT_LEN; i++) {
		seed = seed * 1103515245u + 12345u;
		image[i] = (uint8_t)(seed >> 16);
	}
	memcpy(running, image, sizeof running);
	for (int i = 0; i < TEXT_LEN; i += 40) running[i] ^= 0x5a; /* boot-time patching: 2.5 % */
}

static void image_symtab(struct symtab *t, struct textsec *sec)
{
	memset(t, 0, sizeof *t);
	sec->addr = LINK;
	sec->len = TEXT_LEN;
	sec->data = image;
	t->secs = sec;
	t->nsecs = 1;
}

static void test_text(void)
{
	struct symtab t;
	struct textsec sec;
	struct kaslr k;
	make_text(1);
	image_symtab(&t, &sec);
	fail_with = 0;
	/* the slide is found from a kernel pc inside the moved text; names from the image follow it */
	CHECK(kaslr_detect(&k, &t, 0, 1, LINK + (uint64_t)SLIDE + 0x100, guest_read, NULL) == 0);
	CHECK(k.slide == SLIDE && k.how == KASLR_TEXT && k.names_slide == SLIDE);
	CHECK(k.match_pct >= KASLR_MIN_MATCH && k.match_pct < 100);
	/* without a pc every 2 MiB step below the top is a candidate: still found */
	CHECK(kaslr_detect(&k, &t, 0, 0, 0, guest_read, NULL) == 0 && k.slide == SLIDE);
	CHECK(k.candidates > 1);
	/* a vCPU in a module (above KASLR_TOP) or anywhere the moved text cannot be narrows nothing:
	 * the slide is still found (it used to leave offset 0 alone: issue 21) */
	CHECK(kaslr_detect(&k, &t, 0, 1, 0xffffffffc0a01234ull, guest_read, NULL) == 0 && k.slide == SLIDE);
	CHECK(k.candidates > 1);
	CHECK(kaslr_detect(&k, &t, 0, 1, 0xffffffff80001000ull, guest_read, NULL) == 0 && k.slide == SLIDE);
	/* a pc the image could hold but does not (it narrows to the wrong place): all are tried */
	CHECK(kaslr_detect(&k, &t, 0, 1, LINK + 0x3000000, guest_read, NULL) == 0 && k.slide == SLIDE);
	CHECK(k.err == 0);
	/* which vCPU's pc to prefer: one the moved text can hold, not a module's */
	CHECK(kaslr_pc_narrows(&t, LINK + (uint64_t)SLIDE + 0x100) == 1);
	CHECK(kaslr_pc_narrows(&t, 0xffffffffc0a01234ull) == 0 && kaslr_pc_narrows(&t, 0xffff888000001000ull) == 0);
	/* a forced offset is checked the same way */
	CHECK(kaslr_check(&k, &t, 0, SLIDE, guest_read, NULL) == 0 && k.how == KASLR_FORCED);
	CHECK(kaslr_check(&k, &t, 0, SLIDE + 0x200000, guest_read, NULL) == -1 && k.err == ERR_MISMATCH);
	CHECK(strstr(k.errstr, "--kaslr-offset 0x2000000") != NULL);
	/* another build of the kernel: nothing matches anywhere */
	make_text(2);
	for (int i = 0; i < TEXT_LEN; i++) image[i] = (uint8_t)(image[i] * 7 + 3); /* the image: build 3 */
	CHECK(kaslr_detect(&k, &t, 0, 1, LINK + (uint64_t)SLIDE + 0x100, guest_read, NULL) == -1);
	CHECK(k.err == ERR_MISMATCH && strstr(k.errstr, "does not match the running guest") != NULL);
	/* one window more than half rewritten is not patching, though 94 % of all bytes match */
	make_text(1);
	memcpy(running, image, sizeof running);
	uint64_t off = (uint64_t)(TEXT_LEN - KASLR_PROBE_LEN) * 3 / (2 * KASLR_PROBES);
	for (int i = 0; i < KASLR_PROBE_LEN / 2 + 1; i++) running[off + (uint64_t)i] ^= 0xff;
	CHECK(kaslr_check(&k, &t, 0, SLIDE, guest_read, NULL) == -1);
	for (int i = 0; i < 2; i++) running[off + (uint64_t)i] ^= 0xff; /* half of it: patching */
	CHECK(kaslr_check(&k, &t, 0, SLIDE, guest_read, NULL) == 0 && k.match_pct == 94);
	/* a connection failure is passed up as such, not as a mismatch */
	make_text(1);
	fail_with = -2;
	CHECK(kaslr_detect(&k, &t, 0, 1, LINK + (uint64_t)SLIDE + 0x100, guest_read, NULL) == -2);
	fail_with = 0;
}

static void test_banner(void)
{
	struct symtab t;
	struct kaslr k;
	static const char map[] = "ffffffff81000000 T _stext\nffffffff81000100 T start_kernel\n"
				  "ffffffff81008000 T _etext\nffffffff82000000 D linux_banner\n";
	memset(&t, 0, sizeof t);
	CHECK(syms_parse_map(&t, map, sizeof map - 1) == 0);
	fail_with = 0;
	/* a link-time map: the banner is found at the slide (offset 0 tried first, once) */
	reads = 0;
	CHECK(kaslr_detect(&k, &t, 1, 1, LINK + (uint64_t)SLIDE + 0x100, guest_read, NULL) == 0);
	CHECK(k.names_slide == SLIDE && k.names_how == KASLR_BANNER);
	CHECK(reads == 2);
	/* a vCPU in a module: the banner is found all the same */
	CHECK(kaslr_detect(&k, &t, 1, 1, 0xffffffffc0a01234ull, guest_read, NULL) == 0 && k.names_slide == SLIDE);
	/* --kaslr-offset with a map dumped from this boot (already moved): the names stay where they
	 * are (they were moved twice and every frame printed as hex: issue 21) ... */
	static const char dumped[] = "ffffffff82e00000 T _stext\nffffffff82e00100 T start_kernel\n"
				     "ffffffff82e08000 T _etext\nffffffff83e00000 D linux_banner\n";
	struct symtab d;
	memset(&d, 0, sizeof d);
	CHECK(syms_parse_map(&d, dumped, sizeof dumped - 1) == 0);
	CHECK(kaslr_check(&k, &d, 1, SLIDE, guest_read, NULL) == 0);
	CHECK(k.slide == SLIDE && k.names_slide == 0 && k.names_how == KASLR_BANNER);
	/* ... and a link-time map's move with the offset */
	CHECK(kaslr_check(&k, &t, 1, SLIDE, guest_read, NULL) == 0 && k.names_slide == SLIDE);
	syms_free(&d);
	/* a map whose banner reads nothing at any offset (another boot's, another kernel's) */
	fail_with = -1;
	CHECK(kaslr_detect(&k, &t, 1, 1, LINK + (uint64_t)SLIDE + 0x100, guest_read, NULL) == -1);
	CHECK(strstr(k.errstr, "linux_banner") != NULL);
	fail_with = 0;
	syms_free(&t);
}

/* arm64: one runtime address known to be in the text (VBAR_EL1 at `vectors`) gives the offset;
 * a wrong link guess (a __bp_harden vector slot) falls back to the window that holds it. */
static void test_at(void)
{
	struct symtab t;
	struct textsec sec;
	struct kaslr k;
	uint64_t vec = LINK + 0x800, at = vec + (uint64_t)SLIDE;
	make_text(1);
	image_symtab(&t, &sec);
	fail_with = 0;
	CHECK(kaslr_detect_at(&k, &t, at, vec, 0x10000, guest_read, NULL) == 0);
	CHECK(k.slide == SLIDE && k.names_slide == SLIDE && k.how == KASLR_TEXT && k.candidates == 1);
	CHECK(kaslr_detect_at(&k, &t, at + 0x4000, vec, 0x10000, guest_read, NULL) == 0 && k.slide == SLIDE);
	CHECK(k.candidates > 1);
	CHECK(kaslr_detect_at(&k, &t, at, 0, 0x10000, guest_read, NULL) == 0 && k.slide == SLIDE);
	/* an address outside every placement of the text (KPTI's trampoline vectors): no match */
	CHECK(kaslr_detect_at(&k, &t, 0xffff7fffff7f0000ull, vec, 0x10000, guest_read, NULL) == -1);
	CHECK(k.err == ERR_MISMATCH && strstr(k.errstr, "does not match the running guest") != NULL);
	fail_with = -2;
	CHECK(kaslr_detect_at(&k, &t, at, vec, 0x10000, guest_read, NULL) == -2);
	fail_with = 0;
}

/* The relocation that fills one place of a relocatable arm64 Image gives its link address; a
 * relocation sharing the place's low bits by chance (not 2 MiB aligned) is no answer. */
static void test_a64_link(void)
{
	enum { N = 0x4000 };
	uint8_t *b = calloc(1, N);
	struct a64img x = { 0 };
	uint64_t l = 0, v = 0, place = 0x2f18;
	struct { uint64_t off, info, add; } rel[] = {
		{ 0xffff800007e10000ull + place, 1027, 0xffff800007e10100ull },  /* low bits alike only */
		{ 0xffff800008000000ull + place, 1027, 0xffff800008010000ull },  /* kallsyms_relative_base */
		{ 0xffff800008000000ull + 0x3000, 1025, 0xffff800008000000ull }, /* not RELATIVE */
	};
	x.image_size = 0x200000; /* the header's: BSS beyond the file */
	memcpy(b + 0x1000, rel, sizeof rel);
	CHECK(a64img_link(&x, b, N, place, &l, &v) == 0 && l == 0xffff800008000000ull && v == 0xffff800008010000ull);
	memset(b + 0x1000 + 24, 0, 24); /* the real one gone: nothing fits */
	CHECK(a64img_link(&x, b, N, place, &l, &v) == -1 && strstr(x.errstr, "no relocation") != NULL);
	free(b);
}

void test_kaslr(void)
{
	test_text();
	test_banner();
	test_at();
	test_a64_link();
}
