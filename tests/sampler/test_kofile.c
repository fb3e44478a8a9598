/* SPDX-License-Identifier: MIT */
/* test_kofile.c: .ko files -- .modinfo, vermagic and banner parsing on literals, section bases
 * derived from symbols, refusals (truncated, not a module, another kernel, another build), and
 * a stand-in module (data/ko_mini.c) placed at guest addresses through libdwfl: lines and CFI. */
#include "check.h"
#include "../../sampler/kofile.h"
#include "../../sampler/err.h"
#include "../../sampler/files.h"
#include <gelf.h>
#include <stdlib.h>

static void test_parsers(void)
{
	static const uint8_t mi[] = "license=GPL\0namex=no\0name=hotmod\0vermagic=6.1.0-57-amd64 SMP preempt \0";
	char out[64];
	CHECK(ko_modinfo(mi, sizeof mi, "name", out, sizeof out) == 0);
	CHECK_STR(out, "hotmod"); /* not namex= */
	CHECK(ko_modinfo(mi, sizeof mi, "vermagic", out, sizeof out) == 0);
	CHECK_STR(out, "6.1.0-57-amd64 SMP preempt ");
	CHECK(ko_modinfo(mi, sizeof mi, "srcversion", out, sizeof out) == -1);
	CHECK(ko_modinfo(mi, 5, "license", out, sizeof out) == -1); /* cut inside the key */
	CHECK(ko_modinfo((const uint8_t *)"name=abcdefgh", 13, "name", out, 4) == 0 && !strcmp(out, "abc"));
	CHECK(ko_vermagic_release("6.1.0-57-amd64 SMP preempt mod_unload modversions ", out, sizeof out) == 0);
	CHECK_STR(out, "6.1.0-57-amd64");
	CHECK(ko_vermagic_release("", out, sizeof out) == -1);
	CHECK(ko_vermagic_release("6.1\033x SMP", out, sizeof out) == -1);
	static const char b[] = "Linux version 6.12.95+deb12-amd64 (debian-kernel@lists.debian.org) (gcc-12) #1 SMP";
	CHECK(ko_banner_release(b, sizeof b - 1, out, sizeof out) == 0);
	CHECK_STR(out, "6.12.95+deb12-amd64");
	CHECK(ko_banner_release("Linux versio", 12, out, sizeof out) == -1);
	CHECK(ko_banner_release("Linux version ", 14, out, sizeof out) == -1);
}

static void test_bases(void)
{
	const struct ko_sym ks[] = { { "a", 1, 0x10, 8 }, { "b", 1, 0x40, 8 }, { "c", 3, 0x0, 4 },
				     { "d", 1, 0x80, 8 }, { "e", 5, 0x0, 4 } };
	const struct ko_gsym gs[] = { { "b", 0xffffffffc0001040ull, 8 }, { "a", 0xffffffffc0001010ull, 8 },
				      { "c", 0xffffffffc0002000ull, 4 }, { "x", 0xffffffffc0003000ull, 4 } };
	struct ko_base out[8];
	struct ko_match m;
	int n = ko_section_bases(ks, 5, gs, 4, out, 8, &m);
	CHECK(n == 2); /* d and e are not in the guest (freed .init.text): unplaced */
	CHECK(out[0].shndx == 1 && out[0].addr == 0xffffffffc0001000ull && out[0].agree == 2);
	CHECK(out[1].shndx == 3 && out[1].addr == 0xffffffffc0002000ull);
	CHECK(m.matched == 3 && m.disagree == 0 && m.sizes_differ == 0);
	/* one symbol elsewhere: the majority wins, the other is counted */
	const struct ko_gsym g2[] = { { "a", 0xffffffffc0001010ull, 8 }, { "b", 0xffffffffc0001040ull, 8 },
				      { "d", 0xffffffffc0009080ull, 9 } };
	n = ko_section_bases(ks, 5, g2, 3, out, 8, &m);
	CHECK(n == 1 && out[0].addr == 0xffffffffc0001000ull && m.matched == 2 && m.disagree == 1);
	CHECK(m.sizes_differ == 1);
	CHECK(ko_section_bases(ks, 5, gs, 0, out, 8, &m) == 0 && m.matched == 0);
}

