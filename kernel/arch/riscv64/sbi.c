/* SPDX-License-Identifier: MIT */
/* sbi.c: the ecall into OpenSBI (M-mode firmware) behind every SBI call. */
#include "sbi.h"

/* SBI calling convention (spec 3): a7 extension, a6 function, a0-a5 arguments; a0 error, a1 value. */
struct sbiret sbi_call(unsigned long ext, unsigned long fid, unsigned long a0, unsigned long a1,
		       unsigned long a2, unsigned long a3, unsigned long a4)
{
	register unsigned long r0 __asm__("a0") = a0, r1 __asm__("a1") = a1, r2 __asm__("a2") = a2,
			      r3 __asm__("a3") = a3, r4 __asm__("a4") = a4, r6 __asm__("a6") = fid,
			      r7 __asm__("a7") = ext;
	__asm__ volatile("ecall" : "+r"(r0), "+r"(r1) : "r"(r2), "r"(r3), "r"(r4), "r"(r6), "r"(r7) : "memory");
	return (struct sbiret){ (long)r0, r1 };
}

/* `work sbi`: the hart spends its time in OpenSBI (M-mode), one BASE get_spec_version call after
 * another, polling its killed flag between them -- a task's time in firmware, for gdbsample's
 * [firmware] frame (QEMU's priv 3). Not inlined: its name is the kernel frame under the calls. */
__attribute__((noinline)) void firmware_spin(volatile int *killed)
{
	while (!*killed)
		sbi_call(SBI_EXT_BASE, SBI_BASE_GET_SPEC_VERSION, 0, 0, 0, 0, 0);
}

int sbi_has(unsigned long ext)
{
	struct sbiret r = sbi_call(SBI_EXT_BASE, SBI_BASE_PROBE_EXT, ext, 0, 0, 0, 0);
	return r.error == SBI_SUCCESS && r.value != 0;
}
