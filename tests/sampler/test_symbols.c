/* SPDX-License-Identifier: MIT */
/* test_symbols.c: nm-style map parsing, sorted lookup, and the x86_64 prologue/hlt checks. */
#include "check.h"
#include "../../sampler/symbols.h"
#include <elf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>

static const char map[] =
	"ffffffff80001000 T kmain\n"
	"ffffffff80000000 T _start\n"
	"ffffffff80001000 t kmain_alias\n"
	"ffffffff80200000 D some_data\n"
	"ffffffff80002000 0000000000000040 T sized_fn\n"
	"ffffffff80003000 W weak_fn\n"
	"\n";

static void test_map(void)
{
	struct symtab t = { 0 };
	CHECK(syms_parse_map(&t, map, sizeof map - 1) == 0);
	CHECK(t.n == 4); /* data dropped, the alias folded into kmain */
	const struct sym *s = syms_lookup(&t, 0xffffffff80001234ull);
	CHECK(s && !strcmp(s->name, "kmain"));
	s = syms_lookup(&t, 0xffffffff80000000ull);
	CHECK(s && !strcmp(s->name, "_start"));
	CHECK(syms_lookup(&t, 0xffffffff7fffffffull) == NULL);
	s = syms_lookup(&t, 0xffffffff8000203full);
	CHECK(s && !strcmp(s->name, "sized_fn"));
	CHECK(syms_lookup(&t, 0xffffffff80002040ull) == NULL); /* past a sized symbol's end */
	char buf[64];
	syms_format(&t, 0xffffffff80001044ull, buf, sizeof buf);
	CHECK_STR(buf, "kmain+0x44");
	syms_format(&t, 0x1234, buf, sizeof buf);
	CHECK_STR(buf, "0x1234");
	CHECK(syms_byte(&t, 0xffffffff80001000ull) == -1); /* no text bytes in a map */
	CHECK(syms_pc_kind(&t, 0xffffffff80001000ull, NULL) == PC_AT_ENTRY);
	CHECK(syms_pc_kind(&t, 0xffffffff80001001ull, NULL) == PC_BODY);
	syms_free(&t);

	struct symtab bad = { 0 };
	CHECK(syms_parse_map(&bad, "\x7f" "ELF garbage\n", 12) == -1);
	CHECK(bad.err != 0);
}

/* A synthetic "ELF" text section: f1 = endbr64; push rbp; mov rsp,rbp; ...; hlt; ret.
 * f2 = push rbp; ... */
static uint8_t text[] = {
	0xf3, 0x0f, 0x1e, 0xfa, 0x55, 0x48, 0x89, 0xe5, 0x90, 0xfb, 0xf4, 0x90, 0x5d, 0xc3, 0x90, 0x90,
	0x55, 0x48, 0x89, 0xe5, 0x90, 0x5d, 0xc3, 0x90,
};

static void test_text(void)
{
	struct symtab t = { 0 };
	struct textsec sec = { 0xffffffff80000000ull, sizeof text, text };
	syms_add(&t, 0xffffffff80000000ull, 16, "f1");
	syms_add(&t, 0xffffffff80000010ull, 8, "f2");
	syms_finish(&t);
	t.is_elf = 1;
	t.secs = &sec;
	t.nsecs = 1;
	uint64_t f1 = 0xffffffff80000000ull, f2 = f1 + 16;
	CHECK(syms_pc_kind(&t, f1, NULL) == PC_AT_ENTRY);
	CHECK(syms_pc_kind(&t, f1 + 4, NULL) == PC_AT_ENTRY);   /* at push rbp after endbr64 */
	CHECK(syms_pc_kind(&t, f1 + 5, NULL) == PC_AFTER_PUSH); /* after push, before mov */
	CHECK(syms_pc_kind(&t, f1 + 8, NULL) == PC_BODY);
	CHECK(syms_pc_kind(&t, f1 + 13, NULL) == PC_AT_ENTRY);  /* at ret: frame already popped */
	CHECK(syms_pc_kind(&t, f2 + 1, NULL) == PC_AFTER_PUSH);
	CHECK(syms_pc_kind(&t, f2 + 4, NULL) == PC_BODY);
	CHECK(syms_idle(&t, f1 + 11) == 1);          /* sti; hlt: halted vCPU's rip */
	CHECK(syms_idle(&t, f1 + 10) == 0);
	CHECK(syms_idle(&t, f1 + 0x1000) == -1);     /* outside the ELF: unknown */
	t.secs = NULL;
	t.nsecs = 0;
	syms_free(&t);
}

