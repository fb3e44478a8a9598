/* SPDX-License-Identifier: MIT */
/* apic.h: local APIC (xAPIC MMIO), its timer calibrated against the PIT, the IOAPIC. */
#ifndef APIC_H
#define APIC_H
#include <stdint.h>

#define TICK_HZ 100

void lapic_init(void);			/* enable this CPU's LAPIC (spurious vector, TPR 0) */
uint32_t lapic_id(void);
void lapic_eoi(void);
void lapic_send_init(uint32_t apic_id);
void lapic_send_sipi(uint32_t apic_id, uint32_t page);
void lapic_nmi_others(void);		/* NMI to every CPU but this one */
void timer_calibrate(void);		/* BSP: LAPIC timer and TSC rates, median of rounds */
void timer_start(void);			/* this CPU: periodic TICK_HZ interrupt */
uint64_t tsc_hz(void);
uint64_t uptime_ms(void);		/* from the TSC, since timer_calibrate */
void delay_us(uint64_t us);		/* TSC busy-wait */
uint64_t lapic_timer_hz(void);
void ioapic_route(uint32_t gsi, uint8_t vector, uint32_t dest_apic, int level_low);
extern uint64_t ioapic_base_pa;		/* from the MADT; 0 if none */
#endif
