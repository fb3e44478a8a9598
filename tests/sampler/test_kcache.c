/* SPDX-License-Identifier: MIT */
/* test_kcache.c: the kernel cache file -- a round trip at one KASLR offset and back at another, and
 * damaged files (truncated, sizes that do not add up, a name outside the pool) refused. */
#include "check.h"
#include "../../sampler/kcache.h"
#include "../../sampler/err.h"
#include <stdlib.h>

#define STEXT 0xffffffff91000000ull

static void make(struct kcache *c, char *pool, struct ksym *syms, uint8_t *ips, uint8_t *btf)
{
	memset(c, 0, sizeof *c);
	size_t o = 0;
	for (int i = 0; i < 20; i++) {
		int percpu = i < 2;
		syms[i].addr = percpu ? 0x1000u * (unsigned)i : STEXT + 0x100u * (unsigned)i;
		syms[i].type = percpu ? 'A' : 'T';
		syms[i].name = (uint32_t)o;
		o += (size_t)sprintf(pool + o, "sym_%d", i) + 1;
	}
	c->k.syms = syms;
	c->k.n = 20;
	c->k.pool = pool;
	c->k.poollen = o;
	c->stext_mod = STEXT & ((2u << 20) - 1);
	c->etext_rel = 0x2000;
	c->banner = (const uint8_t *)"Linux version 6.1.0-57-amd64";
	c->banner_len = 28;
	c->banner_rel = 0x1161900;
	c->tokens = (const uint8_t *)"0\0" "1\0" "2";
	c->tokens_len = 5;
	c->tokens_rel = 0x132ddd8;
	for (int i = 0; i < 64; i++) ips[i] = (uint8_t)i, btf[i] = (uint8_t)(255 - i);
	c->ips = ips, c->iplen = 64, c->ip_rel = 0x1c5f474;
	c->ents = ips, c->elen = 48;
	c->btf = btf, c->btflen = 64;
}

void test_kcache(void)
{
	static char pool[1024];
	struct ksym syms[20];
	uint8_t ips[64], btf[64], *buf;
	size_t len;
	struct kcache c, d;
	make(&c, pool, syms, ips, btf);
	CHECK(kcache_encode(&c, STEXT, &buf, &len) == 0);
	CHECK(kcache_decode(&d, buf, len) == 0);
	kcache_relocate(&d, STEXT + 0x4000000); /* another boot, another slide */
	CHECK(d.k.n == 20 && d.etext_rel == 0x2000 && d.stext_mod == c.stext_mod);
	CHECK(d.k.syms[0].addr == 0 && d.k.syms[1].addr == 0x1000);             /* per-CPU: not moved */
	CHECK(d.k.syms[5].addr == STEXT + 0x4000000 + 0x500);                  /* text: moved */
	CHECK_STR(ksyms_name(&d.k, 7), "sym_7");
	CHECK(d.k.syms[7].type == 'T');
	CHECK(d.banner_len == 28 && !memcmp(d.banner, c.banner, 28) && d.banner_rel == 0x1161900);
	CHECK(d.iplen == 64 && !memcmp(d.ips, ips, 64) && d.elen == 48 && d.hlen == 0 && !d.hdr);
	CHECK(d.btflen == 64 && !memcmp(d.btf, btf, 64));
	kcache_free(&d);
	/* truncated anywhere: refused */
	int refused = 0;
	for (size_t cut = 0; cut < len; cut += 7) refused += kcache_decode(&d, buf, cut) == -1;
	CHECK(refused == (int)((len + 6) / 7));
	/* one byte more: sizes no longer add up */
	uint8_t *big = malloc(len + 1);
	memcpy(big, buf, len);
	big[len] = 0;
	CHECK(kcache_decode(&d, big, len + 1) == -1 && strstr(d.errstr, "damaged"));
	/* a name offset outside the pool */
	memcpy(big, buf, len);
	size_t rec = 8 + 15 * 8 + 28 + 5; /* the first symbol record */
	big[rec + 13] = 0x7f;
	CHECK(kcache_decode(&d, big, len) == -1);
	/* another magic (a future version) */
	memcpy(big, buf, len);
	big[7] = '2';
	CHECK(kcache_decode(&d, big, len) == -1 && strstr(d.errstr, "version 1"));
	free(big);
	free(buf);
}
