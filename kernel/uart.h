/* SPDX-License-Identifier: MIT */
/* uart.h: the serial port under the console (16550 on x86_64, PL011 on aarch64). */
#ifndef UART_H
#define UART_H
void uart_init(void);		/* 8N1 where it matters, receive interrupts on */
int uart_tx_ready(void);	/* 1 if the transmitter has room for a byte */
void uart_put(char c);		/* sends a byte (console.c waits for room first: txwait.h) */
int uart_rx(char *c);		/* 1 and the byte if one is waiting, else 0 */
void uart_irq_ack(void);	/* after draining, where the device needs it */
void uart_irq_route(void);	/* aarch64: the UART's interrupt to cpu0 (x86_64 main.c routes COM1) */
#endif
