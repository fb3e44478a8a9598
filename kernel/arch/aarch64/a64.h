/* SPDX-License-Identifier: MIT */
/* a64.h: inline wrappers for the AArch64 system registers and instructions the kernel uses. */
#ifndef A64_H
#define A64_H
#include <stdint.h>

#define DAIF_I (1u << 7)		/* PSTATE.I as DAIF reads it */
#define PSR_I (1u << 7)			/* the same bit in SPSR_EL1 */
#define PSR_MODE_MASK 0xfu		/* M[3:0]: EL and stack (EL1h = 5) */

/* GICv3 priorities (lower is more urgent) and the two priority-mask levels. */
#define PRIO_NMI 0x80			/* PMU overflow, stop SGI: through the "interrupts off" mask */
#define PRIO_IRQ 0xa0			/* timer, UART */
#define PMR_OPEN 0xf0			/* everything */
#define PMR_MASKED 0x90			/* "interrupts off": only PRIO_NMI */

#define SYSREG_RW(name, enc)								\
	static inline uint64_t read_##name(void)					\
	{ uint64_t v; __asm__ volatile("mrs %0, " enc : "=r"(v) :: "memory"); return v; } \
	static inline void write_##name(uint64_t v)					\
	{ __asm__ volatile("msr " enc ", %0; isb" :: "r"(v) : "memory"); }

SYSREG_RW(pmr, "s3_0_c4_c6_0")			/* ICC_PMR_EL1 */
SYSREG_RW(icc_sre, "s3_0_c12_c12_5")		/* ICC_SRE_EL1 */
SYSREG_RW(icc_igrpen1, "s3_0_c12_c12_7")	/* ICC_IGRPEN1_EL1 */
SYSREG_RW(icc_bpr1, "s3_0_c12_c12_3")		/* ICC_BPR1_EL1 */
SYSREG_RW(icc_sgi1r, "s3_0_c12_c11_5")		/* ICC_SGI1R_EL1 */
SYSREG_RW(icc_iar1, "s3_0_c12_c12_0")		/* ICC_IAR1_EL1 */
SYSREG_RW(icc_eoir1, "s3_0_c12_c12_1")		/* ICC_EOIR1_EL1 */
SYSREG_RW(daif, "daif")
SYSREG_RW(mpidr, "mpidr_el1")
SYSREG_RW(midr, "midr_el1")
SYSREG_RW(tpidr_el1, "tpidr_el1")
SYSREG_RW(vbar, "vbar_el1")
SYSREG_RW(esr, "esr_el1")
SYSREG_RW(far, "far_el1")
SYSREG_RW(cntv_ctl, "cntv_ctl_el0")
SYSREG_RW(cntv_cval, "cntv_cval_el0")
SYSREG_RW(id_aa64dfr0, "id_aa64dfr0_el1")
SYSREG_RW(pmcr, "pmcr_el0")
SYSREG_RW(pmccntr, "pmccntr_el0")
SYSREG_RW(pmccfiltr, "pmccfiltr_el0")
SYSREG_RW(pmcntenset, "pmcntenset_el0")
SYSREG_RW(pmcntenclr, "pmcntenclr_el0")
SYSREG_RW(pmintenset, "pmintenset_el1")
SYSREG_RW(pmintenclr, "pmintenclr_el1")
SYSREG_RW(pmovsclr, "pmovsclr_el0")

#define MPIDR_AFF_MASK 0xff00ffffffull	/* Aff3 [39:32], Aff2..Aff0 [23:0] */

/*
 * ICC_PMR_EL1 through a per-CPU copy (struct cpu.pmr, at CPU_PMR from TPIDR_EL1): under TCG every
 * access to a GIC system register takes QEMU's global lock, so the mask is read from memory and
 * written only when it changes (Linux keeps the same copy in pt_regs). Written before the copy:
 * a pseudo-NMI between the two sees the older value, which only ever makes it skip a switch.
 */
#define CPU_PMR 24			/* offsetof(struct cpu, pmr), checked in cpu.c */
static inline uint64_t pmr_get(void)
{
	return *(volatile uint64_t *)(read_tpidr_el1() + CPU_PMR);
}
static inline void pmr_set(uint64_t v)
{
	if (pmr_get() != v) {
		write_pmr(v);
		*(volatile uint64_t *)(read_tpidr_el1() + CPU_PMR) = v;
	}
}

static inline void cpu_relax(void) { __asm__ volatile("yield" ::: "memory"); }
__attribute__((noreturn)) static inline void halt_forever(void)
{
	for (;;)
		__asm__ volatile("msr daifset, #0xf; wfi" ::: "memory");
}
static inline uint32_t mmio_read32(uint64_t a) { return *(volatile uint32_t *)a; }
static inline void mmio_write32(uint64_t a, uint32_t v) { *(volatile uint32_t *)a = v; }
static inline uint64_t mmio_read64(uint64_t a) { return *(volatile uint64_t *)a; }
static inline void mmio_write64(uint64_t a, uint64_t v) { *(volatile uint64_t *)a = v; }
#endif
