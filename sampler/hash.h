/* SPDX-License-Identifier: MIT */
/* hash.h: a table of distinct byte-string keys, each with a fixed-size value (fold, report, top), and its FNV-1a hash. */
#ifndef HASH_H
#define HASH_H
#include <stddef.h>
#include <stdint.h>

/* One item: its key, then (at hash_value) the caller's value. */
struct hash_item {
	void *key;       /* a malloc'd copy of the key bytes (so aligned for any type) */
	size_t len;      /* key bytes */
	uint64_t hash;   /* hash_bytes of the key */
};

struct hash {
	unsigned char *items;  /* n items of stride bytes: struct hash_item, then the value */
	size_t n, cap;         /* items used / allocated */
	size_t stride;         /* bytes per item: the header and the value, 8-aligned */
	size_t *slot;          /* open-addressing index into items (+1; 0 = empty) */
	size_t nslot;          /* slots: a power of two, more than twice n (0 until the first add) */
};

/* An empty table whose values are vsize bytes (aligned for uint64_t). Allocates nothing. */
void hash_init(struct hash *h, size_t vsize);
/* The value for key (len bytes): found, or added zero-filled (*added = 1, else 0; added may be NULL);
 * NULL when out of memory (nothing added). The pointer stays valid until the next add or sort. */
void *hash_get(struct hash *h, const void *key, size_t len, int *added);
/* The item of key (len bytes), or NULL: nothing is added. */
struct hash_item *hash_find(const struct hash *h, const void *key, size_t len);
/* Sort the items with cmp (given two struct hash_item pointers and ctx) and re-index; the items'
 * order is then the sorted one, and adding may go on (as `top` does after each screen). */
void hash_sort(struct hash *h, int (*cmp)(const void *a, const void *b, void *ctx), void *ctx);
/* Release the keys, the items and the index; the table is empty again (same value size). */
void hash_free(struct hash *h);
/* FNV-1a (64-bit) of n bytes. */
uint64_t hash_bytes(const void *p, size_t n);

/* Item i (i < h->n): in the order added, or as the last hash_sort left them. */
static inline struct hash_item *hash_at(const struct hash *h, size_t i)
{
	return (struct hash_item *)(void *)(h->items + i * h->stride);
}

/* An item's value. */
static inline void *hash_value(const struct hash_item *it)
{
	return (unsigned char *)it + sizeof *it;
}

#endif
