/* SPDX-License-Identifier: MIT */
/* offcpu.c: record --off-cpu -- the tasks that are not running, each saved stack weighed by the wall time it stood for (decisions only). */
#include "offcpu.h"
#include "bytes.h"
#include <string.h>

/*
 * Each stop reads the whole task table (one block) and, in the same trip, the saved stacks of the
 * tasks the previous stop found off-CPU, at the sp it found -- a task that still waits has not
 * moved it, so the prediction is what makes one trip enough. Between two stops every off-CPU task
 * owes the time that passed; a stack that came at the sp the table still holds takes what its
 * task owes, in whole periods (the rest carried). A task whose stack the budget left out owes on
 * until a later stop reads it, so time is never lost to the budget, only given late; a task that
 * ran meanwhile (its sp moved) is read again at the new sp next stop.
 */
const char *const offcpu_class_frames[OC_NCLASS] = { "", "", "off-cpu/runnable", "off-cpu/blocked" };

void offcpu_init(struct offcpu *oc, const struct offcpu_layout *L, uint32_t budget, int64_t period_ns)
{
	memset(oc, 0, sizeof *oc);
	oc->L = *L;
	if (oc->L.count > OFFCPU_MAX_TASKS) oc->L.count = OFFCPU_MAX_TASKS;
	oc->budget = budget;
	oc->period_ns = period_ns > 0 ? period_ns : 10000000;
}

static int off_cpu(int cls)
{
	return cls == OC_RUNNABLE || cls == OC_BLOCKED;
}

int offcpu_plan(struct offcpu *oc, struct offcpu_req *req, int cap)
{
	int n = 0;
	if (cap < 1 || !oc->L.count) return 0;
	req[n++] = (struct offcpu_req){ oc->L.table, oc->L.count * oc->L.stride, -1, 0, NULL };
	uint32_t used = 0;
	for (uint32_t k = 0; k < oc->L.count && n < cap; k++) {
		uint32_t i = (oc->cursor + k) % oc->L.count;
		const struct offcpu_task *t = &oc->t[i];
		if (!off_cpu(t->cls) || !t->sp || t->sp < t->stack_lo || t->sp >= t->stack_hi) continue;
		uint64_t len = t->stack_hi - t->sp < OFFCPU_WINDOW ? t->stack_hi - t->sp : OFFCPU_WINDOW;
		if (used + len > oc->budget) {
			oc->st.deferred++;
			continue;
		}
		used += (uint32_t)len;
		req[n++] = (struct offcpu_req){ t->sp, (uint32_t)len, (int)i, t->sp, NULL };
	}
	oc->cursor = oc->L.count ? (oc->cursor + 1) % oc->L.count : 0; /* a new first each stop */
	return n;
}

static uint64_t field(const uint8_t *e, uint32_t off, uint32_t size)
{
	switch (size) {
	case 1: return e[off];
	case 2: return le16(e + off);
	case 4: return le32(e + off);
	default: return le64(e + off);
	}
}

/* The class of an entry: its state mapped, idle tasks and implausible stacks left out. */
static int entry_class(const struct offcpu_layout *L, const uint8_t *e)
{
	uint64_t st = field(e, L->state_off, L->state_size);
	int cls = st < sizeof L->cls ? L->cls[st] : OC_NONE;
	if (L->idle_kind >= 0 && field(e, L->kind_off, L->kind_size) == (uint64_t)L->idle_kind) return OC_NONE;
	return cls;
}

int offcpu_decode(struct offcpu *oc, const struct offcpu_req *req, int nreq, int64_t now, struct offcpu_hit *hit,
		  int cap)
{
	const struct offcpu_layout *L = &oc->L;
	if (nreq < 1 || req[0].slot != -1 || !req[0].data) {
		oc->st.unreadable++;
		return -1;
	}
	int64_t dt = oc->last_ns ? now - oc->last_ns : 0;
	oc->last_ns = now;
	oc->st.stops++;
	for (uint32_t i = 0; i < L->count; i++) {
		const uint8_t *e = req[0].data + (size_t)i * L->stride;
		struct offcpu_task *t = &oc->t[i];
		int cls = entry_class(L, e);
		t->stack_lo = le64(e + L->stack_off);
		t->stack_hi = t->stack_lo + le64(e + L->stack_size_off);
		if (!off_cpu(cls)) {
			if (off_cpu(t->owed_cls) && t->owed_ns > 0) oc->st.dropped_ns += (uint64_t)t->owed_ns;
			t->owed_ns = 0;
			t->owed_cls = t->cls = cls;
			t->sp = 0;
			continue;
		}
		if (cls != t->owed_cls) { /* the time owed was another state's: lost, said */
			if (t->owed_ns > 0 && off_cpu(t->owed_cls)) oc->st.dropped_ns += (uint64_t)t->owed_ns;
			t->owed_ns = 0;
			t->owed_cls = cls;
		}
		if (off_cpu(t->cls)) t->owed_ns += dt; /* off-CPU since the previous stop as far as we know */
		t->cls = cls;
		t->id.pid = (int32_t)le32(e + L->pid_off);
		t->id.tgid = t->id.pid;
		t->id.ptr = L->table + (uint64_t)i * L->stride;
		memset(t->id.comm, 0, sizeof t->id.comm);
		memcpy(t->id.comm, e + L->name_off, L->name_len < TASK_COMM_LEN ? L->name_len : TASK_COMM_LEN);
		t->sp = le64(e + L->sp_off);
	}
	int n = 0;
	for (int r = 1; r < nreq; r++) {
		const struct offcpu_req *q = &req[r];
		struct offcpu_task *t = &oc->t[q->slot];
		if (!q->data) {
			oc->st.unreadable++;
			continue;
		}
		if (!off_cpu(t->cls) || t->sp != q->sp) {
			oc->st.stale++;
			continue;
		}
		int64_t w = (t->owed_ns + oc->period_ns / 2) / oc->period_ns;
		if (w < 1 || n == cap) continue; /* owes less than half a period yet: later */
		t->owed_ns -= w * oc->period_ns;
		oc->st.samples++;
		oc->st.weight += (uint64_t)w;
		hit[n++] = (struct offcpu_hit){ q->slot, t->cls, (uint32_t)w, q };
	}
	return n;
}
