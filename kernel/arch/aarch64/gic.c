/* SPDX-License-Identifier: MIT */
/* gic.c: GICv3 with affinity routing, one security state (QEMU virt at EL1), group 1 only. */
#include "gic.h"
#include "a64.h"
#include "cpu.h"
#include "layout.h"

#define GICD_CTLR 0x0000
#define GICD_CTLR_RWP (1u << 31)
#define GICD_CTLR_ARE (1u << 4)
#define GICD_CTLR_GRP1 (1u << 1)
#define GICD_CTLR_GRP0 (1u << 0)
#define GICD_TYPER 0x0004
#define GICD_IGROUPR 0x0080
#define GICD_ISENABLER 0x0100
#define GICD_ICENABLER 0x0180
#define GICD_IPRIORITYR 0x0400
#define GICD_IROUTER 0x6000
#define GICR_STRIDE 0x20000		/* RD frame + SGI frame */
#define GICR_TYPER 0x0008
#define GICR_TYPER_LAST (1u << 4)
#define GICR_WAKER 0x0014
#define WAKER_PROCESSOR_SLEEP (1u << 1)
#define WAKER_CHILDREN_ASLEEP (1u << 2)
#define GICR_SGI 0x10000
#define GICR_IGROUPR0 (GICR_SGI + 0x0080)
#define GICR_ISENABLER0 (GICR_SGI + 0x0100)
#define GICR_ICENABLER0 (GICR_SGI + 0x0180)
#define GICR_IPRIORITYR (GICR_SGI + 0x0400)
#define ICC_SRE_SRE 1u
#define SGI1R_IRM (1ull << 40)

static uint64_t rdist[MAX_CPUS];	/* each CPU's redistributor, by cpu id */

static void dist_wait(void)
{
	for (int i = 0; i < 1000000 && (mmio_read32(GICD_BASE + GICD_CTLR) & GICD_CTLR_RWP); i++)
		cpu_relax();
}

void gic_init(void)
{
	uint32_t lines = 32 * ((mmio_read32(GICD_BASE + GICD_TYPER) & 0x1f) + 1);
	mmio_write32(GICD_BASE + GICD_CTLR, 0);
	dist_wait();
	for (uint32_t i = 32; i < lines; i += 32) {
		mmio_write32(GICD_BASE + GICD_ICENABLER + i / 8, 0xffffffff);
		mmio_write32(GICD_BASE + GICD_IGROUPR + i / 8, 0xffffffff);
	}
	dist_wait();
	mmio_write32(GICD_BASE + GICD_CTLR, GICD_CTLR_ARE | GICD_CTLR_GRP1 | GICD_CTLR_GRP0);
	dist_wait();
}

/* The redistributor whose affinity is this CPU's MPIDR. */
static uint64_t find_rdist(uint64_t mpidr)
{
	uint32_t aff = (uint32_t)((mpidr & 0xffffff) | ((mpidr >> 8) & 0xff000000));
	for (uint64_t r = GICR_BASE, n = 0; n < 64; r += GICR_STRIDE, n++) {
		uint64_t typer = mmio_read64(r + GICR_TYPER);
		if ((uint32_t)(typer >> 32) == aff)
			return r;
		if (typer & GICR_TYPER_LAST)
			break;
	}
	return 0;
}

int gic_cpu_init(void)
{
	struct cpu *c = mycpu();
	uint64_t r = find_rdist(c->mpidr);
	if (!r)
		return -1;
	rdist[c->id] = r;
	mmio_write32(r + GICR_WAKER, mmio_read32(r + GICR_WAKER) & ~WAKER_PROCESSOR_SLEEP);
	for (int i = 0; i < 1000000 && (mmio_read32(r + GICR_WAKER) & WAKER_CHILDREN_ASLEEP); i++)
		cpu_relax();
	mmio_write32(r + GICR_ICENABLER0, 0xffffffff);
	mmio_write32(r + GICR_IGROUPR0, 0xffffffff);	/* SGIs and PPIs: group 1 */
	write_icc_sre(read_icc_sre() | ICC_SRE_SRE);
	pmr_set(PMR_MASKED);
	write_icc_bpr1(0);
	write_icc_igrpen1(1);
	return 0;
}

void gic_enable(uint32_t intid, uint8_t prio)
{
	if (intid < 32) {
		uint64_t r = rdist[mycpu()->id];
		*(volatile uint8_t *)(uintptr_t)(r + GICR_IPRIORITYR + intid) = prio;
		mmio_write32(r + GICR_ISENABLER0, 1u << intid);
	} else {
		*(volatile uint8_t *)(uintptr_t)(GICD_BASE + GICD_IPRIORITYR + intid) = prio;
		mmio_write64(GICD_BASE + GICD_IROUTER + 8 * intid, cpus[0].mpidr);
		mmio_write32(GICD_BASE + GICD_ISENABLER + 4 * (intid / 32), 1u << (intid % 32));
	}
}

void gic_disable(uint32_t intid)
{
	if (intid < 32)
		mmio_write32(rdist[mycpu()->id] + GICR_ICENABLER0, 1u << intid);
	else
		mmio_write32(GICD_BASE + GICD_ICENABLER + 4 * (intid / 32), 1u << (intid % 32));
}

uint32_t gic_ack(void)
{
	return (uint32_t)read_icc_iar1();
}

void gic_eoi(uint32_t iar)
{
	write_icc_eoir1(iar);
}

void gic_sgi_others(uint32_t intid)
{
	__asm__ volatile("dsb sy" ::: "memory");
	write_icc_sgi1r(SGI1R_IRM | ((uint64_t)intid << 24));
}
