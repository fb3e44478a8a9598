/* SPDX-License-Identifier: MIT */
/* fuzz_ko.c: libFuzzer harness -- arbitrary bytes as a kernel module file: the checks (ko_add_file),
 * then, for what passes, placement at a guest address through libdwfl with the file's own functions
 * as the guest's symbols (relocating its DWARF), source lines and CFI rules across its text. */
#include "../sampler/kofile.h"
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

#define BASE 0xffffffffc0100000ull /* each section at BASE + 64 KiB * its index */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	if (!init) {
		elf_version(EV_CURRENT);
		init = 1;
	}
	uint8_t *buf = malloc(size ? size : 1); /* exact size: ASan sees any read past the file */
	if (!buf) return 0;
	memcpy(buf, data, size);
	struct koset s = { 0 };
	if (ko_add_file(&s, "fuzz.ko", buf, size) < 0) {
		ko_free(&s);
		return 0;
	}
	/* The guest's view: the file's own functions, each section 64 KiB apart. */
	struct symtab names = { 0 };
	Elf *e = elf_memory((char *)s.k[0].buf, s.k[0].len);
	Elf_Scn *scn = NULL;
	int nsyms = 0;
	while (e && (scn = elf_nextscn(e, scn)) && nsyms < 256) {
		GElf_Shdr sh;
		Elf_Data *d;
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize || !(d = elf_getdata(scn, NULL)))
			continue;
		for (size_t i = 0; i < sh.sh_size / sh.sh_entsize && nsyms < 256; i++) {
			GElf_Sym y;
			const char *nm;
			if (!gelf_getsym(d, (int)i, &y) || GELF_ST_TYPE(y.st_info) != STT_FUNC || y.st_shndx == 0 ||
			    y.st_shndx >= 64 || !(nm = elf_strptr(e, sh.sh_link, y.st_name)) || !nm[0] || y.st_value >= 0x10000)
				continue;
			syms_add_mod(&names, BASE + 0x10000ull * y.st_shndx + y.st_value, y.st_size, nm, s.k[0].name);
			nsyms++;
		}
	}
	if (e) elf_end(e);
	syms_finish(&names);
	struct module m = { 0 };
	snprintf(m.name, sizeof m.name, "%s", s.k[0].name);
	m.addr = 0xffffffffc0000000ull;
	m.text[0][0] = BASE;
	m.text[0][1] = BASE + 0x10000ull * 64;
	m.nsyms = (uint32_t)nsyms;
	struct modset ms = { 0 };
	ms.m = &m;
	ms.n = 1;
	if (ko_place(&s, &ms, &names) == 0 && s.k[0].placed)
		for (int i = 0; i < s.k[0].nbases; i++)
			for (uint64_t off = 0; off < 0x200; off += 0x21) {
				uint64_t pc = s.k[0].bases[i].addr + off;
				char line[128];
				ko_srcline(&s, pc, line, sizeof line);
				struct cfi_ctx *c = ko_cfi(&s, pc);
				if (c) cfi_rule_at(c, pc - c->bias);
			}
	syms_free(&names);
	ko_free(&s);
	return 0;
}
