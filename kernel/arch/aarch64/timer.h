/* SPDX-License-Identifier: MIT */
/* timer.h (aarch64): the generic timer's tick. */
#ifndef TIMER_H
#define TIMER_H
void timer_init(void);		/* boot CPU, once: uptime starts */
void timer_start(void);		/* this CPU: a TICK_HZ interrupt */
void timer_rearm(void);		/* from the tick's handler */
#endif
