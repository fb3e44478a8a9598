/* SPDX-License-Identifier: MIT */
/* smp.h: bringing up the other CPUs, and the loop every idle task runs. */
#ifndef SMP_H
#define SMP_H
void smp_boot(void);
void idle_loop(void) __attribute__((noreturn));
#endif
