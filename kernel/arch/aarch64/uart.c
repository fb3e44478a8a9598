/* SPDX-License-Identifier: MIT */
/* uart.c (aarch64): the PL011 on QEMU virt, behind kernel/uart.h for the shared console. */
#include "uart.h"
#include "a64.h"
#include "gic.h"
#include "layout.h"
#include "trap.h"

#define UART_DR 0x00
#define UART_FR 0x18
#define FR_RXFE (1u << 4)		/* receive FIFO empty */
#define FR_TXFF (1u << 5)		/* transmit FIFO full */
#define UART_IMSC 0x38
#define IMSC_RX (1u << 4)		/* receive */
#define IMSC_RT (1u << 6)		/* receive timeout: fewer bytes than the trigger level */
#define UART_ICR 0x44

void uart_init(void)
{
	mmio_write32(UART_BASE + UART_IMSC, IMSC_RX | IMSC_RT);
}

void uart_irq_route(void)
{
	gic_enable(INTID_UART, PRIO_IRQ);
}

int uart_tx_ready(void)
{
	return !(mmio_read32(UART_BASE + UART_FR) & FR_TXFF);
}

void uart_put(char c)
{
	mmio_write32(UART_BASE + UART_DR, (uint8_t)c);
}

int uart_rx(char *c)
{
	if (mmio_read32(UART_BASE + UART_FR) & FR_RXFE)
		return 0;
	*c = (char)mmio_read32(UART_BASE + UART_DR);
	return 1;
}

void uart_irq_ack(void)
{
	mmio_write32(UART_BASE + UART_ICR, IMSC_RX | IMSC_RT);
}
