/* SPDX-License-Identifier: MIT */
/* panic.h: stop every CPU with a report and a symbolized backtrace. */
#ifndef PANIC_H
#define PANIC_H
#include "lib.h"

struct trapframe;
void panic(const char *fmt, ...) NORETURN PRINTF(1, 2);
void panic_trap(struct trapframe *tf, const char *what) NORETURN;
/* For the arch's panic_trap: claim the panic (0: another CPU has it), say which CPU and task. */
int panic_begin(void);
void panic_whoami(struct out *o);
extern volatile int panicking;		/* set once; other CPUs halt when they see it */
#endif
