/* SPDX-License-Identifier: MIT */
/* elfsec.h: an ELF's sections and symbols found by name (libelf), for the image and .ko loaders. */
#ifndef ELFSEC_H
#define ELFSEC_H
#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/* The first section called name, its header in *sh; NULL if none (or the names do not read). */
Elf_Scn *elfsec_find(Elf *e, const char *name, GElf_Shdr *sh);
/* The bytes of the SHT_PROGBITS section called name (len, and its address in *addr unless addr is
 * NULL), or NULL: none, another type, or no data. The bytes are libelf's, valid while e lives. */
const uint8_t *elfsec_bytes(Elf *e, const char *name, size_t *len, uint64_t *addr);
/* The first defined symbol called name in the symbol table (SHT_SYMTAB), in *out: 0, or -1. */
int elfsec_symbol(Elf *e, const char *name, GElf_Sym *out);

#endif
