/* SPDX-License-Identifier: MIT */
/* kallsyms.c: the kernel's own compressed symbol tables (kallsyms_names & co), found by their shape
 * in a blob of read-only data (a vmlinux payload, an arm64 Image, guest memory) and decoded into
 * every symbol's address, type letter and name. Pure: bytes in, a table out. */
#include "kallsyms.h"
#include "bytes.h"
#include "err.h"
#include <stdlib.h>

/*
 * The layout, as Linux's scripts/kallsyms.c emits it into .rodata (every label .balign 8 on
 * 64-bit kernels, little-endian here):
 *
 *   kallsyms_num_syms       u32 N
 *   kallsyms_names          N entries: a length (1 byte, or 2 as ULEB128 for >= 0x80, 6.1+),
 *                           then that many token indexes; expanded, the first letter is the
 *                           symbol's type, the rest its name. Sorted by address.
 *   kallsyms_markers        u32 per 256 symbols: the offset of entry 256*i in kallsyms_names
 *   kallsyms_seqs_of_names  6.2+: N entries of 3 bytes (big-endian) -- symbol indexes in name
 *                           order (briefly 4-byte .long in 6.2's development)
 *   kallsyms_token_table    256 NUL-terminated strings; a byte that occurs in some name stands
 *                           for itself, the unused ones for the commonest substrings
 *   kallsyms_token_index    u16 per token: its offset in kallsyms_token_table
 *   kallsyms_offsets        u32 per symbol (relative: from kallsyms_relative_base, a pointer
 *   kallsyms_relative_base  after the offsets), before kallsyms_num_syms in 6.1's order and after
 *                           kallsyms_token_index in the later one (Debian's 6.12), which puts
 *                           kallsyms_seqs_of_names last, after kallsyms_relative_base; or
 *                           kallsyms_addresses, one pointer per symbol, before kallsyms_num_syms
 *                           (CONFIG_KALLSYMS_BASE_RELATIVE=n)
 *
 * With CONFIG_KALLSYMS_ABSOLUTE_PERCPU (x86_64 SMP) an offset >= 0 is an absolute address (a
 * per-CPU variable's offset) and a negative one means relative_base - 1 - offset.
 *
 * The finder anchors on the token table: every kernel's names use the ten digits, so tokens
 * 0x30..0x39 are "0" ... "9", consecutive; the strings that follow fix where the table ends and
 * kallsyms_token_index (which must index exactly these strings) begins. kallsyms_markers ends
 * where kallsyms_seqs_of_names (if any) begins, which ends at the token table; a candidate
 * kallsyms_num_syms before it must agree with the markers' count and first entries, then every
 * entry is decoded and every marker checked. Addresses must come out sorted.
 */

const char *const ksyms_addrs_names[] = { "?", "absolute", "relative", "relative+percpu" };

struct blob {
	const uint8_t *b; /* the bytes */
	size_t len;       /* how many */
	uint64_t addr;    /* the address of b[0] */
};

static uint64_t align8(uint64_t a)
{
	return (a + 7) & ~7ull;
}

/* The n bytes at address a, or NULL if they are not all in the blob. */
static const uint8_t *at(const struct blob *bl, uint64_t a, uint64_t n)
{
	if (a < bl->addr || n > bl->len || a - bl->addr > bl->len - n) return NULL;
	return bl->b + (a - bl->addr);
}

static const uint8_t anchor[20] = { '0', 0, '1', 0, '2', 0, '3', 0, '4', 0, '5', 0, '6', 0, '7', 0, '8', 0, '9', 0 };

long ksyms_anchor(const uint8_t *buf, size_t len)
{
	const uint8_t *p = len >= sizeof anchor ? memmem(buf, len, anchor, sizeof anchor) : NULL;
	return p ? (long)(p - buf) : -1;
}

struct tokens {
	uint64_t tt, ti;          /* addresses of kallsyms_token_table, kallsyms_token_index */
	const char *tok[256];     /* each token */
	uint8_t toklen[256];      /* its length */
};