static uint8_t *mini(size_t *len)
{
	uint8_t *buf;
	char why[160];
	if (file_read(KO_MINI, 1 << 24, &buf, len, why, sizeof why) < 0) {
		fprintf(stderr, "%s\n", why);
		return NULL;
	}
	return buf;
}

static void test_refusals(void)
{
	size_t len;
	uint8_t *buf = mini(&len), *cut;
	CHECK(buf != NULL);
	if (!buf) return;
	struct koset s = { 0 };
	cut = malloc(len);
	memcpy(cut, buf, len);
	CHECK(ko_add_file(&s, "dir/cut.ko", cut, len / 2) == -1 && s.err == ERR_FORMAT);
	CHECK(strstr(s.errstr, "cut.ko: ") && strstr(s.errstr, "truncated"));
	ko_free(&s);
	cut = malloc(len);
	memcpy(cut, buf, len);
	memset(cut + 16, 0xee, 48); /* the ELF header after the magic */
	CHECK(ko_add_file(&s, "bad.ko", cut, len) == -1 && s.err == ERR_FORMAT);
	ko_free(&s);
	cut = malloc(len);
	memcpy(cut, buf, len);
	for (size_t i = 0; i + 8 < len; i++) /* no vermagic: not a module */
		if (!memcmp(cut + i, "vermagic", 8)) memcpy(cut + i, "vermagiX", 8);
	CHECK(ko_add_file(&s, "plain.o", cut, len) == -1 && strstr(s.errstr, "no .modinfo with a vermagic"));
	ko_free(&s);
	/* built for another kernel */
	CHECK(ko_add_file(&s, "ko_mini.ko", buf, len) == 0 && s.n == 1 && !strcmp(s.k[0].name, "ko_mini"));
	snprintf(s.release, sizeof s.release, "6.12.95+deb12-amd64");
	CHECK(ko_check_release(&s) == -1 && s.err == ERR_MISMATCH);
	CHECK(strstr(s.errstr, "built for Linux 6.1.0-57-amd64") && strstr(s.errstr, "runs 6.12.95+deb12-amd64"));
	s.err = 0;
	snprintf(s.release, sizeof s.release, "6.1.0-57-amd64");
	CHECK(ko_check_release(&s) == 0);
	ko_free(&s);
}

#define T0 0xffffffffc0360000ull /* where the "guest" loaded section 1 (.text); section n at T0 + n * 64 KiB */
#define SEC(n) (T0 + 0x10000ull * ((n) - 1))

/* The guest's symbols of ko_mini: its own functions where SEC() puts their sections (ko_leaf
 * with size leafsize); *mid and *cold: where ko_mid and ko_cold run. */
static void guest(const struct kofile *k, struct symtab *names, struct module *m, struct modset *ms,
		  uint64_t leafsize, uint64_t *mid, uint64_t *cold)
{
	memset(names, 0, sizeof *names);
	Elf *e = elf_memory((char *)k->buf, k->len);
	Elf_Scn *scn = NULL;
	int n = 0;
	while ((scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !(d = elf_getdata(scn, NULL))) continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize; i++) {
			GElf_Sym y;
			gelf_getsym(d, (int)i, &y);
			const char *nm = elf_strptr(e, sh.sh_link, y.st_name);
			if (GELF_ST_TYPE(y.st_info) != STT_FUNC || !nm) continue;
			uint64_t a = SEC(y.st_shndx) + y.st_value;
			syms_add_mod(names, a, strcmp(nm, "ko_leaf") ? y.st_size : leafsize, nm, "ko_mini");
			if (!strcmp(nm, "ko_mid")) *mid = a;
			if (!strcmp(nm, "ko_cold")) *cold = a;
			n++;
		}
	}
	elf_end(e);
	syms_add_mod(names, *mid, 12, "other", "another");        /* another module's: not matched */
	syms_add(names, 0xffffffff81000000ull, 0x100, "ko_leaf");  /* the core's: not matched */
	syms_finish(names);
	memset(m, 0, sizeof *m);
	snprintf(m->name, sizeof m->name, "ko_mini");
	m->addr = 0xffffffffc0370000ull;
	m->text[0][0] = T0;
	m->text[0][1] = SEC(32);
	m->nsyms = (uint32_t)n;
	memset(ms, 0, sizeof *ms);
	ms->m = m;
	ms->n = 1;
}

