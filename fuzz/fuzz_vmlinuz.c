/* SPDX-License-Identifier: MIT */
/* fuzz_vmlinuz.c: libFuzzer harness -- bzImage header and payload decompression (vmlinuz_extract),
 * with the output capped low so a decompression bomb is refused rather than run out of memory. */
#include "../sampler/vmlinuz.h"
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct vmlinuz z;
	uint8_t *elf = NULL;
	size_t len = 0;
	memset(&z, 0, sizeof z);
	z.max_out = (size_t)64 << 20;
	uint8_t *img = malloc(size ? size : 1); /* exact size: ASan sees any read past the image */
	if (!img) return 0;
	memcpy(img, data, size);
	vmlinuz_is_bzimage(img, size);
	if (vmlinuz_extract(&z, img, size, &elf, &len) == 0) {
		if (!elf || len < 4 || len > z.max_out || memcmp(elf, "\177ELF", 4)) abort();
		free(elf);
	} else if (elf || !z.err) {
		abort();
	}
	free(img);
	return 0;
}