/* The token table whose "0" token sits at blob offset p: 0 and *t filled, or -1. */
static int tokens_at(const struct blob *bl, size_t p, struct tokens *t)
{
	size_t q = p + sizeof anchor;
	for (int i = 0x3a; i < 256; i++) { /* the tokens after "9" fix where the table ends */
		size_t l = 0;
		while (q + l < bl->len && bl->b[q + l]) l++;
		if (q + l >= bl->len || l > 255) return -1;
		q += l + 1;
	}
	uint64_t end = bl->addr + q;
	t->ti = align8(end);
	const uint8_t *ti = at(bl, t->ti, 512);
	if (!ti || le16(ti) != 0) return -1;
	uint64_t zero = le16(ti + 2 * 0x30);
	if (zero > p) return -1;
	t->tt = bl->addr + p - zero;
	if (t->tt & 7) return -1;
	for (int i = 0; i < 256; i++) {
		uint64_t o = le16(ti + 2 * i), next = i < 255 ? le16(ti + 2 * i + 2) : end - t->tt;
		const uint8_t *s = at(bl, t->tt + o, next > o ? next - o : 1);
		if (!s || next <= o || next - o > 256) return -1;
		size_t l = next - o - 1;
		if (s[l] || memchr(s, 0, l)) return -1;
		for (size_t c = 0; c < l; c++)
			if (s[c] < 0x20 || s[c] > 0x7e) return -1;
		if (l == 1 && s[0] != i) return -1; /* a byte used in names stands for itself */
		t->tok[i] = (const char *)s;
		t->toklen[i] = (uint8_t)l;
	}
	return 0;
}

/* Where kallsyms_markers must start for n symbols before a seqs table of seq_bytes entries. */
static uint64_t markers_start(const struct tokens *t, uint64_t n, int seq_bytes)
{
	uint64_t m = (n + 255) / 256;
	return t->tt - align8(n * (uint64_t)seq_bytes) - align8(4 * m);
}

/* Cheap test of a kallsyms_names candidate at q: num_syms before it, markers where they must be. */
static int names_plausible(const struct blob *bl, const struct tokens *t, uint64_t q, int seq_bytes, uint64_t *n)
{
	const uint8_t *h = at(bl, q - 8, 9);
	if (!h || le32(h + 4) != 0) return 0;
	uint64_t num = le32(h), m = (num + 255) / 256;
	if (num < KSYMS_MIN_SYMS || num > KSYMS_MAX_SYMS) return 0;
	uint64_t ms = markers_start(t, num, seq_bytes);
	const uint8_t *mk = ms > q ? at(bl, ms, 4 * m) : NULL;
	if (!mk || le32(mk) != 0) return 0;
	for (uint64_t i = 1; i < m; i++) /* each block of 256 entries takes at least 512 bytes */
		if (le32(mk + 4 * i) < le32(mk + 4 * (i - 1)) + 512) return 0;
	if (le32(mk + 4 * (m - 1)) >= ms - q) return 0;
	*n = num;
	return 1;
}

static int pool_add(struct kallsyms *k, const char *s, size_t l, size_t *cap)
{
	if (k->poollen + l + 1 > *cap) {
		size_t nc = *cap ? *cap * 2 : 1 << 20;
		while (nc < k->poollen + l + 1) nc *= 2;
		char *np = realloc(k->pool, nc);
		if (!np) return -1;
		k->pool = np;
		*cap = nc;
	}
	memcpy(k->pool + k->poollen, s, l);
	k->pool[k->poollen + l] = 0;
	k->poollen += l + 1;
	return 0;
}

static int type_ok(int c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '?';
}

/* Decode every entry of kallsyms_names at q (n symbols, markers at ms): 0, or -1 (k->errstr set
 * only for out of memory; otherwise this candidate is simply not the table). */
static int decode_names(struct kallsyms *k, const struct blob *bl, const struct tokens *t, uint64_t q, uint64_t n,
			uint64_t ms)
{
	const uint8_t *names = at(bl, q, ms - q), *mk = at(bl, ms, 4 * ((n + 255) / 256));
	uint64_t len = ms - q, off = 0;
	size_t cap = 0;
	char buf[2 * KSYMS_NAME_MAX + 256];
	if (!names || !mk) return -1;
	k->syms = malloc(n * sizeof *k->syms);
	if (!k->syms) goto oom;
	for (uint64_t i = 0; i < n; i++) {
		if (!(i & 255) && le32(mk + 4 * (i >> 8)) != off) return -1;
		if (off >= len) return -1;
		uint64_t l = names[off++];
		if (l & 0x80) { /* ULEB128, two bytes at most */
			if (off >= len || names[off] & 0x80) return -1;
			l = (l & 0x7f) | (uint64_t)names[off++] << 7;
		}
		if (!l || l > len - off) return -1;
		size_t bl2 = 0;
		for (uint64_t j = 0; j < l; j++) {
			uint8_t c = names[off + j];
			if (!t->toklen[c] || bl2 + t->toklen[c] > KSYMS_NAME_MAX + 1) return -1; /* names use no empty token */
			memcpy(buf + bl2, t->tok[c], t->toklen[c]);
			bl2 += t->toklen[c];
		}
		off += l;
		if (bl2 < 2 || !type_ok(buf[0])) return -1;
		for (size_t c = 1; c < bl2; c++)
			if (buf[c] <= 0x20 || buf[c] > 0x7e) return -1;
		k->syms[i].type = buf[0];
		k->syms[i].name = (uint32_t)k->poollen;
		if (k->poollen + bl2 > UINT32_MAX || pool_add(k, buf + 1, bl2 - 1, &cap) < 0) goto oom;
	}
	if (align8(q + off) != ms) return -1;
	return 0;
oom:
	ERR_SET(k, ERR_SYS, "out of memory decoding kallsyms");
	return -1;
}

