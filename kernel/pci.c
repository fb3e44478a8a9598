/* SPDX-License-Identifier: MIT */
/* pci.c: PCI configuration mechanism #1 (ports 0xCF8/0xCFC) and a scan of every bus/slot. */
#include "pci.h"
#include "x86.h"

#define PCI_ADDR 0xcf8
#define PCI_DATA 0xcfc
#define PCI_ENABLE (1u << 31)
#define PCI_VENDOR 0x00
#define PCI_COMMAND 0x04
#define PCI_HEADER_TYPE 0x0c		/* byte 2 of this dword; bit 7 = multi-function */
#define PCI_BAR0 0x10
#define PCI_INTERRUPT_LINE 0x3c
#define CMD_IO 0x1
#define CMD_MEMORY 0x2
#define CMD_BUS_MASTER 0x4

static uint32_t cfg_addr(uint8_t bus, uint8_t slot, uint8_t func, uint8_t off)
{
	return PCI_ENABLE | (uint32_t)bus << 16 | (uint32_t)slot << 11 | (uint32_t)func << 8 | (off & 0xfc);
}

static uint32_t cfg_read(uint8_t bus, uint8_t slot, uint8_t func, uint8_t off)
{
	outl(PCI_ADDR, cfg_addr(bus, slot, func, off));
	return inl(PCI_DATA);
}

uint32_t pci_read32(const struct pci_dev *d, uint8_t off)
{
	return cfg_read(d->bus, d->slot, d->func, off);
}

void pci_write16(const struct pci_dev *d, uint8_t off, uint16_t v)
{
	outl(PCI_ADDR, cfg_addr(d->bus, d->slot, d->func, off));
	outw(PCI_DATA + (off & 2), v);
}

int pci_find(uint16_t vendor, uint16_t device, struct pci_dev *out)
{
	for (int bus = 0; bus < 256; bus++)
		for (int slot = 0; slot < 32; slot++)
			for (int func = 0; func < 8; func++) {
				uint32_t id = cfg_read(bus, slot, func, PCI_VENDOR);
				if ((id & 0xffff) == 0xffff) {
					if (func == 0)
						break;	/* no device in this slot */
					continue;
				}
				if ((id & 0xffff) == vendor && (id >> 16) == device) {
					out->bus = bus, out->slot = slot, out->func = func;
					out->vendor = vendor, out->device = device;
					for (int i = 0; i < 6; i++)
						out->bar[i] = cfg_read(bus, slot, func, PCI_BAR0 + 4 * i);
					out->irq_line = cfg_read(bus, slot, func, PCI_INTERRUPT_LINE) & 0xff;
					return 1;
				}
				if (func == 0 && !(cfg_read(bus, slot, 0, PCI_HEADER_TYPE) & 0x800000))
					break;	/* single-function device */
			}
	return 0;
}

void pci_enable(const struct pci_dev *d)
{
	uint16_t cmd = pci_read32(d, PCI_COMMAND) & 0xffff;
	pci_write16(d, PCI_COMMAND, cmd | CMD_IO | CMD_MEMORY | CMD_BUS_MASTER);
}
