/* SPDX-License-Identifier: MIT */
/* txwait.c: the console's bounded wait for room in the UART (the policy is in txwait.h). */
#include "txwait.h"

int txwait(struct txwait *w, int (*ready)(void), uint64_t (*now_ms)(void), void (*relax)(void))
{
	uint64_t t0 = now_ms();
	for (uint64_t i = 0; !ready(); i++) {
		int out = w->stalled ? i >= TXWAIT_STALLED_POLLS
				     : i >= TXWAIT_POLLS || now_ms() - t0 >= TXWAIT_MS;
		if (out) {
			w->stalled = 1;
			w->dropped++;
			return 0;
		}
		relax();
	}
	w->stalled = 0;
	return 1;
}
