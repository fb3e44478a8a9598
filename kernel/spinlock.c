/* SPDX-License-Identifier: MIT */
/* spinlock.c: spinlocks; interrupts stay off while held so a handler can't deadlock on one. */
#include "spinlock.h"
#include "arch.h"

void spin_lock(struct spinlock *l)
{
	/* xchg is a full barrier: the critical section can't move above it. */
	while (__atomic_exchange_n(&l->locked, 1, __ATOMIC_ACQUIRE))
		while (l->locked)
			cpu_relax();
}

void spin_unlock(struct spinlock *l)
{
	__atomic_store_n(&l->locked, 0, __ATOMIC_RELEASE);
}

uint64_t spin_lock_irqsave(struct spinlock *l)
{
	uint64_t flags = irq_save();
	spin_lock(l);
	return flags;
}

void spin_unlock_irqrestore(struct spinlock *l, uint64_t flags)
{
	spin_unlock(l);
	irq_restore(flags);
}
