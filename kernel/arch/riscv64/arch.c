/* SPDX-License-Identifier: MIT */
/* arch.c (riscv64): the shell's CPU-specific pieces: hart ids, clocks, lscpu, poweroff, unimp. */
#include "arch.h"
#include "cpu.h"
#include "lib.h"
#include "sbi.h"

uint64_t arch_cpu_hwid(const struct cpu *c)
{
	return c->hartid;
}

void arch_clocks_print(struct out *o)
{
	out_printf(o, "clocks:      time %lu kHz (virt timebase), tick on SBI set_timer\n", cycles_hz() / 1000);
}

static unsigned long base_call(unsigned long fid)
{
	return sbi_call(SBI_EXT_BASE, fid, 0, 0, 0, 0, 0).value;
}

/* What the firmware says about itself and the machine (SBI BASE), and which extensions it has. */
void arch_lscpu(struct out *o)
{
	unsigned long spec = base_call(SBI_BASE_GET_SPEC_VERSION), impl = base_call(SBI_BASE_GET_IMPL_ID);
	unsigned long iver = base_call(SBI_BASE_GET_IMPL_VERSION);
	out_printf(o, "vendor:      mvendorid 0x%lx, marchid 0x%lx, mimpid 0x%lx\n", base_call(SBI_BASE_GET_MVENDORID),
		   base_call(SBI_BASE_GET_MARCHID), base_call(SBI_BASE_GET_MIMPID));
	/* SBI spec 4.9: implementation 1 is OpenSBI, whose version is major << 16 | minor. */
	out_printf(o, "firmware:    SBI %lu.%lu, %s %lu.%lu\n", (spec >> 24) & 0x7f, spec & 0xffffff,
		   impl == 1 ? "OpenSBI" : "implementation", iver >> 16, iver & 0xffff);
	out_printf(o, "sbi:         TIME %s, IPI %s, HSM %s, SRST %s, PMU %s\n", sbi_has(SBI_EXT_TIME) ? "yes" : "no",
		   sbi_has(SBI_EXT_IPI) ? "yes" : "no", sbi_has(SBI_EXT_HSM) ? "yes" : "no",
		   sbi_has(SBI_EXT_SRST) ? "yes" : "no", sbi_has(SBI_EXT_PMU) ? "yes" : "no");
}

/* An SBI IPI (a supervisor software interrupt) to every hart but this one. */
void arch_stop_others(void)
{
	uint64_t mask = 0, me = mycpu()->hartid;
	for (int i = 0; i < ncpu; i++)
		if (cpus[i].hartid != me)
			mask |= 1ul << cpus[i].hartid;
	__atomic_thread_fence(__ATOMIC_SEQ_CST);	/* `panicking` before the IPI */
	sbi_call(SBI_EXT_IPI, 0, mask, 0, 0, 0, 0);
}

void arch_poweroff(struct out *o)
{
	sbi_call(SBI_EXT_SRST, 0, SBI_SRST_SHUTDOWN, 0, 0, 0, 0);	/* QEMU exits here (status 0) */
	out_puts(o, "poweroff: SBI system_reset returned; halting all cpus\n");
	arch_stop_others();
	halt_forever();
}

void task_start(void);		/* switch.S */

/* swtch's saved area (switch.S): s1..s11 = 0, s0 = 0, ra = task_start; 16-byte aligned. */
uint64_t arch_task_stack_init(uint8_t *top)
{
	uint64_t *sp = (uint64_t *)((uint64_t)top & ~15ull) - 14;
	for (int i = 0; i < 14; i++)
		sp[i] = 0;
	sp[13] = (uint64_t)task_start;
	return (uint64_t)sp;
}
