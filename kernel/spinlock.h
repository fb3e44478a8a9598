/* SPDX-License-Identifier: MIT */
/* spinlock.h: test-and-set spinlocks that save and restore the interrupt flag. */
#ifndef SPINLOCK_H
#define SPINLOCK_H
#include <stdint.h>

struct spinlock {
	volatile uint32_t locked;	/* 1 while held */
	const char *name;		/* for panic messages */
};
#define SPINLOCK_INIT(n) { 0, n }

uint64_t spin_lock_irqsave(struct spinlock *l);		/* returns the previous RFLAGS */
void spin_unlock_irqrestore(struct spinlock *l, uint64_t flags);
void spin_lock(struct spinlock *l);			/* caller has interrupts off */
void spin_unlock(struct spinlock *l);
#endif
