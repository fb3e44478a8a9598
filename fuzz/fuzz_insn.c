/* SPDX-License-Identifier: MIT */
/* fuzz_insn.c: libFuzzer harness -- instruction words of an image (insn.c): frame-setup position,
 * idle, call before a return address, at every pc, for aarch64 and x86_64; the static words an
 * aarch64 function loads (never more than asked, each 8-byte aligned or not: any address). */
#include "../sampler/insn.h"
#include <elf.h>
#include <stdlib.h>

#define BASE 0x40080000ull

static const uint8_t *text;
static size_t ntext;

static int byte_at(const void *arg, uint64_t addr)
{
	(void)arg;
	return addr >= BASE && addr - BASE < ntext ? text[addr - BASE] : -1;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	text = data;
	ntext = size;
	for (uint64_t off = 0; off <= size && off < 1024; off++) {
		uint64_t pc = BASE + off, need = 0;
		int adj = -1;
		enum unwind_pc k = insn_pc_kind(EM_AARCH64, byte_at, NULL, BASE, 1, pc, &adj);
		if (adj < 0 || adj > 65536 || (k != PC_AT_ENTRY && adj) || ((pc & 3) && k != PC_BODY)) abort();
		k = insn_pc_kind(EM_AARCH64, byte_at, NULL, 0, 0, pc, &adj);
		if (adj < 0 || adj > 65536 || k == PC_AFTER_PUSH) abort();
		int idle = insn_idle(EM_AARCH64, byte_at, NULL, pc, &need);
		if (idle < -1 || idle > 1 || (idle < 0 && byte_at(NULL, need) >= 0 && byte_at(NULL, need + 3) >= 0)) abort();
		if (insn_after_call(EM_AARCH64, byte_at, NULL, pc) > 1) abort();
		insn_pc_kind(EM_X86_64, byte_at, NULL, BASE, 1, pc, &adj);
		if (insn_idle(EM_X86_64, byte_at, NULL, pc, NULL) > 1) abort();
	}
	uint64_t out[16];
	int n = a64_static_loads(byte_at, NULL, BASE, size, out, 16);
	if (n < 0 || n > 16) abort();
	return 0;
}
