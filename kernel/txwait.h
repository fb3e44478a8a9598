/* SPDX-License-Identifier: MIT */
/* txwait.h: how long console output waits for room in the UART before it drops a byte. */
#ifndef TXWAIT_H
#define TXWAIT_H
#include <stdint.h>

/*
 * QEMU's 16550 sends each byte as its own write to the chardev; a unix socket holds only a few
 * thousand of those before the reader must drain it, and a host that runs the reader late (CPU
 * hogs) keeps the UART full. A byte written into a full FIFO is lost, so a wait bounded by a poll
 * count (once 100000 polls: ~0.2 s of an x86_64 TCG guest) cut names in the middle. The wait is
 * bounded by the guest's clock instead: up to TXWAIT_MS for one byte. Once a wait ran out (nobody
 * reads the console), later bytes wait only TXWAIT_STALLED_POLLS polls until the UART takes one
 * again, so an unread console costs two seconds, not two a byte. Every byte given up is counted
 * (`uptime` shows them). TXWAIT_POLLS bounds a wait while the clock does not run yet (x86_64
 * before its TSC is calibrated).
 */
#define TXWAIT_MS 2000
#define TXWAIT_POLLS 20000000ULL
#define TXWAIT_STALLED_POLLS 100ULL

struct txwait {
	int stalled;		/* the last wait ran out, and the UART has not taken a byte since */
	uint64_t dropped;	/* bytes given up */
};

/* Waits until ready() says the UART has room: 1 (send the byte) or 0 (dropped and counted).
 * now_ms is the guest's clock; relax is called between polls. */
int txwait(struct txwait *w, int (*ready)(void), uint64_t (*now_ms)(void), void (*relax)(void));
#endif
