/* SPDX-License-Identifier: MIT */
/* console.c: the serial console: polled output under a lock, interrupt-driven input ring. */
#include "console.h"
#include "arch.h"
#include "cpu.h"
#include "sched.h"
#include "txwait.h"
#include "uart.h"

#define RX_RING 256

static struct spinlock tx_lock = SPINLOCK_INIT("console");
static volatile int panic_mode;
static char rx_ring[RX_RING];
static volatile uint32_t rx_head, rx_tail;	/* written by the IRQ / by the reader */
static struct task *rx_reader;
uint64_t console_rx_overruns;
static struct txwait tx;		/* under tx_lock (or panic mode's one CPU) */

static void relax(void) { cpu_relax(); }

static void tx_byte(char c)
{
	if (txwait(&tx, uart_tx_ready, uptime_ms, relax))
		uart_put(c);
}

uint64_t console_tx_dropped(void)
{
	return tx.dropped;
}

void console_init(void)
{
	uart_init();
}

void console_write(const char *s, size_t n)
{
	uint64_t f = 0;
	if (!panic_mode)
		f = spin_lock_irqsave(&tx_lock);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			tx_byte('\r');
		tx_byte(s[i]);
	}
	if (!panic_mode)
		spin_unlock_irqrestore(&tx_lock, f);
}

static void console_sink(struct out *o, const char *s, size_t n)
{
	(void)o;
	console_write(s, n);
}

struct out console_out = { console_sink, 0 };

void kprintf(const char *fmt, ...)
{
	char buf[256];
	va_list ap;
	va_start(ap, fmt);
	int n = vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	console_write(buf, (size_t)n < sizeof(buf) ? (size_t)n : sizeof(buf) - 1);
}

void console_panic_mode(void)
{
	panic_mode = 1;
}

void console_set_reader(struct task *t)
{
	rx_reader = t;
}

/* Runs on the CPU the UART interrupt is routed to (cpu0), interrupts off. */
void console_irq(void)
{
	char c;
	while (uart_rx(&c)) {
		if (rx_head - rx_tail >= RX_RING) {
			console_rx_overruns++;
			continue;
		}
		rx_ring[rx_head % RX_RING] = c;
		__atomic_store_n(&rx_head, rx_head + 1, __ATOMIC_RELEASE);
	}
	uart_irq_ack();
	if (rx_reader)
		task_wake(rx_reader);
}

int console_getc(void)
{
	for (;;) {
		uint64_t f = irq_save();	/* check and block with interrupts off, or a wake-up is lost */
		if (__atomic_load_n(&rx_head, __ATOMIC_ACQUIRE) != rx_tail) {
			char c = rx_ring[rx_tail % RX_RING];
			rx_tail++;
			irq_restore(f);
			return (unsigned char)c;
		}
		/* Poll too, in case the interrupt is not routed (e.g. no IOAPIC entry). */
		char c;
		if (uart_rx(&c)) {
			irq_restore(f);
			return (unsigned char)c;
		}
		task_block_timeout(10);
		irq_restore(f);
	}
}
