/* SPDX-License-Identifier: MIT */
/* mem.h: physical memory: a page allocator over the PVH memory map, and a tiny heap. */
#ifndef MEM_H
#define MEM_H
#include <stddef.h>
#include <stdint.h>

#define PAGE_SIZE 4096

void mem_init(void);			/* after boot_info_init: takes usable RAM above the kernel */
void *kalloc(size_t bytes);		/* page-granular, zeroed? no: contents undefined; NULL if out */
void kfree(void *p, size_t bytes);	/* bytes must equal the allocation's */
void *kzalloc(size_t bytes);		/* kalloc + zero */
uint64_t mem_free_bytes(void);
uint64_t mem_total_bytes(void);
#endif
