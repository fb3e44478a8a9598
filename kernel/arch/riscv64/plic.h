/* SPDX-License-Identifier: MIT */
/* plic.h: the platform-level interrupt controller: device interrupts to a hart's S-mode context. */
#ifndef PLIC_H
#define PLIC_H
#include <stdint.h>

void plic_hart_init(void);		/* this hart's S-mode context: threshold 0, nothing enabled */
void plic_enable(uint32_t irq);		/* priority 1, enabled for this hart's S-mode context */
uint32_t plic_claim(void);		/* the source being taken (0: none) */
void plic_complete(uint32_t irq);
#endif
