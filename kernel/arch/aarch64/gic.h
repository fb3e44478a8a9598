/* SPDX-License-Identifier: MIT */
/* gic.h: the GICv3 distributor, each CPU's redistributor and its system-register interface. */
#ifndef GIC_H
#define GIC_H
#include <stdint.h>

void gic_init(void);				/* distributor: affinity routing, groups on */
int gic_cpu_init(void);				/* this CPU's redistributor and CPU interface; -1 if none */
void gic_enable(uint32_t intid, uint8_t prio);	/* SPIs route to cpu0; PPIs/SGIs: this CPU */
void gic_disable(uint32_t intid);		/* PPIs/SGIs: this CPU */
uint32_t gic_ack(void);				/* ICC_IAR1_EL1: the id being taken */
void gic_eoi(uint32_t iar);
void gic_sgi_others(uint32_t intid);		/* to every CPU but this one */
#endif
