/* console.c: 16550 UART on COM1: polled output under a lock, interrupt-driven input ring. */
#include "console.h"
#include "cpu.h"
#include "sched.h"
#include "x86.h"

/* 16550 registers (offsets from the base port) and bits. */
#define COM1 0x3f8
#define UART_DATA 0
#define UART_IER 1		/* interrupt enable: bit 0 = received data available */
#define UART_FCR 2		/* FIFO control */
#define UART_LCR 3		/* line control: bit 7 = divisor latch access */
#define UART_MCR 4		/* modem control: OUT2 gates the interrupt line on PCs */
#define UART_LSR 5		/* line status */
#define LSR_DR 0x01		/* data ready */
#define LSR_THRE 0x20		/* transmit holding register empty */
#define MCR_DTR_RTS_OUT2 0x0b

#define RX_RING 256

static struct spinlock tx_lock = SPINLOCK_INIT("console");
static volatile int panic_mode;
static char rx_ring[RX_RING];
static volatile uint32_t rx_head, rx_tail;	/* written by the IRQ / by the reader */
static struct task *rx_reader;
uint64_t console_rx_overruns;

static void uart_putc(char c)
{
	for (int i = 0; i < 100000 && !(inb(COM1 + UART_LSR) & LSR_THRE); i++)
		cpu_relax();
	outb(COM1 + UART_DATA, (uint8_t)c);
}

void console_init(void)
{
	outb(COM1 + UART_IER, 0);
	outb(COM1 + UART_LCR, 0x80);	/* divisor latch: 115200 baud = divisor 1 */
	outb(COM1 + UART_DATA, 1);
	outb(COM1 + UART_IER, 0);
	outb(COM1 + UART_LCR, 0x03);	/* 8N1 */
	outb(COM1 + UART_FCR, 0x07);	/* enable and clear FIFOs */
	outb(COM1 + UART_MCR, MCR_DTR_RTS_OUT2);
	outb(COM1 + UART_IER, 0x01);	/* receive interrupts (routed later by the IOAPIC) */
}

void console_write(const char *s, size_t n)
{
	uint64_t f = 0;
	if (!panic_mode)
		f = spin_lock_irqsave(&tx_lock);
	for (size_t i = 0; i < n; i++) {
		if (s[i] == '\n')
			uart_putc('\r');
		uart_putc(s[i]);
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

/* Runs on the CPU the IOAPIC routes COM1 to, interrupts off. */
void console_irq(void)
{
	while (inb(COM1 + UART_LSR) & LSR_DR) {
		char c = (char)inb(COM1 + UART_DATA);
		if (rx_head - rx_tail >= RX_RING) {
			console_rx_overruns++;
			continue;
		}
		rx_ring[rx_head % RX_RING] = c;
		__atomic_store_n(&rx_head, rx_head + 1, __ATOMIC_RELEASE);
	}
	if (rx_reader)
		task_wake(rx_reader);
}

int console_getc(void)
{
	for (;;) {
		uint64_t f = read_rflags();
		cli();	/* check and block with interrupts off, or a wake-up could be lost */
		if (__atomic_load_n(&rx_head, __ATOMIC_ACQUIRE) != rx_tail) {
			char c = rx_ring[rx_tail % RX_RING];
			rx_tail++;
			if (f & RFLAGS_IF)
				sti();
			return (unsigned char)c;
		}
		/* Poll too, in case the interrupt is not routed (e.g. no IOAPIC entry). */
		if (inb(COM1 + UART_LSR) & LSR_DR) {
			char c = (char)inb(COM1 + UART_DATA);
			if (f & RFLAGS_IF)
				sti();
			return (unsigned char)c;
		}
		task_block_timeout(10);
		if (f & RFLAGS_IF)
			sti();
	}
}
