/* SPDX-License-Identifier: MIT */
/* apic.c: xAPIC registers, IPIs, the periodic tick, PIT-based calibration, and the IOAPIC. */
#include "apic.h"
#include "cpu.h"
#include "layout.h"
#include "lib.h"
#include "trap.h"
#include "x86.h"

/* xAPIC register offsets (SDM vol. 3A, table 11-1). QEMU 7.2 TCG has no x2APIC. */
#define LAPIC_PA 0xfee00000
#define LAPIC_ID 0x020
#define LAPIC_TPR 0x080
#define LAPIC_EOI 0x0b0
#define LAPIC_SVR 0x0f0		/* spurious vector; bit 8 = APIC software enable */
#define LAPIC_ICR_LO 0x300
#define LAPIC_ICR_HI 0x310
#define LAPIC_LVT_TIMER 0x320
#define LAPIC_TICR 0x380	/* timer initial count */
#define LAPIC_TCCR 0x390	/* timer current count */
#define LAPIC_TDCR 0x3e0	/* timer divide configuration */
#define SVR_ENABLE 0x100
#define LVT_MASKED 0x10000
#define LVT_PERIODIC 0x20000
#define TDCR_DIV16 0x3
#define ICR_INIT 0x500
#define ICR_STARTUP 0x600
#define ICR_NMI 0x400
#define ICR_ASSERT 0x4000
#define ICR_LEVEL 0x8000
#define ICR_BUSY 0x1000
#define ICR_ALL_BUT_SELF 0xc0000

/* PIT (8254) channel 2, gated through port 0x61, for calibration. */
#define PIT_HZ 1193182
#define PIT_CH2 0x42
#define PIT_CMD 0x43
#define PIT_GATE 0x61		/* bit 0: channel 2 gate, bit 1: speaker, bit 5: OUT2 */
#define CAL_ROUNDS 5		/* median of these */
#define CAL_MS 20		/* PIT time per round */
#define CAL_TRIES 8		/* reads per calibration point; the tightest is kept */

/* IOAPIC (82093AA datasheet): index/data window, redirection entries from 0x10. */
#define IOAPIC_REGSEL 0x00
#define IOAPIC_WIN 0x10
#define IOAPIC_REDTBL 0x10
#define IOREDTBL_LEVEL (1 << 15)
#define IOREDTBL_LOW (1 << 13)

uint64_t ioapic_base_pa;
static uint64_t tsc_rate, lapic_rate, tsc_boot;

static volatile uint32_t *lapic_reg(uint32_t off)
{
	return (volatile uint32_t *)P2V(LAPIC_PA + off);
}
static uint32_t lapic_read(uint32_t off) { return *lapic_reg(off); }
static void lapic_write(uint32_t off, uint32_t v) { *lapic_reg(off) = v; (void)lapic_read(LAPIC_ID); }

void lapic_init(void)
{
	lapic_write(LAPIC_SVR, SVR_ENABLE | T_SPURIOUS);
	lapic_write(LAPIC_TPR, 0);		/* accept every priority */
	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED);
}

uint32_t lapic_id(void)
{
	return lapic_read(LAPIC_ID) >> 24;
}

void lapic_eoi(void)
{
	lapic_write(LAPIC_EOI, 0);
}

static void icr_send(uint32_t dest, uint32_t lo)
{
	for (int i = 0; i < 1000000 && (lapic_read(LAPIC_ICR_LO) & ICR_BUSY); i++)
		cpu_relax();
	lapic_write(LAPIC_ICR_HI, dest << 24);
	lapic_write(LAPIC_ICR_LO, lo);	/* writing the low half sends it */
}

void lapic_send_init(uint32_t apic_id)
{
	icr_send(apic_id, ICR_INIT | ICR_LEVEL | ICR_ASSERT);
}

void lapic_send_sipi(uint32_t apic_id, uint32_t page)
{
	icr_send(apic_id, ICR_STARTUP | (page & 0xff));
}

void lapic_nmi_others(void)
{
	icr_send(0, ICR_ALL_BUT_SELF | ICR_NMI | ICR_ASSERT);
}

/* PIT channel 2's current count (latched, so both bytes belong to the same moment). */
static uint16_t pit_ch2_count(void)
{
	outb(PIT_CMD, 0x80);		/* counter latch command for channel 2 */
	uint8_t lo = inb(PIT_CH2);
	return (uint16_t)(lo | inb(PIT_CH2) << 8);
}

struct cal_point {
	uint64_t tsc;			/* TSC at the moment the PIT was read */
	uint32_t lapic;			/* LAPIC timer current count then */
	uint16_t pit;			/* PIT channel 2 count */
};

