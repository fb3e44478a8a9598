/* SPDX-License-Identifier: MIT */
/* ksdump.c: print the kallsyms tables of a kernel image (a bzImage's payload, an ELF's .rodata, or
 * any blob at a given address) as /proc/kallsyms prints them -- the tests compare it with a dump. */
#include "../../../sampler/files.h"
#include "../../../sampler/kallsyms.h"
#include "../../../sampler/vmlinuz.h"
#include <gelf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ksdump FILE [SLIDE [BLOB-ADDR]]: SLIDE (hex) is added to every address; a file that is neither a
 * bzImage nor an ELF is searched whole, as if it sat at BLOB-ADDR (hex, default 0). */
int main(int argc, char **argv)
{
	uint8_t *buf, *elf = NULL;
	size_t len, elflen = 0;
	char why[160];
	if (argc < 2) {
		fprintf(stderr, "usage: ksdump FILE [SLIDE [BLOB-ADDR]]\n");
		return 2;
	}
	uint64_t slide = argc > 2 ? strtoull(argv[2], NULL, 16) : 0, addr = argc > 3 ? strtoull(argv[3], NULL, 16) : 0;
	if (file_read(argv[1], FILE_MAX_IMAGE, &buf, &len, why, sizeof why) < 0) {
		fprintf(stderr, "ksdump: %s\n", why);
		return 1;
	}
	if (vmlinuz_is_bzimage(buf, len)) {
		struct vmlinuz z = { 0 };
		if (vmlinuz_extract(&z, buf, len, &elf, &elflen) < 0) {
			fprintf(stderr, "ksdump: %s\n", z.errstr);
			return 1;
		}
		free(buf);
		buf = elf;
		len = elflen;
	}
	const uint8_t *blob = buf;
	size_t blen = len;
	if (len >= 4 && !memcmp(buf, ELFMAG, SELFMAG)) {
		elf_version(EV_CURRENT);
		Elf *e = elf_memory((char *)buf, len);
		Elf_Scn *s = NULL;
		size_t shstr;
		blen = 0;
		if (e && !elf_getshdrstrndx(e, &shstr))
			while ((s = elf_nextscn(e, s))) {
				GElf_Shdr sh;
				const char *n;
				if (gelf_getshdr(s, &sh) && (n = elf_strptr(e, shstr, sh.sh_name)) && !strcmp(n, ".rodata") &&
				    sh.sh_offset + sh.sh_size <= len) {
					blob = buf + sh.sh_offset;
					blen = sh.sh_size;
					addr = sh.sh_addr;
				}
			}
		if (!blen) {
			fprintf(stderr, "ksdump: %s has no .rodata\n", argv[1]);
			return 1;
		}
	}
	struct kallsyms k;
	if (ksyms_find(&k, blob, blen, addr) < 0) {
		fprintf(stderr, "ksdump: %s\n", k.errstr);
		return 1;
	}
	fprintf(stderr, "ksdump: %zu symbols, %s, seqs_of_names %d bytes, base 0x%llx, names at 0x%llx, tokens at 0x%llx, "
		"addresses at 0x%llx\n", k.n, ksyms_addrs_names[k.addrs], k.seq_bytes, (unsigned long long)k.base,
		(unsigned long long)k.at[KT_NAMES], (unsigned long long)k.at[KT_TOKEN_TABLE],
		(unsigned long long)k.at[KT_ADDRS]);
	for (size_t i = 0; i < k.n; i++) {
		uint64_t a = k.syms[i].addr;
		int percpu = k.addrs == KSYMS_RELATIVE_PERCPU && a < k.base && a >> 63 == 0;
		printf("%016llx %c %s\n", (unsigned long long)(percpu ? a : a + slide), k.syms[i].type, ksyms_name(&k, i));
	}
	ksyms_free(&k);
	free(buf);
	return 0;
}
