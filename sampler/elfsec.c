/* SPDX-License-Identifier: MIT */
/* elfsec.c: an ELF's sections and symbols found by name (libelf), for the image and .ko loaders. */
#include "elfsec.h"
#include <string.h>

Elf_Scn *elfsec_find(Elf *e, const char *name, GElf_Shdr *sh)
{
	size_t shstr;
	Elf_Scn *s = NULL;
	if (elf_getshdrstrndx(e, &shstr)) return NULL;
	while ((s = elf_nextscn(e, s))) {
		const char *n;
		if (gelf_getshdr(s, sh) && (n = elf_strptr(e, shstr, sh->sh_name)) && !strcmp(n, name)) return s;
	}
	return NULL;
}

const uint8_t *elfsec_bytes(Elf *e, const char *name, size_t *len, uint64_t *addr)
{
	GElf_Shdr sh;
	Elf_Scn *s = elfsec_find(e, name, &sh);
	Elf_Data *d = s && sh.sh_type == SHT_PROGBITS ? elf_getdata(s, NULL) : NULL;
	if (!d || !d->d_buf) return NULL;
	*len = d->d_size;
	if (addr) *addr = sh.sh_addr;
	return d->d_buf;
}

int elfsec_symbol(Elf *e, const char *name, GElf_Sym *out)
{
	Elf_Scn *s = NULL;
	while ((s = elf_nextscn(e, s))) {
		GElf_Shdr sh;
		if (!gelf_getshdr(s, &sh) || sh.sh_type != SHT_SYMTAB || !sh.sh_entsize) continue;
		Elf_Data *d = elf_getdata(s, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize; i++) {
			const char *n;
			if (gelf_getsym(d, (int)i, out) && out->st_shndx != SHN_UNDEF &&
			    (n = elf_strptr(e, sh.sh_link, out->st_name)) && !strcmp(n, name))
				return 0;
		}
	}
	return -1;
}
