/* SPDX-License-Identifier: MIT */
/* timer.c (aarch64): the 100 Hz tick on the EL1 virtual timer, uptime and delays from CNTVCT. */
#include "arch.h"
#include "cpu.h"
#include "gic.h"
#include "trap.h"

#define CNTV_CTL_ENABLE 1u

static uint64_t boot_count;
static uint64_t next_due[MAX_CPUS];

void timer_init(void)
{
	boot_count = cycles();
}

/* This CPU: the first tick one period from now, the PPI enabled at the ordinary priority. */
void timer_start(void)
{
	int id = mycpu()->id;
	next_due[id] = cycles() + cycles_hz() / TICK_HZ;
	write_cntv_cval(next_due[id]);
	write_cntv_ctl(CNTV_CTL_ENABLE);
	gic_enable(INTID_VTIMER, PRIO_IRQ);
}

/* From the tick's interrupt: the next deadline one period on (catching up if we fell behind). */
void timer_rearm(void)
{
	int id = mycpu()->id;
	uint64_t period = cycles_hz() / TICK_HZ, now = cycles();
	next_due[id] += period;
	if (next_due[id] <= now)
		next_due[id] = now + period;
	write_cntv_cval(next_due[id]);
}

uint64_t uptime_ms(void)
{
	return (cycles() - boot_count) / (cycles_hz() / 1000);
}

void delay_us(uint64_t us)
{
	uint64_t end = cycles() + us * (cycles_hz() / 1000000);
	while (cycles() < end)
		cpu_relax();
}