/* Names as every output writes them: the expected column is gdbsample-analyze's folded.safe_name
 * of the same bytes (read with surrogateescape), so the C and Python rules cannot drift apart. */
static void test_escape(void)
{
	static const char *const cases[][2] = {
		{ "plain_fn", "plain_fn" },
		{ "a;b", "a\\x3bb" },
		{ "tab\there", "tab\there" },
		{ "nl\nx", "nl\\x0ax" },
		{ "del\x7f", "del\\x7f" },
		{ "c1\xc2\x85" "x", "c1\\x85x" },                /* C1 control: U+0085 */
		{ "caf\xc3\xa9", "caf\xc3\xa9" },                 /* UTF-8 kept as is */
		{ "ls\xe2\x80\xa8", "ls\\u2028" },
		{ "ps\xe2\x80\xa9", "ps\\u2029" },
		{ "nc\xef\xbf\xbe\xef\xbf\xbf", "nc\\ufffe\\uffff" },
		{ "bad\xff", "bad\\xff" },                        /* not UTF-8: each byte as itself */
		{ "cut\xe2\x80", "cut\\xe2\\x80" },
		{ "cont\x80\x80", "cont\\x80\\x80" },
		{ "over\xc0\xaf", "over\\xc0\\xaf" },              /* overlong '/' */
		{ "sur\xed\xa0\x80", "sur\\xed\\xa0\\x80" },       /* an encoded surrogate */
		{ "big\xf4\x90\x80\x80", "big\\xf4\\x90\\x80\\x80" }, /* past U+10FFFF */
		{ "emoji\xf0\x9f\x94\xa5", "emoji\xf0\x9f\x94\xa5" },
		{ "e2:\xe2" "A", "e2:\\xe2A" },
		{ "\xf0\x80\x80\x80", "\\xf0\\x80\\x80\\x80" },
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		char out[64];
		size_t n = syms_escape(NULL, cases[i][0]);
		CHECK(n == strlen(cases[i][1]) && n < sizeof out);
		CHECK(syms_escape(out, cases[i][0]) == n);
		CHECK_STR(out, cases[i][1]);
	}
	struct symtab t = { 0 };
	CHECK(syms_add_mod(&t, 0x1000, 0x10, "f\xff", "m;") == 0);
	syms_finish(&t);
	char buf[64];
	syms_name(syms_lookup(&t, 0x1000), buf, sizeof buf);
	CHECK_STR(buf, "f\\xff [m\\x3b]");
	syms_free(&t);
}

/* A little ELF: .text of 64 bytes at 0xffffffff81000000 holding sized `f` (0..16), unsized `g`
 * (at 16) and the unsized end label `_etext` (at 64); the kind of file whose last unsized symbol
 * once named every address above it ("etext+0x3f7fff7000"). */
