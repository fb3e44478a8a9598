/* SPDX-License-Identifier: MIT */
/* console.h: the serial console (COM1 or the PL011): output for everyone, input for the shell. */
#ifndef CONSOLE_H
#define CONSOLE_H
#include "lib.h"

struct task;

extern struct out console_out;		/* a sink that writes to the serial port */
void console_init(void);
void kprintf(const char *fmt, ...) PRINTF(1, 2);
void console_write(const char *s, size_t n);
void console_irq(void);			/* COM1 receive interrupt */
int console_getc(void);			/* blocks the calling task until a byte arrives */
void console_set_reader(struct task *t);	/* the task console_irq wakes */
void console_panic_mode(void);		/* stop taking the lock: another CPU may hold it */
extern uint64_t console_rx_overruns;	/* bytes dropped because the ring was full */
uint64_t console_tx_dropped(void);	/* output bytes the UART did not take in time (txwait.h) */
#endif
