/* SPDX-License-Identifier: MIT */
/* symtab.h: the function table baked into the image at link time, and address lookup. */
#ifndef SYMTAB_H
#define SYMTAB_H
#include <stdint.h>

/* Name of the function containing addr, and the offset into it; NULL if none. */
const char *symtab_resolve(uint64_t addr, uint64_t *offset);
uint64_t symtab_lookup(const char *name);	/* address of a function, 0 if unknown */
uint64_t symtab_count_get(void);
int kernel_text_contains(uint64_t addr);	/* inside the image's .text */
#endif