static uint8_t *bounded_elf(size_t *n)
{
	static const char str[] = "\0f\0g\0_etext\0", names[] = "\0.text\0.symtab\0.strtab\0.shstrtab\0";
	const uint64_t va = 0xffffffff81000000ull;
	size_t text = sizeof(Elf64_Ehdr), sym = text + 64, strs = sym + 4 * sizeof(Elf64_Sym);
	size_t shn = strs + sizeof str, sh = (shn + sizeof names + 7) & ~(size_t)7;
	*n = sh + 5 * sizeof(Elf64_Shdr);
	uint8_t *b = calloc(1, *n);
	Elf64_Ehdr eh = { .e_type = ET_EXEC, .e_machine = EM_X86_64, .e_version = EV_CURRENT, .e_shoff = sh,
			  .e_ehsize = sizeof eh, .e_shentsize = sizeof(Elf64_Shdr), .e_shnum = 5, .e_shstrndx = 4 };
	memcpy(eh.e_ident, ELFMAG, SELFMAG);
	eh.e_ident[EI_CLASS] = ELFCLASS64;
	eh.e_ident[EI_DATA] = ELFDATA2LSB;
	eh.e_ident[EI_VERSION] = EV_CURRENT;
	memcpy(b, &eh, sizeof eh);
	memset(b + text, 0x90, 64);
	Elf64_Sym syms[4] = { { 0 },
		{ .st_name = 1, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), .st_shndx = 1, .st_value = va, .st_size = 16 },
		{ .st_name = 3, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC), .st_shndx = 1, .st_value = va + 16 },
		{ .st_name = 5, .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_NOTYPE), .st_shndx = 1, .st_value = va + 64 } };
	memcpy(b + sym, syms, sizeof syms);
	memcpy(b + strs, str, sizeof str);
	memcpy(b + shn, names, sizeof names);
	Elf64_Shdr s[5] = { { 0 },
		{ .sh_name = 1, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR, .sh_addr = va,
		  .sh_offset = text, .sh_size = 64, .sh_addralign = 16 },
		{ .sh_name = 7, .sh_type = SHT_SYMTAB, .sh_offset = sym, .sh_size = sizeof syms, .sh_link = 3,
		  .sh_info = 1, .sh_addralign = 8, .sh_entsize = sizeof(Elf64_Sym) },
		{ .sh_name = 15, .sh_type = SHT_STRTAB, .sh_offset = strs, .sh_size = sizeof str, .sh_addralign = 1 },
		{ .sh_name = 23, .sh_type = SHT_STRTAB, .sh_offset = shn, .sh_size = sizeof names, .sh_addralign = 1 } };
	memcpy(b + sh, s, sizeof s);
	return b;
}

/* Names are bounded by what they name (issue 24): a sized symbol by its size, an unsized one by
 * its section's end, a symbol below _etext by _etext; past them an address is unknown and
 * counted. */
static void test_bounded(void)
{
	size_t n;
	uint8_t *elf = bounded_elf(&n);
	struct symtab t = { 0 };
	const uint64_t va = 0xffffffff81000000ull;
	CHECK(syms_add_elf(&t, "bounded.elf", elf, n) == 0);
	const struct sym *s = syms_lookup(&t, va + 15);
	CHECK(s && !strcmp(s->name, "f"));
	s = syms_lookup(&t, va + 63);
	CHECK(s && !strcmp(s->name, "g"));                  /* unsized: up to its section's end */
	CHECK(syms_lookup(&t, va + 64) == NULL);            /* _etext lies past .text's end */
	CHECK(syms_lookup(&t, va + 0x3000000) == NULL);
	CHECK(syms_lookup(&t, va - 1) == NULL);
	char out[64];
	syms_format(&t, va + 0x3000000, out, sizeof out);
	CHECK_STR(out, "0xffffffff84000000");
	uint64_t frames[4] = { va + 4, va + 40, va + 0x1000, va + 64 }, exact[4] = { 0 };
	CHECK(syms_unnamed(&t, frames, 4, exact) == 1);      /* +0x1000; 64 is a return: its call, 63, is g */
	frames[3] = va + 65;
	CHECK(syms_unnamed(&t, frames, 4, exact) == 2);
	exact[0] = 1u << 3;                                 /* an interrupted pc is named by itself */
	frames[3] = va + 64;
	CHECK(syms_unnamed(&t, frames, 4, exact) == 2);
	syms_relocate(&t, 0x200000, 0x200000);              /* KASLR moves the bound with the name */
	s = syms_lookup(&t, va + 0x200000 + 63);
	CHECK(s && !strcmp(s->name, "g"));
	CHECK(syms_lookup(&t, va + 0x200000 + 64) == NULL);
	syms_free(&t);
	free(elf);

	struct symtab m = { 0 };                            /* a map: no sections, _etext bounds */
	static const char map2[] = "ffffffff81000000 T a\nffffffff81000100 T _etext\nffffffff81800000 T init_fn\n";
	CHECK(syms_parse_map(&m, map2, sizeof map2 - 1) == 0);
	s = syms_lookup(&m, 0xffffffff810000ffull);
	CHECK(s && !strcmp(s->name, "a"));
	s = syms_lookup(&m, 0xffffffff81000100ull);         /* _etext itself names its own address */
	CHECK(s && !strcmp(s->name, "_etext"));
	s = syms_lookup(&m, 0xffffffff81800010ull);         /* above _etext (init text): not bounded by it */
	CHECK(s && !strcmp(s->name, "init_fn"));
	CHECK(syms_lookup(&m, 0xffffffff81800000ull + 0x100001) == NULL);
	syms_free(&m);
}

