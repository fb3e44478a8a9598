/* SPDX-License-Identifier: MIT */
/* fuzz_arch.c: libFuzzer harness -- target.xml text to a register layout (arch_layout_xml), then
 * every register read the sampler makes on a `g` reply of arbitrary length. */
#include "../sampler/arch.h"
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct layout l;
	static uint8_t g[8192];
	char *xml = malloc(size + 1);
	if (!xml) return 0;
	memcpy(xml, data, size);
	xml[size] = 0;
	int rc = arch_layout_xml(&l, xml);
	free(xml);
	if (rc < 0) return 0;
	if (l.nregs < 0 || l.nregs > ARCH_MAX_REGS || l.gsize < 0 || l.need > l.gsize || !l.pc || !l.sp || !l.fp)
		abort();
	for (int i = 0; i < l.nregs; i++)
		if (l.regs[i].off < 0 || l.regs[i].size <= 0 || l.regs[i].off + l.regs[i].size > l.gsize) abort();
	/* A reply of every interesting length: none, short of what is needed, exact, whole. */
	int lens[4] = { 0, l.need > 0 ? l.need - 1 : 0, l.need, l.gsize < (int)sizeof g ? l.gsize : (int)sizeof g };
	memset(g, 0xa5, sizeof g);
	for (int k = 0; k < 4; k++) {
		struct uw_regs r;
		uint8_t *copy = malloc((size_t)lens[k] + 1); /* exact size: ASan sees reads past the reply */
		if (!copy) return 0;
		memcpy(copy, g, (size_t)lens[k]);
		arch_reg(l.pc, copy, lens[k]);
		arch_reg(l.sp, copy, lens[k]);
		arch_dwarf_regs(&l, copy, lens[k], &r);
		arch_is_user(&l, copy, lens[k]);
		arch_irqs_off(&l, copy, lens[k]);
		free(copy);
	}
	return 0;
}
