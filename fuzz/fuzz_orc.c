/* SPDX-License-Identifier: MIT */
/* fuzz_orc.c: libFuzzer harness -- ORC tables from arbitrary bytes (orc_load), lookups (orc_find)
 * and whole walks (orc_step, then frame pointers) over an arbitrary stack. */
#include "../sampler/unwind_orc.h"
#include <stdlib.h>
#include <string.h>

#define TEXT 0xffffffff81000000ull  /* where the table says the text is */
#define IPADDR 0xffffffff82000000ull /* where .orc_unwind_ip sits */
#define STK 0xffffc90000010000ull    /* where the stack bytes are */

static uint64_t le(const uint8_t *p, int n)
{
	uint64_t v = 0;
	for (int i = n - 1; i >= 0; i--) v = v << 8 | p[i];
	return v;
}

/* Input: u8 entries, u8 flags (1: a .orc_header follows the entries; 2: the ip bytes are deltas,
 * made into a sorted table), ips (4 each), entries (6 each), [20 header bytes], u16 pc offset,
 * u16 sp offset, u16 bp offset, u16 frame cap, then the stack. */
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct orc_table t;
	static const uint8_t v3hdr[20] = { 0xfe, 0x5d, 0x32, 0xbf, 0x58, 0x1b, 0xd6, 0x3b, 0x2c, 0xa9,
					   0xa5, 0xc6, 0x5b, 0xa5, 0xa6, 0x25, 0xea, 0xb3, 0xfe, 0x24 };
	if (size < 2) return 0;
	size_t n = data[0], flags = data[1], off = 2;
	size_t need = off + 10 * n + ((flags & 1) ? 20 : 0) + 8;
	if (size < need) return 0;
	uint8_t *ips = malloc(4 * n + 1), *ents = malloc(6 * n + 1), *hdr = NULL;
	if (!ips || !ents) goto out;
	memcpy(ips, data + off, 4 * n);
	if (flags & 2) { /* deltas: ip[i] = ip[i-1] + (12 bits), stored as s32 from each slot */
		uint64_t ip = TEXT;
		for (size_t i = 0; i < n; i++) {
			ip += le(data + off + 4 * i, 2) & 0xfff;
			uint32_t rel = (uint32_t)(int32_t)(int64_t)(ip - (IPADDR + 4 * i));
			for (int k = 0; k < 4; k++) ips[4 * i + (size_t)k] = (uint8_t)(rel >> (8 * k));
		}
	}
	off += 4 * n;
	memcpy(ents, data + off, 6 * n);
	off += 6 * n;
	if (flags & 1) {
		hdr = malloc(20);
		if (!hdr) goto out;
		memcpy(hdr, (flags & 4) ? v3hdr : data + off, 20); /* 4: the hash of a known layout */
		off += 20;
	}
	if (orc_load(&t, ips, 4 * n, IPADDR, ents, 6 * n, hdr, hdr ? 20 : 0, TEXT, TEXT + 0x100000) == 0) {
		struct orc_entry e;
		for (size_t i = 0; i < t.n && i < 16; i++) {
			orc_find(&t, t.ip[i], &e);
			orc_find(&t, t.ip[i] - 1, &e);
		}
		orc_find(&t, 0, &e);
		orc_find(&t, ~0ull, &e);
		size_t slen = size - off - 8;
		uint8_t *stack = malloc(slen ? slen : 1); /* exact size: ASan sees reads past it */
		if (!stack) goto free_t;
		memcpy(stack, data + off + 8, slen);
		struct fp_ctx fp = { NULL, NULL, 32768, NULL };
		struct unwinder u[2] = { { UM_ORC, &t, orc_step }, { UM_FP, &fp, fp_step } };
		struct unwind_in in;
		struct unwind_out uo;
		uint64_t frames[255];
		memset(&in, 0, sizeof in);
		in.arch = &uw_arch_x86_64;
		in.pc = TEXT + le(data + off, 2);
		in.regs.r[7] = STK + le(data + off + 2, 2);
		in.regs.r[6] = STK + le(data + off + 4, 2);
		for (int r = 0; r < 16; r++)
			if (r != 6 && r != 7) in.regs.r[r] = STK + (uint64_t)r * 64;
		in.regs.valid = 0xffff;
		in.klo = TEXT;
		in.khi = TEXT + 0x100000;
		in.span = 32768;
		in.max_frames = 1 + (int)(le(data + off + 6, 2) % 255);
		in.nmethods = 2;
		in.methods[0] = &u[0];
		in.methods[1] = &u[1];
		in.nchunks = 1;
		in.chunks[0] = (struct unwind_chunk){ STK, (uint32_t)slen, stack };
		unwind_walk(&in, frames, &uo);
		if (uo.n < 0 || uo.n > in.max_frames || uo.stop < 0 || uo.stop >= UW_NSTOPS) abort();
		free(stack);
	free_t:
		orc_free(&t);
	}
out:
	free(ips);
	free(ents);
	free(hdr);
	return 0;
}
