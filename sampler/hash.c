/* SPDX-License-Identifier: MIT */
/* hash.c: the table of distinct keys (fold, report, top): open addressing over items kept in order. */
#include "hash.h"
#include <stdlib.h>
#include <string.h>

/*
 * Items live in one array, in the order they were added (or sorted): that array is what the
 * writers iterate and sort, so their output never depends on the hash. The index beside it maps a
 * key's hash to an item (linear probing); it is rebuilt at twice the size when half full, and in
 * place after a sort moved the items.
 */

#define HASH_SLOTS_MIN 1024   /* first index size */
#define HASH_ITEMS_MIN 256    /* first item array size */

uint64_t hash_bytes(const void *p, size_t n)
{
	const unsigned char *b = p;
	uint64_t h = 0xcbf29ce484222325ull;          /* FNV-1a 64-bit offset basis */
	for (size_t i = 0; i < n; i++) h = (h ^ b[i]) * 0x100000001b3ull; /* ...and prime */
	return h;
}

void hash_init(struct hash *h, size_t vsize)
{
	memset(h, 0, sizeof *h);
	h->stride = sizeof(struct hash_item) + ((vsize + 7) & ~(size_t)7);
}

/* Fill slot (nslot of them, zeroed) from the items. */
static void index_items(const struct hash *h, size_t *slot, size_t nslot)
{
	for (size_t i = 0; i < h->n; i++) {
		size_t k = hash_at(h, i)->hash & (nslot - 1);
		while (slot[k]) k = (k + 1) & (nslot - 1);
		slot[k] = i + 1;
	}
}

static int grow_index(struct hash *h)
{
	size_t nslot = h->nslot ? h->nslot * 2 : HASH_SLOTS_MIN;
	size_t *slot = calloc(nslot, sizeof *slot);
	if (!slot) return -1;
	index_items(h, slot, nslot);
	free(h->slot);
	h->slot = slot;
	h->nslot = nslot;
	return 0;
}

struct hash_item *hash_find(const struct hash *h, const void *key, size_t len)
{
	if (!h->nslot) return NULL;
	uint64_t hv = hash_bytes(key, len);
	for (size_t k = hv & (h->nslot - 1); h->slot[k]; k = (k + 1) & (h->nslot - 1)) {
		struct hash_item *it = hash_at(h, h->slot[k] - 1);
		if (it->hash == hv && it->len == len && !memcmp(it->key, key, len)) return it;
	}
	return NULL;
}

void *hash_get(struct hash *h, const void *key, size_t len, int *added)
{
	uint64_t hv = hash_bytes(key, len);
	if (added) *added = 0;
	if (h->n * 2 >= h->nslot && grow_index(h) < 0) return NULL;
	size_t k = hv & (h->nslot - 1);
	for (; h->slot[k]; k = (k + 1) & (h->nslot - 1)) {
		struct hash_item *it = hash_at(h, h->slot[k] - 1);
		if (it->hash == hv && it->len == len && !memcmp(it->key, key, len)) return hash_value(it);
	}
	if (h->n == h->cap) {
		size_t ncap = h->cap ? h->cap * 2 : HASH_ITEMS_MIN;
		unsigned char *ni = realloc(h->items, ncap * h->stride);
		if (!ni) return NULL;
		h->items = ni;
		h->cap = ncap;
	}
	void *copy = malloc(len ? len : 1);
	if (!copy) return NULL;
	memcpy(copy, key, len);
	struct hash_item *it = hash_at(h, h->n);
	*it = (struct hash_item){ copy, len, hv };
	memset(hash_value(it), 0, h->stride - sizeof *it);
	h->slot[k] = ++h->n;
	if (added) *added = 1;
	return hash_value(it);
}

void hash_sort(struct hash *h, int (*cmp)(const void *a, const void *b, void *ctx), void *ctx)
{
	if (!h->n) return; /* qsort_r(NULL, 0) is undefined */
	qsort_r(h->items, h->n, h->stride, cmp, ctx);
	memset(h->slot, 0, h->nslot * sizeof *h->slot);
	index_items(h, h->slot, h->nslot);
}

void hash_free(struct hash *h)
{
	for (size_t i = 0; i < h->n; i++) free(hash_at(h, i)->key);
	free(h->items);
	free(h->slot);
	size_t stride = h->stride;
	memset(h, 0, sizeof *h);
	h->stride = stride;
}
