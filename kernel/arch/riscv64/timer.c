/* SPDX-License-Identifier: MIT */
/* timer.c (riscv64): the 100 Hz tick through SBI set_timer, uptime and delays from the time CSR. */
/*
 * SBI TIME set_timer, not Sstc's stimecmp directly: QEMU 7.2 implements Sstc (on by default)
 * and OpenSBI 1.1 reports it at boot, but S-mode may write stimecmp only where M-mode set
 * menvcfg.STCE, which the SBI spec leaves to the firmware; set_timer works under any of them.
 * Each tick is one ecall into OpenSBI, which programs the deadline (stimecmp or mtimecmp).
 */
#include "arch.h"
#include "cpu.h"
#include "sbi.h"
#include "timer.h"

static uint64_t boot_count;
static uint64_t next_due[MAX_CPUS];

static void set_deadline(uint64_t t)
{
	sbi_call(SBI_EXT_TIME, 0, t, 0, 0, 0, 0);	/* also clears a pending STIP */
}

void timer_init(void)
{
	boot_count = cycles();
}

void timer_start(void)
{
	int id = mycpu()->id;
	next_due[id] = cycles() + cycles_hz() / TICK_HZ;
	set_deadline(next_due[id]);
	set_sie_bits(1ul << IRQ_S_TIMER);
}

/* From the tick's interrupt: the next deadline one period on (catching up if we fell behind). */
void timer_rearm(void)
{
	int id = mycpu()->id;
	uint64_t period = cycles_hz() / TICK_HZ, now = cycles();
	next_due[id] += period;
	if (next_due[id] <= now)
		next_due[id] = now + period;
	set_deadline(next_due[id]);
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
