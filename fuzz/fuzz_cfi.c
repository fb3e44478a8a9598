/* SPDX-License-Identifier: MIT */
/* fuzz_cfi.c: libFuzzer harness -- arbitrary bytes as an ELF through libdw's CFI (cfi_open,
 * cfi_rule_at at the pcs the image's FDE-bearing sections span, cfi_step on a small stack). */
#include "../sampler/unwind_cfi.h"
#include <gelf.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static int init;
	static struct cfi_ctx c;
	if (!init) {
		elf_version(EV_CURRENT);
		init = 1;
	}
	char *img = malloc(size ? size : 1); /* exact size: ASan sees any read past the image */
	if (!img) return 0;
	memcpy(img, data, size);
	Elf *e = elf_memory(img, size);
	if (e && cfi_open(&c, e, &uw_arch_x86_64) == 0) {
		uint64_t pcs[40];
		int np = 0;
		Elf_Scn *scn = NULL;
		while ((scn = elf_nextscn(e, scn)) && np < 32) { /* each section's start, middle and end */
			GElf_Shdr sh;
			if (!gelf_getshdr(scn, &sh)) continue;
			pcs[np++] = sh.sh_addr;
			pcs[np++] = sh.sh_addr + sh.sh_size / 2;
			pcs[np++] = sh.sh_addr + sh.sh_size;
		}
		pcs[np++] = 0;
		pcs[np++] = 0x401000;
		for (int i = 0; i < np; i++) cfi_rule_at(&c, pcs[i]);
		/* A few steps over an 256-byte stack of the image's own bytes. */
		static uint8_t stack[256];
		memset(stack, 0, sizeof stack);
		memcpy(stack, data, size < sizeof stack ? size : sizeof stack);
		struct unwinder u = { UM_CFI, &c, cfi_step };
		struct unwind_in in;
		struct unwind_out uo;
		uint64_t frames[16];
		memset(&in, 0, sizeof in);
		in.arch = &uw_arch_x86_64;
		in.pc = np > 1 ? pcs[1] : 0x401000;
		in.regs.r[7] = 0x7000;
		in.regs.r[6] = 0x7040;
		in.regs.valid = 1u << 7 | 1u << 6;
		in.klo = 0;
		in.khi = ~0ull;
		in.span = 32768;
		in.max_frames = 16;
		in.nmethods = 1;
		in.methods[0] = &u;
		in.nchunks = 1;
		in.chunks[0] = (struct unwind_chunk){ 0x7000, sizeof stack, stack };
		unwind_walk(&in, frames, &uo);
		cfi_free(&c);
	}
	if (e) elf_end(e);
	free(img);
	return 0;
}