/* Symbol addresses from kallsyms_offsets at o (relative_base after it) or kallsyms_addresses at
 * o: 0 if they come out sorted, -1 if not (or not in the blob). */
static int decode_addrs(struct kallsyms *k, const struct blob *bl, uint64_t o, int absolute)
{
	uint64_t n = k->n, prev = 0;
	if (absolute) {
		const uint8_t *a = at(bl, o, 8 * n);
		if (!a) return -1;
		for (uint64_t i = 0; i < n; i++) {
			uint64_t v = le64(a + 8 * i);
			if (v < prev) return -1;
			k->syms[i].addr = prev = v;
		}
		k->addrs = KSYMS_ABSOLUTE;
		return 0;
	}
	const uint8_t *a = at(bl, o, 4 * n), *b = at(bl, o + align8(4 * n), 8);
	if (!a || !b) return -1;
	uint64_t base = le64(b);
	int percpu = 0;
	for (uint64_t i = 0; i < n; i++) percpu |= (int32_t)le32(a + 4 * i) < 0;
	for (uint64_t i = 0; i < n; i++) {
		uint32_t v = (uint32_t)le32(a + 4 * i);
		uint64_t addr = !percpu ? base + v : (int32_t)v >= 0 ? v : base - 1 - (uint64_t)(int64_t)(int32_t)v;
		if (i && addr < prev) return -1;
		k->syms[i].addr = prev = addr;
	}
	k->addrs = percpu ? KSYMS_RELATIVE_PERCPU : KSYMS_RELATIVE;
	k->base = base;
	k->at[KT_BASE] = o + align8(4 * n);
	return 0;
}

/* The name order kallsyms_seqs_of_names must give: a permutation, sorted by name (or, for a
 * clang LTO build, by name up to its first '.'). */
static int strcmp_dot(const char *a, const char *b, int dot)
{
	if (!dot) return strcmp(a, b);
	size_t la = strcspn(a, "."), lb = strcspn(b, ".");
	int c = memcmp(a, b, la < lb ? la : lb);
	return c ? c : la < lb ? -1 : la > lb;
}

static int check_seqs(const struct kallsyms *k, const struct blob *bl, uint64_t s)
{
	uint64_t n = k->n;
	const uint8_t *p = at(bl, s, n * (uint64_t)k->seq_bytes);
	uint8_t *seen = p ? calloc(n, 1) : NULL;
	int ok = seen != NULL;
	uint32_t prev = 0;
	for (int dot = 0; dot < 2 && seen; dot++) {
		memset(seen, 0, n);
		ok = 1;
		for (uint64_t i = 0; i < n && ok; i++) {
			const uint8_t *e = p + i * (uint64_t)k->seq_bytes;
			uint32_t v = k->seq_bytes == 3 ? (uint32_t)e[0] << 16 | (uint32_t)e[1] << 8 | e[2] : (uint32_t)le32(e);
			if (v >= n || seen[v]) ok = 0;
			else if (i && strcmp_dot(ksyms_name(k, prev), ksyms_name(k, v), dot) > 0) ok = 0;
			if (v < n) seen[v] = 1;
			prev = v;
		}
		if (ok) break;
	}
	free(seen);
	return ok ? 0 : -1;
}

static void reset(struct kallsyms *k)
{
	free(k->syms);
	free(k->pool);
	k->syms = NULL;
	k->pool = NULL;
	k->n = k->poollen = 0;
}

/* Everything else from the token table t: 1 found, 0 not here, -1 out of memory. *named: how far
 * the best candidate got (1 its names decoded, 2 its seqs_of_names were in order too). */
