/* SPDX-License-Identifier: MIT */
/* test_hash.c: the folding writers' key table: finding, growing, sorting and adding on after a sort. */
#include "check.h"
#include "../../sampler/hash.h"
#include <stdlib.h>

static int by_value_desc(const void *a, const void *b, void *ctx)
{
	uint64_t x = *(const uint64_t *)hash_value(a), y = *(const uint64_t *)hash_value(b);
	(void)ctx;
	return x != y ? (x > y ? -1 : 1) : 0;
}

static int count_calls(const void *a, const void *b, void *ctx)
{
	++*(int *)ctx;
	return strcmp(((const struct hash_item *)a)->key, ((const struct hash_item *)b)->key);
}

/* FNV-1a's published 64-bit vectors: the hash is the one the writers always used. */
static void test_bytes(void)
{
	CHECK(hash_bytes("", 0) == 0xcbf29ce484222325ull);
	CHECK(hash_bytes("a", 1) == 0xaf63dc4c8601ec8cull);
	CHECK(hash_bytes("foobar", 6) == 0x85944171f73967e8ull);
}

/* Keys are bytes and their length: a prefix, a key with a NUL, an empty key are all distinct. */
static void test_keys(void)
{
	struct hash h;
	int added = -1;
	hash_init(&h, 3); /* an odd value size: values still aligned for uint64_t */
	CHECK(h.n == 0 && h.nslot == 0 && !h.items);
	hash_sort(&h, count_calls, NULL); /* empty: nothing to sort, nothing to index */
	unsigned char *v = hash_get(&h, "ab", 2, &added);
	CHECK(v && added == 1 && v[0] == 0 && v[1] == 0 && v[2] == 0 && (uintptr_t)v % 8 == 0);
	v[0] = 7;
	CHECK(hash_get(&h, "ab", 2, &added) == v && added == 0 && v[0] == 7);
	CHECK(hash_get(&h, "ab", 3, &added) != v && added == 1);          /* "ab\0" */
	CHECK(hash_get(&h, "a", 1, &added) != v && added == 1);           /* a prefix */
	CHECK(hash_get(&h, "", 0, &added) && added == 1);                 /* empty */
	CHECK(hash_get(&h, "", 0, NULL) && h.n == 4);                     /* found; added may be NULL */
	CHECK(hash_at(&h, 0)->len == 2 && !memcmp(hash_at(&h, 0)->key, "ab", 2));
	CHECK(hash_at(&h, 3)->len == 0 && (uintptr_t)hash_value(hash_at(&h, 3)) % 8 == 0);
	hash_free(&h);
	CHECK(h.n == 0 && !h.items && !h.slot);
	CHECK(hash_get(&h, "ab", 2, &added) && added == 1 && h.n == 1);   /* usable again */
	hash_free(&h);
}

/* Past the first index (1024 slots) and item array (256): every key found, in the order added. */
static void test_growth(void)
{
	struct hash h;
	char k[32];
	int ok = 1, added;
	hash_init(&h, sizeof(uint64_t));
	for (int i = 0; i < 5000; i++) {
		snprintf(k, sizeof k, "key%d", i);
		uint64_t *v = hash_get(&h, k, strlen(k), &added);
		if (!v || !added) ok = 0;
		else *v = (uint64_t)i;
	}
	CHECK(ok && h.n == 5000 && h.nslot > 2 * h.n && (h.nslot & (h.nslot - 1)) == 0);
	for (int i = 0; ok && i < 5000; i++) {
		snprintf(k, sizeof k, "key%d", i);
		uint64_t *v = hash_get(&h, k, strlen(k), &added);
		const struct hash_item *it = hash_at(&h, (size_t)i);
		if (!v || added || *v != (uint64_t)i || it->len != strlen(k) || memcmp(it->key, k, it->len)) ok = 0;
	}
	CHECK(ok && h.n == 5000);
	hash_free(&h);
}

/* A sort moves the items; the index follows, so adding on (as `top` does) finds the keys again. */
static void test_sort(void)
{
	struct hash h;
	char k[32];
	int ok = 1, added, calls = 0;
	hash_init(&h, sizeof(uint64_t));
	for (int i = 0; i < 3000; i++) {
		snprintf(k, sizeof k, "k%d", i % 1500);
		uint64_t *v = hash_get(&h, k, strlen(k) + 1, NULL);
		if (v) *v += (uint64_t)(i % 7) + 1;
	}
	hash_sort(&h, by_value_desc, NULL);
	for (size_t i = 1; i < h.n; i++)
		if (*(uint64_t *)hash_value(hash_at(&h, i - 1)) < *(uint64_t *)hash_value(hash_at(&h, i))) ok = 0;
	CHECK(ok && h.n == 1500);
	for (int i = 0; i < 1500; i++) {
		snprintf(k, sizeof k, "k%d", i);
		uint64_t *v = hash_get(&h, k, strlen(k) + 1, &added);
		if (!v || added || *v != (uint64_t)(i % 7) + 1 + (uint64_t)((i + 1500) % 7) + 1) ok = 0;
	}
	CHECK(ok && h.n == 1500);
	CHECK(hash_get(&h, "new", 4, &added) && added == 1 && h.n == 1501);
	hash_sort(&h, count_calls, &calls); /* ctx reaches the comparison */
	CHECK(calls > 0 && !strcmp(hash_at(&h, 0)->key, "k0") && !strcmp(hash_at(&h, h.n - 1)->key, "new"));
	hash_free(&h);
}

void test_hash(void)
{
	test_bytes();
	test_keys();
	test_growth();
	test_sort();
}