static void test_place(void)
{
	size_t len;
	uint8_t *buf = mini(&len);
	if (!buf) return;
	struct koset s = { 0 };
	struct symtab names;
	struct module m;
	struct modset ms;
	char line[512];
	uint64_t mid = 0, cold = 0;
	CHECK(ko_add_file(&s, "ko_mini.ko", buf, len) == 0);
	guest(&s.k[0], &names, &m, &ms, 0, &mid, &cold);
	CHECK(mid && cold);
	CHECK(ko_place(&s, &ms, &names) == 0 && s.k[0].placed);
	CHECK(s.k[0].nbases == 2 && s.k[0].match.matched == 3);
	CHECK(ko_srcline(&s, mid, line, sizeof line) == 0 && !strncmp(line, "ko_mini.c:", 10));
	int l = atoi(line + 10);
	CHECK(l >= 15 && l <= 23); /* in ko_mid, or ko_inl inlined into it */
	CHECK(ko_srcline(&s, cold + 1, line, sizeof line) == 0 && !strncmp(line, "ko_mini.c:2", 11)); /* ~26 */
	CHECK(ko_srcline(&s, T0 - 1, line, sizeof line) == -1); /* not in the module */
	int inl = 0; /* ko_inl's code inside ko_mid: its line, then where ko_mid calls it */
	for (uint64_t pc = mid; pc < mid + 16; pc++)
		if (ko_srcline(&s, pc, line, sizeof line) == 0 && strstr(line, ", inlined ko_inl from ko_mini.c:22")) inl++;
	CHECK(inl > 0);
	/* CFI: an FDE for each function, at its guest address */
	struct cfi_ctx *c = ko_cfi(&s, mid + 1);
	CHECK(c != NULL && s.steps == 1);
	const struct cfi_rule *r = c ? cfi_rule_at(c, mid + 1 - c->bias) : NULL;
	CHECK(r && r->found && r->usable && r->cfa_reg == 7);
	r = c ? cfi_rule_at(c, cold + 2 - c->bias) : NULL;
	CHECK(r && r->found);
	CHECK(ko_cfi(&s, 0xffffffff81000010ull) == NULL);
	ko_line(&s, line, sizeof line);
	CHECK(strstr(line, "1 given") && strstr(line, "1 placed (ko_mini: 2 sections from 3 functions)"));
	/* unloaded: unplaced; loaded again: placed again */
	m.addr = 0;
	CHECK(ko_place(&s, &ms, &names) == 0 && !s.k[0].placed && s.not_loaded == 1);
	m.addr = 0xffffffffc0380000ull;
	CHECK(ko_place(&s, &ms, &names) == 0 && s.k[0].placed && s.not_loaded == 0);
	syms_free(&names);
	ko_free(&s);
	/* another build: a function of another size */
	buf = mini(&len);
	CHECK(ko_add_file(&s, "ko_mini.ko", buf, len) == 0);
	guest(&s.k[0], &names, &m, &ms, 999, &mid, &cold);
	CHECK(ko_place(&s, &ms, &names) == -1 && s.err == ERR_MISMATCH && !s.k[0].placed);
	CHECK(strstr(s.errstr, "not the build of ko_mini the guest runs") && strstr(s.errstr, "1 of another size"));
	syms_free(&names);
	ko_free(&s);
}

void test_kofile(void)
{
	elf_version(EV_CURRENT);
	test_parsers();
	test_bases();
	test_refusals();
	test_place();
}
