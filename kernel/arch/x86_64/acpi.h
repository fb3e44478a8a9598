/* SPDX-License-Identifier: MIT */
/* acpi.h: just enough ACPI: RSDP -> RSDT/XSDT -> MADT (CPUs, IOAPIC, overrides) and FADT. */
#ifndef ACPI_H
#define ACPI_H
#include <stdint.h>

void acpi_init(void);			/* fills cpus[].apic_id, ncpu, ioapic_base_pa */
uint32_t acpi_isa_irq_gsi(uint8_t irq, int *level_low);	/* applies MADT source overrides */
uint16_t acpi_pm1a_cnt(void);		/* FADT PM1a control port, 0 if unknown */
#endif
