/* SPDX-License-Identifier: MIT */
/* kcache.c: what a bare -p read of a kernel from guest memory (names, ORC, BTF), kept in a file
 * under $XDG_CACHE_HOME/gdbsample/ relative to the kernel's _stext. Pure encoding and decoding. */
#include "kcache.h"
#include "bytes.h"
#include "err.h"
#include <stdlib.h>

/*
 * File format (little-endian; a cache of this machine, not an interchange format):
 *   "GSKCACH1"                     magic and version
 *   u64 stext_mod, etext_rel, banner_rel, tokens_rel, ip_rel, e_rel, h_rel
 *   u64 banner_len, tokens_len, nsyms, poollen, iplen, elen, hlen, btflen
 *   banner, tokens                 bytes
 *   nsyms x { u64 addr (relative if reloc), u8 reloc, u8 type, u32 name offset }
 *   pool                           NUL-terminated names
 *   ips, ents, hdr, btf            the tables as read
 */
static const char magic[8] = { 'G', 'S', 'K', 'C', 'A', 'C', 'H', '1' };
#define NFIX 15                  /* u64 fields after the magic */
#define SYMREC 14                /* bytes per symbol record */

int kcache_encode(const struct kcache *c, uint64_t stext, uint8_t **out, size_t *len)
{
	const struct kallsyms *k = &c->k;
	uint64_t f[NFIX] = { c->stext_mod, c->etext_rel, c->banner_rel, c->tokens_rel, c->ip_rel, c->e_rel, c->h_rel, c->banner_len,
			     c->tokens_len, k->n, k->poollen, c->iplen, c->elen, c->hlen, c->btflen };
	size_t n = sizeof magic + 8 * NFIX + c->banner_len + c->tokens_len + SYMREC * k->n + k->poollen + c->iplen +
		   c->elen + c->hlen + c->btflen;
	uint8_t *b = malloc(n), *p = b;
	if (!b) return -1;
	memcpy(p, magic, sizeof magic);
	p += sizeof magic;
	for (int i = 0; i < NFIX; i++, p += 8) put_le64(p, f[i]);
#define BYTES(src, l) do { if (l) memcpy(p, src, l); p += (l); } while (0)
	BYTES(c->banner, c->banner_len);
	BYTES(c->tokens, c->tokens_len);
	for (size_t i = 0; i < k->n; i++, p += SYMREC) {
		int rel = k->syms[i].addr >> 63; /* the kernel's half moves; per-CPU offsets do not */
		put_le64(p, rel ? k->syms[i].addr - stext : k->syms[i].addr);
		p[8] = (uint8_t)rel;
		p[9] = (uint8_t)k->syms[i].type;
		put_le32(p + 10, k->syms[i].name);
	}
	BYTES(k->pool, k->poollen);
	BYTES(c->ips, c->iplen);
	BYTES(c->ents, c->elen);
	BYTES(c->hdr, c->hlen);
	BYTES(c->btf, c->btflen);
#undef BYTES
	*out = b;
	*len = n;
	return 0;
}

int kcache_decode(struct kcache *c, const uint8_t *buf, size_t len)
{
	memset(c, 0, sizeof *c);
	uint64_t f[NFIX];
	if (len < sizeof magic + 8 * NFIX || memcmp(buf, magic, sizeof magic)) {
		ERR_SET(c, ERR_FORMAT, "not a gdbsample kernel cache file (version 1)");
		return -1;
	}
	for (int i = 0; i < NFIX; i++) f[i] = le64(buf + sizeof magic + 8 * i);
	const uint64_t *g = f + 1;
	c->stext_mod = f[0];
	c->etext_rel = g[0], c->banner_rel = g[1], c->tokens_rel = g[2], c->ip_rel = g[3], c->e_rel = g[4];
	c->h_rel = g[5];
	uint64_t nsyms = g[8], poollen = g[9], need = sizeof magic + 8 * NFIX, parts[] = { g[6], g[7], 0, g[9], g[10],
												 g[11], g[12], g[13] };
	if (nsyms < KSYMS_MIN_SYMS || nsyms > KSYMS_MAX_SYMS || !poollen || g[6] > 4096 || g[7] > 65536 ||
	    c->stext_mod >= (2u << 20))
		goto bad;
	parts[2] = SYMREC * nsyms;
	for (size_t i = 0; i < sizeof parts / sizeof *parts; i++) {
		if (parts[i] > len || need > len - parts[i]) goto bad;
		need += parts[i];
	}
	if (need != len) goto bad;
	const uint8_t *p = buf + sizeof magic + 8 * NFIX;
	c->banner = p, c->banner_len = (uint32_t)g[6], p += g[6];
	c->tokens = p, c->tokens_len = (uint32_t)g[7], p += g[7];
	const uint8_t *recs = p;
	p += SYMREC * nsyms;
	const char *pool = (const char *)p;
	p += poollen;
	if (pool[poollen - 1]) goto bad;
	c->ips = p, c->iplen = g[10], p += g[10];
	c->ents = p, c->elen = g[11], p += g[11];
	c->hdr = g[12] ? p : NULL, c->hlen = g[12], p += g[12];
	c->btf = g[13] ? p : NULL, c->btflen = g[13];
	struct kallsyms *k = &c->k;
	k->syms = malloc(nsyms * sizeof *k->syms);
	c->reloc = malloc(nsyms);
	k->pool = malloc(poollen);
	if (!k->syms || !c->reloc || !k->pool) {
		ERR_SET(c, ERR_SYS, "out of memory");
		return -1;
	}
	memcpy(k->pool, pool, poollen);
	k->n = nsyms;
	k->poollen = poollen;
	for (uint64_t i = 0; i < nsyms; i++, recs += SYMREC) {
		uint32_t name = le32(recs + 10);
		if (name >= poollen || recs[8] > 1 || recs[9] <= 0x20 || recs[9] > 0x7e) goto bad;
		k->syms[i] = (struct ksym){ le64(recs), (char)recs[9], name };
		c->reloc[i] = recs[8];
	}
	return 0;
bad:
	kcache_free(c);
	ERR_SET(c, ERR_FORMAT, "a damaged gdbsample kernel cache file (sizes do not add up)");
	return -1;
}

void kcache_relocate(struct kcache *c, uint64_t stext)
{
	for (size_t i = 0; i < c->k.n; i++)
		if (c->reloc[i]) c->k.syms[i].addr += stext;
}

void kcache_free(struct kcache *c)
{
	ksyms_free(&c->k);
	free(c->reloc);
	c->reloc = NULL;
}