/* An ELF64 with one section of notes, as a vmlinux's .notes: a Xen note, then GNU's build-id.
 * The id is the build-id (as pprof and debuginfod name the build), not a hash of the file. */
static void test_build_id_among_notes(void)
{
	static const char shstr[] = "\0.notes\0.shstrtab";
	uint8_t notes[64] = { 0 }, id[20];
	size_t n = 0;
	uint32_t h[3] = { 4, 8, 5 }; /* Xen: namesz 4, descsz 8, type 5 */
	memcpy(notes + n, h, 12), memcpy(notes + n + 12, "Xen", 4), n += 24;
	uint32_t g[3] = { 4, 20, NT_GNU_BUILD_ID };
	memcpy(notes + n, g, 12), memcpy(notes + n + 12, "GNU", 4);
	for (int i = 0; i < 20; i++) id[i] = (uint8_t)(0xa0 + i);
	memcpy(notes + n + 16, id, 20), n += 36;
	uint8_t f[64 + 64 + sizeof shstr + 3 * sizeof(Elf64_Shdr)] = { 0 };
	Elf64_Ehdr *e = (Elf64_Ehdr *)f;
	memcpy(e->e_ident, ELFMAG, SELFMAG);
	e->e_ident[EI_CLASS] = ELFCLASS64, e->e_ident[EI_DATA] = ELFDATA2LSB, e->e_ident[EI_VERSION] = EV_CURRENT;
	e->e_type = ET_EXEC, e->e_machine = EM_X86_64, e->e_version = EV_CURRENT, e->e_ehsize = sizeof *e;
	e->e_shoff = 64 + 64 + sizeof shstr, e->e_shentsize = sizeof(Elf64_Shdr), e->e_shnum = 3, e->e_shstrndx = 2;
	memcpy(f + 64, notes, n);
	memcpy(f + 128, shstr, sizeof shstr);
	Elf64_Shdr sh[3] = { { 0 }, { .sh_name = 1, .sh_type = SHT_NOTE, .sh_offset = 64, .sh_size = n, .sh_addralign = 4 },
			     { .sh_name = 8, .sh_type = SHT_STRTAB, .sh_offset = 128, .sh_size = sizeof shstr, .sh_addralign = 1 } };
	memcpy(f + e->e_shoff, sh, sizeof sh);
	struct symtab t = { 0 };
	elf_version(EV_CURRENT);
	CHECK(syms_add_elf(&t, "notes.elf", f, sizeof f) == 0);
	CHECK(t.idkind == SYMID_BUILD_ID && t.idlen == 20 && !memcmp(t.id, id, 20));
	syms_free(&t);
}

void test_symbols(void)
{
	test_build_id_among_notes();
	test_map();
	test_text();
	test_escape();
	test_bounded();
}
