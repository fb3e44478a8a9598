/* SPDX-License-Identifier: MIT */
/* offcpu.c: record --off-cpu -- the tasks that are not running, each saved stack weighed by the wall time it stood for (decisions only). */
#include "offcpu.h"
#include "bytes.h"
#include <string.h>

/*
 * Each stop reads a slice of the task table (`slice` entries, one block; the slices taking turns,
 * so the whole table is seen every count/slice stops) and, in the same trip, the saved stacks of
 * the slice's tasks that its previous visit found off-CPU, at the sp found then -- a task that
 * still waits has not moved it, so the prediction is what makes one trip enough. A task's stack
 * is read as far as its last walk went (plus a margin), else OFFCPU_WINDOW bytes. A visit that
 * finds a task off-CPU gives it the time since its previous visit -- the state a visit sees stands
 * for the interval before it, as a sample stands for its period, so a state that comes and goes
 * is counted in proportion, not dropped; a stack that came at the sp the table still holds takes
 * what its task owes, in whole periods (the rest carried). A task whose stack the
 * budget left out owes on until a later visit reads it, so time is never lost to the budget, only
 * given late; a task that ran meanwhile (its sp moved) is read at the new sp next visit. The
 * first stop reads the whole table, so each task's time counts from the run's start; at the end
 * (offcpu_flush) each task still waiting is given the time since its last visit too, under the
 * state and stack that visit saw -- held for at most a rotation of the slices.
 */
const char *const offcpu_class_frames[OC_NCLASS] = { "", "", "off-cpu/runnable", "off-cpu/blocked" };

void offcpu_init(struct offcpu *oc, const struct offcpu_layout *L, uint32_t budget, uint32_t slice, int64_t period_ns)
{
	memset(oc, 0, sizeof *oc);
	oc->L = *L;
	if (oc->L.count > OFFCPU_MAX_TASKS) oc->L.count = OFFCPU_MAX_TASKS;
	oc->budget = budget;
	oc->slice = slice && slice < oc->L.count ? slice : oc->L.count;
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
	int census = !oc->st.stops; /* the first stop sees every task: their time counts from it */
	uint32_t first = census ? 0 : oc->next_first < oc->L.count ? oc->next_first : 0;
	uint32_t count = census ? oc->L.count : oc->L.count - first < oc->slice ? oc->L.count - first : oc->slice;
	uint32_t budget = oc->budget;
	oc->first = first;
	oc->nslice = count;
	if (!census) oc->next_first = first + count < oc->L.count ? first + count : 0;
	req[n++] = (struct offcpu_req){ oc->L.table + (uint64_t)first * oc->L.stride, count * oc->L.stride, -1, 0, NULL };
	uint32_t used = 0;
	for (uint32_t k = 0; k < count && n < cap; k++) {
		uint32_t i = first + (oc->cursor + k) % count;
		const struct offcpu_task *t = &oc->t[i];
		if (!off_cpu(t->cls) || !t->sp || t->sp < t->stack_lo || t->sp >= t->stack_hi) continue;
		uint64_t want = t->span ? t->span : OFFCPU_WINDOW;
		uint64_t len = t->stack_hi - t->sp < want ? t->stack_hi - t->sp : want;
		if (used + len > budget) {
			oc->st.deferred++;
			continue;
		}
		used += (uint32_t)len;
		req[n++] = (struct offcpu_req){ t->sp, (uint32_t)len, (int)i, t->sp, NULL };
	}
	if (!census && !oc->next_first) oc->cursor++; /* a new first within each slice every round of the table */
	return n;
}

int offcpu_walked(struct offcpu *oc, const struct offcpu_hit *h, uint64_t hi, int wanted_more)
{
	struct offcpu_task *t = &oc->t[h->slot];
	if (wanted_more && h->stack->len < OFFCPU_WINDOW && h->stack->sp + h->stack->len < t->stack_hi) {
		/* the walk went past what was read: read the whole window next visit, the time owed again */
		t->span = 0;
		t->owed_ns += (int64_t)h->weight * oc->period_ns;
		oc->st.samples--;
		oc->st.weight -= h->weight;
		oc->st.short_reads++;
		return 1;
	}
	uint64_t span = hi > h->stack->sp ? hi - h->stack->sp + OFFCPU_SPAN_MARGIN : 0;
	t->span = span > OFFCPU_WINDOW ? OFFCPU_WINDOW : (uint32_t)((span + 15) & ~15ull);
	return 0;
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
	oc->st.stops++;
	for (uint32_t i = oc->first; i < oc->first + oc->nslice; i++) {
		const uint8_t *e = req[0].data + (size_t)(i - oc->first) * L->stride;
		struct offcpu_task *t = &oc->t[i];
		int64_t dt = t->visit_ns ? now - t->visit_ns : 0; /* since this entry's previous visit */
		t->visit_ns = now;
		int cls = entry_class(L, e);
		if (le64(e + L->sp_off) != t->sp) t->span = 0, t->kept = 0; /* another sp: its walk is unknown */
		t->stack_lo = le64(e + L->stack_off);
		t->stack_hi = t->stack_lo + le64(e + L->stack_size_off);
		if (!off_cpu(cls)) {
			if (off_cpu(t->owed_cls) && t->owed_ns > 0) oc->st.dropped_ns += (uint64_t)t->owed_ns;
			t->owed_ns = 0;
			t->owed_cls = t->cls = cls;
			t->sp = 0;
			t->kept = 0;
			continue;
		}
		if (cls != t->owed_cls) { /* the time owed was another state's: lost, said */
			if (t->owed_ns > 0 && off_cpu(t->owed_cls)) oc->st.dropped_ns += (uint64_t)t->owed_ns;
			t->owed_ns = 0;
			t->owed_cls = cls;
		}
		t->owed_ns += dt; /* the time since its previous visit: the state this visit sees, as a sample stands for its period */
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

int offcpu_flush(struct offcpu *oc, int64_t now, struct offcpu_hit *hit, int cap)
{
	int n = 0;
	for (uint32_t i = 0; i < oc->L.count && n < cap; i++) {
		struct offcpu_task *t = &oc->t[i];
		if (!off_cpu(t->cls) || t->cls != t->owed_cls || !t->visit_ns) continue;
		t->owed_ns += now - t->visit_ns;
		t->visit_ns = now;
		int64_t w = (t->owed_ns + oc->period_ns / 2) / oc->period_ns;
		if (w < 1) continue;
		if (!t->kept) { /* never walked at its sp: the time cannot be given a stack */
			oc->st.dropped_ns += (uint64_t)t->owed_ns;
			t->owed_ns = 0;
			continue;
		}
		t->owed_ns -= w * oc->period_ns;
		oc->st.samples++;
		oc->st.weight += (uint64_t)w;
		oc->st.held++;
		hit[n++] = (struct offcpu_hit){ (int)i, t->cls, (uint32_t)w, NULL };
	}
	return n;
}