/*
 * Reads PIT, LAPIC timer and TSC together. The read is bracketed by two TSC reads and the
 * tightest of several tries is kept: under an emulator on a busy host the vCPU can be
 * descheduled between two reads, which would skew one calibration round by milliseconds.
 */
static struct cal_point cal_point_read(void)
{
	struct cal_point best = { 0, 0, 0 };
	uint64_t best_spread = ~0ull;
	for (int i = 0; i < CAL_TRIES; i++) {
		uint64_t t1 = rdtsc();
		uint16_t pit = pit_ch2_count();
		uint32_t lapic = lapic_read(LAPIC_TCCR);
		uint64_t t2 = rdtsc();
		if (t2 - t1 < best_spread) {
			best_spread = t2 - t1;
			best = (struct cal_point){ t1 + (t2 - t1) / 2, lapic, pit };
		}
	}
	return best;
}

/* One round: TSC cycles and LAPIC timer counts per second, over CAL_MS of PIT time. */
static void calibrate_round(uint64_t *tsc_per_s, uint64_t *lapic_per_s)
{
	outb(PIT_GATE, (inb(PIT_GATE) & ~0x02) | 0x01);	/* gate on, speaker off */
	outb(PIT_CMD, 0xb0);		/* channel 2, lobyte/hibyte, mode 0, binary */
	outb(PIT_CH2, 0xff);
	outb(PIT_CH2, 0xff);		/* count down from 65535 (55 ms): no wrap in a round */
	lapic_write(LAPIC_TDCR, TDCR_DIV16);
	lapic_write(LAPIC_TICR, 0xffffffff);
	struct cal_point a = cal_point_read();
	while ((uint16_t)(a.pit - pit_ch2_count()) < PIT_HZ * CAL_MS / 1000)
		;
	struct cal_point b = cal_point_read();
	lapic_write(LAPIC_TICR, 0);
	uint64_t pit_ticks = (uint16_t)(a.pit - b.pit);
	*tsc_per_s = (b.tsc - a.tsc) * PIT_HZ / pit_ticks;
	*lapic_per_s = (uint64_t)(a.lapic - b.lapic) * PIT_HZ / pit_ticks;
}

static void sort_u64(uint64_t *a, int n)
{
	for (int i = 1; i < n; i++)
		for (int j = i; j > 0 && a[j - 1] > a[j]; j--) {
			uint64_t t = a[j];
			a[j] = a[j - 1];
			a[j - 1] = t;
		}
}

/* A round can still be disturbed (e.g. by an SMI, or a host stall between rounds): median of several. */
void timer_calibrate(void)
{
	uint64_t t[CAL_ROUNDS], l[CAL_ROUNDS];
	lapic_write(LAPIC_LVT_TIMER, LVT_MASKED);
	for (int i = 0; i < CAL_ROUNDS; i++)
		calibrate_round(&t[i], &l[i]);
	sort_u64(t, CAL_ROUNDS);
	sort_u64(l, CAL_ROUNDS);
	tsc_rate = t[CAL_ROUNDS / 2];
	lapic_rate = l[CAL_ROUNDS / 2];	/* counts/s at divide-by-16 */
	tsc_boot = rdtsc();
}

void timer_start(void)
{
	lapic_write(LAPIC_TDCR, TDCR_DIV16);
	lapic_write(LAPIC_LVT_TIMER, LVT_PERIODIC | T_TIMER);
	lapic_write(LAPIC_TICR, (uint32_t)(lapic_rate / TICK_HZ));
}

uint64_t tsc_hz(void) { return tsc_rate; }
uint64_t lapic_timer_hz(void) { return lapic_rate; }

uint64_t uptime_ms(void)
{
	return tsc_rate ? (rdtsc() - tsc_boot) / (tsc_rate / 1000) : 0;
}

void delay_us(uint64_t us)
{
	uint64_t end = rdtsc() + tsc_rate / 1000000 * us;
	while (rdtsc() < end)
		cpu_relax();
}

static void ioapic_write(uint32_t reg, uint32_t v)
{
	volatile uint32_t *base = P2V(ioapic_base_pa);
	base[IOAPIC_REGSEL / 4] = reg;
	base[IOAPIC_WIN / 4] = v;
}

void ioapic_route(uint32_t gsi, uint8_t vector, uint32_t dest_apic, int level_low)
{
	if (!ioapic_base_pa)
		return;
	uint32_t lo = vector | (level_low ? IOREDTBL_LEVEL | IOREDTBL_LOW : 0);
	ioapic_write(IOAPIC_REDTBL + 2 * gsi + 1, dest_apic << 24);
	ioapic_write(IOAPIC_REDTBL + 2 * gsi, lo);	/* unmasked, fixed, physical */
}
