/* SPDX-License-Identifier: MIT */
/* mem.c: page allocator: bump allocation from the largest usable region, free lists by size. */
#include "mem.h"
#include "boot.h"
#include "lib.h"
#include "layout.h"
#include "panic.h"
#include "spinlock.h"

#define MAX_ORDER_PAGES 64	/* free lists keep blocks of 1..64 pages */

extern char __kernel_end[];

struct freeblock { struct freeblock *next; };

static struct spinlock mem_lock = SPINLOCK_INIT("mem");
static uintptr_t bump, bump_end;		/* physical: next free byte, end of region */
static struct freeblock *freelist[MAX_ORDER_PAGES + 1];	/* indexed by page count */
static uint64_t total_bytes, freed_bytes;

void mem_init(void)
{
	uintptr_t kend = (KV2P(__kernel_end) + PAGE_SIZE - 1) & ~(uintptr_t)(PAGE_SIZE - 1);
	uint64_t best = 0;
	for (int i = 0; i < boot_info.nmemmap; i++) {
		struct memmap_entry *e = &boot_info.memmap[i];
		if (e->type != MEMMAP_RAM)
			continue;
		uint64_t lo = e->addr, hi = e->addr + e->size;
		if (hi > (uint64_t)DIRECTMAP_GB << 30)
			hi = (uint64_t)DIRECTMAP_GB << 30;	/* only what the direct map covers */
		if (lo < kend)
			lo = kend;
		lo = (lo + PAGE_SIZE - 1) & ~(uint64_t)(PAGE_SIZE - 1);
		if (hi > lo && hi - lo > best) {
			best = hi - lo;
			bump = lo;
			bump_end = hi;
		}
	}
	if (!best)
		panic("mem: no usable RAM above the kernel in the memory map");
	total_bytes = best;
}

void *kalloc(size_t bytes)
{
	size_t pages = (bytes + PAGE_SIZE - 1) / PAGE_SIZE;
	void *p = 0;
	uint64_t f = spin_lock_irqsave(&mem_lock);
	if (pages <= MAX_ORDER_PAGES && freelist[pages]) {
		struct freeblock *b = freelist[pages];
		freelist[pages] = b->next;
		freed_bytes -= pages * PAGE_SIZE;
		p = b;
	} else if (bump + pages * PAGE_SIZE <= bump_end) {
		p = P2V(bump);
		bump += pages * PAGE_SIZE;
	}
	spin_unlock_irqrestore(&mem_lock, f);
	return p;
}

void *kzalloc(size_t bytes)
{
	void *p = kalloc(bytes);
	if (p)
		memset(p, 0, (bytes + PAGE_SIZE - 1) & ~(size_t)(PAGE_SIZE - 1));
	return p;
}

void kfree(void *p, size_t bytes)
{
	size_t pages = (bytes + PAGE_SIZE - 1) / PAGE_SIZE;
	if (!p)
		return;
	if (pages > MAX_ORDER_PAGES)
		panic("kfree: %zu pages is more than the free lists keep", pages);
	uint64_t f = spin_lock_irqsave(&mem_lock);
	struct freeblock *b = p;
	b->next = freelist[pages];
	freelist[pages] = b;
	freed_bytes += pages * PAGE_SIZE;
	spin_unlock_irqrestore(&mem_lock, f);
}

uint64_t mem_free_bytes(void)
{
	return (bump_end - bump) + freed_bytes;
}

uint64_t mem_total_bytes(void)
{
	return total_bytes;
}
