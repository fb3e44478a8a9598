/* SPDX-License-Identifier: MIT */
/* acpi.c: finds the RSDP, walks the RSDT/XSDT, reads the MADT and the FADT. */
#include "acpi.h"
#include "apic.h"
#include "boot.h"
#include "cpu.h"
#include "console.h"
#include "layout.h"
#include "lib.h"

struct rsdp {
	char sig[8];			/* "RSD PTR " */
	uint8_t checksum;
	char oem[6];
	uint8_t revision;		/* 0 = ACPI 1.0 (RSDT only), 2+ = XSDT present */
	uint32_t rsdt;
	uint32_t length;
	uint64_t xsdt;
	uint8_t xchecksum, rsv[3];
} __attribute__((packed));

struct sdt {
	char sig[4];
	uint32_t length;
	uint8_t revision, checksum;
	char oem[6], oem_table[8];
	uint32_t oem_rev, creator, creator_rev;
} __attribute__((packed));

#define MADT_LAPIC 0
#define MADT_IOAPIC 1
#define MADT_ISO 2
#define MADT_LAPIC_ENABLED 1
#define FADT_PM1A_CNT 64		/* offset of PM1a_CNT_BLK in the FADT */

static struct { uint8_t used, polarity_low, trigger_level; uint32_t gsi; } iso[16];
static uint16_t pm1a_cnt;

static int checksum_ok(const void *p, uint32_t n)
{
	uint8_t s = 0;
	for (uint32_t i = 0; i < n; i++)
		s += ((const uint8_t *)p)[i];
	return s == 0;
}

static const struct rsdp *rsdp_scan(uint64_t pa, uint64_t len)
{
	for (uint64_t a = pa; a + 20 <= pa + len; a += 16) {
		const struct rsdp *r = P2V(a);
		if (memcmp(r->sig, "RSD PTR ", 8) == 0 && checksum_ok(r, 20))
			return r;
	}
	return 0;
}

static const struct rsdp *rsdp_find(void)
{
	if (boot_info.rsdp_paddr)
		return P2V(boot_info.rsdp_paddr);
	/* The standard places: the first KiB of the EBDA, then the BIOS area 0xE0000-0xFFFFF. */
	uint64_t ebda = (uint64_t)(*(volatile uint16_t *)P2V(0x40e)) << 4;
	const struct rsdp *r = ebda ? rsdp_scan(ebda, 1024) : 0;
	return r ? r : rsdp_scan(0xe0000, 0x20000);
}

static void madt_parse(const struct sdt *madt)
{
	const uint8_t *p = (const uint8_t *)madt + sizeof(*madt) + 8;	/* + LAPIC addr, flags */
	const uint8_t *end = (const uint8_t *)madt + madt->length;
	int n = 0;
	while (p + 2 <= end && p[1] >= 2) {
		switch (p[0]) {
		case MADT_LAPIC:
			if ((p[4] & MADT_LAPIC_ENABLED) && n < MAX_CPUS)
				cpus[n++].apic_id = p[3];
			break;
		case MADT_IOAPIC:
			if (!ioapic_base_pa)
				ioapic_base_pa = *(const uint32_t *)(p + 4);
			break;
		case MADT_ISO: {
			uint8_t irq = p[3];
			uint16_t flags = *(const uint16_t *)(p + 8);
			if (irq < 16) {
				iso[irq].used = 1;
				iso[irq].gsi = *(const uint32_t *)(p + 4);
				iso[irq].polarity_low = (flags & 3) == 3;
				iso[irq].trigger_level = ((flags >> 2) & 3) == 3;
			}
			break;
		}
		}
		p += p[1];
	}
	if (n)
		ncpu = n;
}

void acpi_init(void)
{
	const struct rsdp *r = rsdp_find();
	if (!r) {
		kprintf("acpi: no RSDP found; running on one CPU without an IOAPIC\n");
		cpus[0].apic_id = lapic_id();
		return;
	}
	int wide = r->revision >= 2 && r->xsdt;
	const struct sdt *root = P2V(wide ? r->xsdt : r->rsdt);
	int entries = (int)((root->length - sizeof(*root)) / (wide ? 8 : 4));
	const uint8_t *ptrs = (const uint8_t *)root + sizeof(*root);
	for (int i = 0; i < entries; i++) {
		uint64_t pa = wide ? *(const uint64_t *)(ptrs + 8 * i) : *(const uint32_t *)(ptrs + 4 * i);
		const struct sdt *t = P2V(pa);
		if (memcmp(t->sig, "APIC", 4) == 0)
			madt_parse(t);
		else if (memcmp(t->sig, "FACP", 4) == 0 && t->length >= FADT_PM1A_CNT + 4)
			pm1a_cnt = (uint16_t)*(const uint32_t *)((const uint8_t *)t + FADT_PM1A_CNT);
	}
}

uint32_t acpi_isa_irq_gsi(uint8_t irq, int *level_low)
{
	*level_low = 0;
	if (irq < 16 && iso[irq].used) {
		*level_low = iso[irq].polarity_low && iso[irq].trigger_level;
		return iso[irq].gsi;
	}
	return irq;
}

uint16_t acpi_pm1a_cnt(void)
{
	return pm1a_cnt;
}
