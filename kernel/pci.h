/* SPDX-License-Identifier: MIT */
/* pci.h: PCI configuration space through the legacy 0xCF8/0xCFC ports, and a bus-0 scan. */
#ifndef PCI_H
#define PCI_H
#include <stdint.h>

struct pci_dev {
	uint8_t bus, slot, func;
	uint16_t vendor, device;
	uint8_t irq_line;		/* the IRQ the firmware routed INTx to (config 0x3C) */
	uint32_t bar[6];		/* raw BAR values */
};

uint32_t pci_read32(const struct pci_dev *d, uint8_t off);
void pci_write16(const struct pci_dev *d, uint8_t off, uint16_t v);
int pci_find(uint16_t vendor, uint16_t device, struct pci_dev *out);	/* 1 if found */
void pci_enable(const struct pci_dev *d);	/* I/O and memory decoding, bus mastering */
#endif
