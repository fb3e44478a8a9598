/* SPDX-License-Identifier: MIT */
/* timer.h (riscv64): the SBI timer's tick. */
#ifndef TIMER_H
#define TIMER_H
void timer_init(void);		/* boot hart, once: uptime starts */
void timer_start(void);		/* this hart: a TICK_HZ interrupt */
void timer_rearm(void);		/* from the tick's handler */
#endif
