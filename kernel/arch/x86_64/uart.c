/* SPDX-License-Identifier: MIT */
/* uart.c (x86_64): the 16550 UART on COM1, behind kernel/uart.h for the shared console. */
#include "uart.h"
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

void uart_init(void)
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

int uart_tx_ready(void)
{
	return (inb(COM1 + UART_LSR) & LSR_THRE) != 0;
}

void uart_put(char c)
{
	outb(COM1 + UART_DATA, (uint8_t)c);
}

int uart_rx(char *c)
{
	if (!(inb(COM1 + UART_LSR) & LSR_DR))
		return 0;
	*c = (char)inb(COM1 + UART_DATA);
	return 1;
}

void uart_irq_ack(void)
{
}

void uart_irq_route(void)
{
}