static int from_tokens(struct kallsyms *k, const struct blob *bl, const struct tokens *t, int *named)
{
	static const int seqs[] = { 0, 3, 4 };
	if (t->tt < bl->addr + 16) return 0;
	for (uint64_t q = (t->tt - 8) & ~7ull; q >= bl->addr + 8; q -= 8) {
		for (int si = 0; si < 3; si++) {
			uint64_t n;
			if (!names_plausible(bl, t, q, seqs[si], &n)) continue;
			uint64_t ms = markers_start(t, n, seqs[si]);
			reset(k);
			k->n = n;
			if (decode_names(k, bl, t, q, n, ms) < 0) {
				if (k->err) return -1;
				continue;
			}
			*named = 1;
			k->seq_bytes = seqs[si];
			k->at[KT_NUM_SYMS] = q - 8;
			k->at[KT_NAMES] = q;
			k->at[KT_MARKERS] = ms;
			k->at[KT_SEQS] = seqs[si] ? ms + align8(4 * ((n + 255) / 256)) : 0;
			k->at[KT_TOKEN_TABLE] = t->tt;
			k->at[KT_TOKEN_INDEX] = t->ti;
			if (seqs[si] && check_seqs(k, bl, k->at[KT_SEQS]) < 0) continue;
			*named = 2;
			/* offsets + relative_base before num_syms (to 6.x), after the token index (later),
			 * or absolute addresses before num_syms */
			uint64_t before = q - 16 - align8(4 * n), after = t->ti + 512;
			if (q >= 16 + align8(4 * n) && decode_addrs(k, bl, before, 0) == 0) {
				k->at[KT_ADDRS] = before;
				k->end = t->ti + 512;
			} else if (decode_addrs(k, bl, after, 0) == 0) {
				k->at[KT_ADDRS] = after;
				k->end = k->at[KT_BASE] + 8;
				/* 6.x+ (this order): kallsyms_seqs_of_names last, checked when it is there */
				k->seq_bytes = seqs[si] ? seqs[si] : 3;
				if (!seqs[si] && check_seqs(k, bl, k->end) == 0) {
					k->at[KT_SEQS] = k->end;
					k->end += 3 * n;
				} else if (!seqs[si]) {
					k->seq_bytes = 0;
				}
			} else if (q >= 8 + 8 * n && decode_addrs(k, bl, q - 8 - 8 * n, 1) == 0) {
				k->at[KT_ADDRS] = q - 8 - 8 * n;
				k->end = t->ti + 512;
			} else {
				continue;
			}
			return 1;
		}
		if (q < 8) break;
	}
	return 0;
}

int ksyms_find(struct kallsyms *k, const uint8_t *buf, size_t len, uint64_t addr)
{
	memset(k, 0, sizeof *k);
	struct blob bl = { buf, len, addr };
	int tokens = 0, named = 0;
	if (addr + len < addr) {
		ERR_SET(k, ERR_FORMAT, "kallsyms: the data wraps around the address space");
		return -1;
	}
	for (size_t p = 0; p + sizeof anchor <= len;) {
		long a = ksyms_anchor(buf + p, len - p);
		if (a < 0) break;
		struct tokens t;
		size_t hit = p + (size_t)a;
		p = hit + 2;
		if (tokens_at(&bl, hit, &t) < 0) continue;
		tokens++;
		int got = 0, rc = from_tokens(k, &bl, &t, &got);
		if (got > named) named = got;
		if (rc < 0) break;
		if (rc == 1) return 0;
	}
	reset(k);
	if (!k->err && !tokens)
		ERR_SET(k, ERR_FORMAT, "no kallsyms tables (no kallsyms_token_table with its index)");
	else if (!k->err && !named)
		ERR_SET(k, ERR_FORMAT, "kallsyms tables of an unknown layout or inconsistent (a token table, but no "
			"kallsyms_num_syms/names/markers before it that agree with it)");
	else if (!k->err && named == 1)
		ERR_SET(k, ERR_FORMAT, "kallsyms tables inconsistent (the names decode, but kallsyms_seqs_of_names does "
			"not put them in order)");
	else if (!k->err)
		ERR_SET(k, ERR_FORMAT, "kallsyms tables of an unknown layout or inconsistent (the names decode, but no "
			"sorted kallsyms_offsets or kallsyms_addresses)");
	return -1;
}

void ksyms_free(struct kallsyms *k)
{
	reset(k);
	memset(k, 0, sizeof *k);
}
