/* SPDX-License-Identifier: MIT */
/* rv.h: inline wrappers for the RISC-V supervisor CSRs and instructions the kernel uses. */
#ifndef RV_H
#define RV_H
#include <stdint.h>

/* Privileged spec 1.12, 4.1.1 sstatus; 4.1.3 sip/sie (bit n = interrupt cause n). */
#define SSTATUS_SIE (1ul << 1)		/* supervisor interrupts enabled */
#define SSTATUS_SPIE (1ul << 5)		/* SIE before the trap (sret restores it) */
#define SSTATUS_SPP (1ul << 8)		/* the trap came from S-mode */
#define IRQ_S_SOFT 1			/* supervisor software interrupt: SBI IPI (stop) */
#define IRQ_S_TIMER 5			/* supervisor timer: SBI set_timer (the tick) */
#define IRQ_S_EXT 9			/* supervisor external: the PLIC (UART) */
#define IRQ_LCOF 13			/* Sscofpmf local counter-overflow interrupt */
#define SCAUSE_INTR (1ul << 63)		/* scause: an interrupt, not an exception */
#define EXC_ECALL_U 8			/* scause: ecall from U-mode */
#define CSR_SCOUNTOVF 0xda0		/* Sscofpmf: overflow bits of the hpmcounters (read-only) */

#define CSR_RW(name)									\
	static inline uint64_t read_##name(void)					\
	{ uint64_t v; __asm__ volatile("csrr %0, " #name : "=r"(v) :: "memory"); return v; } \
	static inline void write_##name(uint64_t v)					\
	{ __asm__ volatile("csrw " #name ", %0" :: "r"(v) : "memory"); }

CSR_RW(sstatus)
CSR_RW(sie)
CSR_RW(sip)
CSR_RW(stvec)
CSR_RW(sscratch)
CSR_RW(sepc)
CSR_RW(scause)
CSR_RW(stval)
CSR_RW(satp)

static inline void set_sie_bits(uint64_t m) { __asm__ volatile("csrs sie, %0" :: "r"(m) : "memory"); }
static inline void clear_sie_bits(uint64_t m) { __asm__ volatile("csrc sie, %0" :: "r"(m) : "memory"); }
static inline void clear_sip_bits(uint64_t m) { __asm__ volatile("csrc sip, %0" :: "r"(m) : "memory"); }

/* The time CSR (rdtime): the platform timer, readable from S-mode on QEMU virt (mcounteren.TM). */
static inline uint64_t rdtime(void) { uint64_t v; __asm__ volatile("rdtime %0" : "=r"(v) :: "memory"); return v; }

static inline void cpu_relax(void) { __asm__ volatile("nop" ::: "memory"); }	/* no Zihintpause here */
__attribute__((noreturn)) static inline void halt_forever(void)
{
	for (;;)
		__asm__ volatile("csrci sstatus, 2; wfi" ::: "memory");
}
static inline uint8_t mmio_read8(uint64_t a) { return *(volatile uint8_t *)a; }
static inline void mmio_write8(uint64_t a, uint8_t v) { *(volatile uint8_t *)a = v; }
static inline uint32_t mmio_read32(uint64_t a) { return *(volatile uint32_t *)a; }
static inline void mmio_write32(uint64_t a, uint32_t v) { *(volatile uint32_t *)a = v; }
#endif
