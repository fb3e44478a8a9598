/* SPDX-License-Identifier: MIT */
/* plic.c: the SiFive-compatible PLIC of QEMU virt; each hart has an M-mode and an S-mode context. */
#include "plic.h"
#include "cpu.h"
#include "layout.h"
#include "rv.h"

/* RISC-V PLIC specification 1.0.0, chapter 3 (memory map). */
#define PLIC_PRIORITY(irq) (PLIC_BASE + 4 * (uint64_t)(irq))
#define PLIC_ENABLE(ctx) (PLIC_BASE + 0x2000 + 0x80 * (uint64_t)(ctx))
#define PLIC_THRESHOLD(ctx) (PLIC_BASE + 0x200000 + 0x1000 * (uint64_t)(ctx))
#define PLIC_CLAIM(ctx) (PLIC_THRESHOLD(ctx) + 4)
/* QEMU virt's contexts (its DTB): hart h's M-mode is 2h, its S-mode 2h + 1. */
#define S_CONTEXT(hart) (2 * (hart) + 1)

static uint64_t my_context(void)
{
	return S_CONTEXT(mycpu()->hartid);
}

void plic_hart_init(void)
{
	uint64_t ctx = my_context();
	for (int w = 0; w < 4; w++)		/* sources 0..127: QEMU virt has 96 */
		mmio_write32(PLIC_ENABLE(ctx) + 4 * (uint64_t)w, 0);
	mmio_write32(PLIC_THRESHOLD(ctx), 0);
	set_sie_bits(1ul << IRQ_S_EXT);
}

void plic_enable(uint32_t irq)
{
	uint64_t en = PLIC_ENABLE(my_context()) + 4 * (uint64_t)(irq / 32);
	mmio_write32(PLIC_PRIORITY(irq), 1);
	mmio_write32(en, mmio_read32(en) | (1u << (irq % 32)));
}

uint32_t plic_claim(void)
{
	return mmio_read32(PLIC_CLAIM(my_context()));
}

void plic_complete(uint32_t irq)
{
	mmio_write32(PLIC_CLAIM(my_context()), irq);
}
