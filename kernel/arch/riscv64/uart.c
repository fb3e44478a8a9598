/* SPDX-License-Identifier: MIT */
/* uart.c (riscv64): the NS16550A on QEMU virt, behind kernel/uart.h for the shared console. */
#include "uart.h"
#include "layout.h"
#include "plic.h"
#include "rv.h"
#include "trap.h"

#define UART_RBR 0			/* receive buffer (read) */
#define UART_THR 0			/* transmit holding (write) */
#define UART_IER 1
#define IER_RDA 0x01			/* received data available */
#define UART_FCR 2
#define FCR_ENABLE_CLEAR 0x07		/* FIFOs on and cleared */
#define UART_LSR 5
#define LSR_DR 0x01			/* data ready */
#define LSR_THRE 0x20			/* transmit holding register empty */

void uart_init(void)
{
	mmio_write8(UART_BASE + UART_FCR, FCR_ENABLE_CLEAR);
	mmio_write8(UART_BASE + UART_IER, IER_RDA);
}

void uart_irq_route(void)
{
	plic_enable(PLIC_IRQ_UART);
}

int uart_tx_ready(void)
{
	return (mmio_read8(UART_BASE + UART_LSR) & LSR_THRE) != 0;
}

void uart_put(char c)
{
	mmio_write8(UART_BASE + UART_THR, (uint8_t)c);
}

int uart_rx(char *c)
{
	if (!(mmio_read8(UART_BASE + UART_LSR) & LSR_DR))
		return 0;
	*c = (char)mmio_read8(UART_BASE + UART_RBR);
	return 1;
}

void uart_irq_ack(void)
{
}
