/* SPDX-License-Identifier: MIT */
/* offcpu.c: record --off-cpu -- the tasks that are not running, each saved stack weighed by the wall time it stood for (decisions only). */
#include "offcpu.h"
#include "bytes.h"
#include "sample.h"
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * Each stop reads a slice of the tasks -- a table's next `slice` entries in one block (the
 * slices taking turns, so the whole table is seen every count/slice stops), or a list's next
 * tasks (plan_list) -- and, in the same trip, the saved stacks of the slice's tasks that its
 * previous visit found off-CPU, at the sp found then: a task that still waits has not moved it,
 * so the prediction is what makes one trip enough. A task's stack is read as far as its last walk
 * went (plus a margin), else the layout's window. A visit owes a task the time since its previous
 * visit that no vCPU was seen running it (offcpu_running: each stop's samples name who ran), and
 * a visit that finds it off-CPU with its stack read at the sp it still holds gives it what it
 * owes, in whole sample periods (the rest carried), under that visit's state -- the state a
 * visit sees stands for the interval before it, as a sample stands for its period, so a task
 * that comes and goes is counted in proportion, and on- and off-CPU time add up to its wall time. A task whose stack the
 * budget left out owes on until a later visit reads it, so time is never lost to the budget, only
 * given late; a task that ran meanwhile (its sp moved) is read at the new sp next visit. The
 * first stop (a list: the walk before the run) sees every task, so each task's time counts from
 * the run's start; at the end (offcpu_flush) each task still waiting is given the time since its
 * last visit too, under the state and stack that visit saw -- held for at most a rotation of the
 * slices. Time owed by a task that ends or goes idle is dropped, counted.
 */
int offcpu_fail(char *err, size_t cap, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(err, cap, fmt, ap);
	va_end(ap);
	return -1;
}

const char *const offcpu_class_frames[OC_NCLASS] = { "", "", "off-cpu/runnable", "off-cpu/blocked",
						      "off-cpu/uninterruptible" };

void offcpu_init(struct offcpu *oc, const struct offcpu_layout *L, uint32_t budget, uint32_t slice, int64_t period_ns)
{
	memset(oc, 0, sizeof *oc);
	oc->L = *L;
	if (oc->L.count > OFFCPU_MAX_TASKS) oc->L.count = OFFCPU_MAX_TASKS;
	if (!oc->L.window) oc->L.window = OFFCPU_WINDOW;
	oc->budget = budget;
	oc->period_ns = period_ns > 0 ? period_ns : 10000000;
	if (oc->L.mode == OL_LIST) {
		oc->slice = slice < 1 ? OFFCPU_SLICE : slice > OFFCPU_MAX_VISITS ? OFFCPU_MAX_VISITS : slice;
		oc->census = 1;
		return;
	}
	oc->nslots = oc->L.count;
	oc->slice = slice && slice < oc->L.count ? slice : oc->L.count;
}

static int off_cpu(int cls)
{
	return cls == OC_RUNNABLE || cls == OC_BLOCKED || cls == OC_UNINTERRUPTIBLE;
}

/* The time one weight unit stands for: the sample period asked for (-r). Not the stops' mean
 * interval: on a starved host it moves during the run, and weights paid at different times would
 * stand for different times (measured: a sleeper's weights 0.3-1.3x its wall time). So a weight
 * is wall time, whatever rate the stops reached. */
static int64_t unit(const struct offcpu *oc)
{
	return oc->period_ns;
}

/* The stack read a task last seen off-CPU wants, added to req[*n] if the budget allows. */
static void plan_stack(struct offcpu *oc, int i, uint32_t *used, struct offcpu_req *req, int *n)
{
	const struct offcpu_task *t = &oc->t[i];
	if (!off_cpu(t->cls) || !t->sp || t->sp < t->stack_lo || t->sp >= t->stack_hi) return;
	uint64_t want = t->span ? t->span : oc->L.window;
	uint64_t len = t->stack_hi - t->sp < want ? t->stack_hi - t->sp : want;
	if (*used + len > oc->budget) {
		oc->st.deferred++;
		return;
	}
	*used += (uint32_t)len;
	req[(*n)++] = (struct offcpu_req){ t->sp, (uint32_t)len, i, 0, t->sp, NULL };
}

/* A list's slot for the task at addr (make: a new one if it has none; -1 when none is left). */
static int slot_of(struct offcpu *oc, uint64_t addr, int make)
{
	uint32_t i, free_at = oc->nslots;
	for (i = 0; i < oc->nslots; i++) {
		if (oc->t[i].id.ptr == addr) return (int)i;
		if (!oc->t[i].id.ptr && free_at == oc->nslots) free_at = i;
	}
	if (!make || !addr) return -1;
	if (free_at == oc->nslots) {
		if (oc->nslots == OFFCPU_MAX_TASKS) return -1;
		oc->nslots++;
	}
	memset(&oc->t[free_at], 0, sizeof oc->t[free_at]);
	oc->t[free_at].id.ptr = addr;
	return (int)free_at;
}

/*
 * A list (Linux's tasks, from init_task) cannot be read in one block: each stop visits `slice`
 * tasks from where the last stop left off, the first one known to be linked (the last visit read
 * the link to it) and the others predicted from the links their predecessors had at their last
 * visit -- all read in the one trip, as the stacks are. A visit whose predecessor's fresh link no
 * longer leads to it ends the stop's visits there (the list changed: the next stop starts from
 * the fresh link). The walk at the start (census) has nothing to predict from: one task a trip
 * until the list closes at its head.
 */
static int plan_list(struct offcpu *oc, struct offcpu_req *req, int cap)
{
	const struct offcpu_layout *L = &oc->L;
	uint64_t a = oc->at ? oc->at : L->table;
	uint32_t want = oc->census ? 1 : oc->slice;
	int n = 0, nv = 0;
	while ((uint32_t)nv < want && nv < OFFCPU_MAX_VISITS && n + (int)L->nblocks <= cap) {
		oc->visit[nv] = a;
		for (uint32_t b = 0; b < L->nblocks; b++)
			req[n++] = (struct offcpu_req){ a + L->blocks[b].off, L->blocks[b].len, -2 - nv,
							(uint32_t)nv * L->stride + L->blocks[b].off, 0, NULL };
		nv++;
		int s = slot_of(oc, a, 0);
		if (s < 0 || !oc->t[s].next || oc->t[s].next == L->table) break; /* unknown, or the round's end */
		a = oc->t[s].next;
	}
	oc->nvisit = nv;
	uint32_t used = 0;
	for (int k = 0; k < nv && n < cap; k++) {
		int s = slot_of(oc, oc->visit[(oc->cursor + (uint32_t)k) % (uint32_t)nv], 0);
		if (s >= 0) plan_stack(oc, s, &used, req, &n);
	}
	oc->cursor++;
	return n;
}

int offcpu_plan(struct offcpu *oc, struct offcpu_req *req, int cap)
{
	int n = 0;
	if (oc->L.mode == OL_LIST) return cap < 1 ? 0 : plan_list(oc, req, cap);
	if (cap < 1 || !oc->L.count) return 0;
	int census = !oc->st.stops; /* the first stop sees every task: their time counts from it */
	uint32_t first = census ? 0 : oc->next_first < oc->L.count ? oc->next_first : 0;
	uint32_t count = census ? oc->L.count : oc->L.count - first < oc->slice ? oc->L.count - first : oc->slice;
	oc->first = first;
	oc->nslice = count;
	if (!census) oc->next_first = first + count < oc->L.count ? first + count : 0;
	req[n++] = (struct offcpu_req){ oc->L.table + (uint64_t)first * oc->L.stride, count * oc->L.stride, -1, 0, 0, NULL };
	uint32_t used = 0;
	for (uint32_t k = 0; k < count && n < cap; k++) plan_stack(oc, (int)(first + (oc->cursor + k) % count), &used, req, &n);
	if (!census && !oc->next_first) oc->cursor++; /* a new first within each slice every round of the table */
	return n;
}

int offcpu_walked(struct offcpu *oc, const struct offcpu_hit *h, uint64_t hi, int wanted_more)
{
	struct offcpu_task *t = &oc->t[h->slot];
	if (wanted_more && h->stack->len < oc->L.window && h->stack->sp + h->stack->len < t->stack_hi) {
		/* the walk went past what was read: read the whole window next visit, the time owed again */
		t->span = 0;
		t->owed_ns += (int64_t)h->weight * unit(oc);
		oc->st.samples--;
		oc->st.weight -= h->weight;
		oc->st.short_reads++;
		return 1;
	}
	uint64_t span = hi > h->stack->sp ? hi - h->stack->sp + OFFCPU_SPAN_MARGIN : 0;
	t->span = span > oc->L.window ? oc->L.window : (uint32_t)((span + 15) & ~15ull);
	t->kept_cls = h->cls;
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

/* Linux's task states (include/linux/sched.h, stable since 4.14): the bits gdbsample reads. */
enum { LX_UNINTERRUPTIBLE = 0x2, LX_DEAD = 0x80, LX_NOLOAD = 0x400 };

/* The class of a Linux task: on a CPU (on_cpu: even mid-switch) running; state 0 runnable; D
 * (uninterruptible) unless it is TASK_IDLE (D | NOLOAD: ps's I, a kernel thread waiting for work,
 * counted as blocked as a sleep is); every other sleep (S, stopped, traced, parked) blocked; the
 * idle tasks (pid 0) and the dead left out. */
static int linux_class(uint64_t st, uint64_t on_cpu, int32_t pid)
{
	if (pid == 0 || (st & LX_DEAD)) return OC_NONE;
	if (on_cpu) return OC_RUNNING;
	if (st == 0) return OC_RUNNABLE;
	if ((st & LX_UNINTERRUPTIBLE) && !(st & LX_NOLOAD)) return OC_UNINTERRUPTIBLE;
	return OC_BLOCKED;
}

/* The class of an entry: its state mapped, idle tasks and implausible stacks left out. */
static int entry_class(const struct offcpu_layout *L, const uint8_t *e)
{
	uint64_t st = field(e, L->state_off, L->state_size);
	if (L->linux_state)
		return linux_class(st, L->on_cpu_off == OFFCPU_NO_OFF ? 0 : le32(e + L->on_cpu_off), (int32_t)le32(e + L->pid_off));
	int cls = st < sizeof L->cls ? L->cls[st] : OC_NONE;
	if (L->idle_kind >= 0 && field(e, L->kind_off, L->kind_size) == (uint64_t)L->idle_kind) return OC_NONE;
	return cls;
}

/* A visit of task t at now, its entry e: the time since its previous visit that no vCPU was seen
 * running it is owed to it (whatever the state; a task seen running has its time in the vCPUs'
 * samples), given at the next visit that finds it off-CPU and reads its stack, in that visit's
 * state -- so what a visit sees stands for the interval before it, as a sample stands for its
 * period, and a task that comes and goes is counted in proportion, not dropped. */
static void visit_entry(struct offcpu *oc, struct offcpu_task *t, const uint8_t *e, uint64_t addr, int64_t now)
{
	const struct offcpu_layout *L = &oc->L;
	int64_t dt = t->visit_ns ? now - t->visit_ns : 0; /* since this entry's previous visit */
	int64_t away = dt > t->ran_ns ? dt - t->ran_ns : 0;
	t->visit_ns = now;
	t->ran_ns = 0;
	int cls = entry_class(L, e);
	if (le64(e + L->sp_off) != t->sp) t->span = 0, t->kept = 0; /* another sp: its walk is unknown */
	t->stack_lo = le64(e + L->stack_off);
	t->stack_hi = t->stack_lo + (L->stack_size_off == OFFCPU_NO_OFF ? L->stack_size : le64(e + L->stack_size_off));
	if (cls == OC_NONE) { /* idle, free or dead: what it owed is dropped, counted */
		if (t->owed_ns > 0) oc->st.dropped_ns += (uint64_t)t->owed_ns;
		t->owed_ns = 0;
		t->cls = cls;
		t->sp = 0;
		t->kept = 0;
		return;
	}
	t->owed_ns += away;
	t->cls = cls;
	if (cls == OC_RUNNING) { /* on a CPU: its saved sp is stale; its owed time waits for a stack */
		t->sp = 0;
		return;
	}
	t->id.pid = (int32_t)le32(e + L->pid_off);
	t->id.tgid = L->tgid_off == OFFCPU_NO_OFF ? t->id.pid : (int32_t)le32(e + L->tgid_off);
	t->id.ptr = addr;
	memset(t->id.comm, 0, sizeof t->id.comm);
	memcpy(t->id.comm, e + L->name_off, L->name_len < TASK_COMM_LEN ? L->name_len : TASK_COMM_LEN);
	t->sp = le64(e + L->sp_off);
	if (L->ctx) t->pc = le64(e + L->pc_off), t->fp = le64(e + L->fp_off);
}

void offcpu_running(struct offcpu *oc, const struct sample *s, int n, int64_t now)
{
	int64_t iv = oc->last_stop_ns && now > oc->last_stop_ns ? now - oc->last_stop_ns : 0;
	oc->last_stop_ns = now;
	for (int i = 0; i < n && iv > 0; i++) {
		if (!s[i].has_task || s[i].offcpu || !s[i].task.ptr) continue;
		uint64_t p = s[i].task.ptr;
		int slot = -1;
		if (oc->L.mode == OL_LIST) slot = slot_of(oc, p, 0);
		else if (p >= oc->L.table && oc->L.stride && (p - oc->L.table) % oc->L.stride == 0 &&
			 (p - oc->L.table) / oc->L.stride < oc->L.count)
			slot = (int)((p - oc->L.table) / oc->L.stride);
		if (slot >= 0) oc->t[slot].ran_ns += iv;
	}
}

/* A list slot let go: the task left the list (its owed time dropped, counted). */
static void slot_free(struct offcpu *oc, struct offcpu_task *t)
{
	if (t->owed_ns > 0) oc->st.dropped_ns += (uint64_t)t->owed_ns;
	memset(t, 0, sizeof *t);
	oc->st.gone++;
}

/* A plausible list link: a kernel (upper-half) address, not a poisoned one. */
static int link_ok(uint64_t v)
{
	return (v >> 63) && (v & 0xffff000000000000ull) != OFFCPU_LIST_POISON;
}

/* The list's visits decoded in order; the round ends (and tasks not met in it are let go) when
 * a link leads back to the head. */
static int decode_list(struct offcpu *oc, const struct offcpu_req *req, int nreq, int64_t now)
{
	const struct offcpu_layout *L = &oc->L;
	const uint8_t *ent[OFFCPU_MAX_VISITS] = { 0 };
	int whole[OFFCPU_MAX_VISITS];
	for (int v = 0; v < oc->nvisit; v++) whole[v] = 1;
	for (int r = 0; r < nreq && req[r].slot < -1; r++) {
		int v = -2 - req[r].slot;
		if (v >= oc->nvisit) continue;
		if (!req[r].data) whole[v] = 0;
		else ent[v] = req[r].data - (req[r].dst - (uint32_t)v * L->stride);
	}
	if (oc->nvisit < 1 || !whole[0] || !ent[0]) {
		oc->st.unreadable++;
		oc->at = 0; /* from the head again */
		return -1;
	}
	oc->st.stops += !oc->census;
	for (int v = 0; v < oc->nvisit; v++) {
		const uint8_t *e = ent[v];
		uint64_t a = oc->visit[v];
		if (!whole[v] || !e) {
			oc->st.unreadable++;
			break; /* the next stop starts here (oc->at) */
		}
		/* a group's leader is on the task list, and its other threads only on their group's
		 * list (signal->thread_head, through thread_node), the leader first: the walk goes
		 * leader, its threads, then the leader's next on the task list */
		uint64_t gnx = le64(e + L->link_off), pv = le64(e + L->link_off + 8), nx;
		int threads = L->thread_off != OFFCPU_NO_OFF;
		int leader = !threads || le64(e + L->leader_off) == a;
		if (threads && !leader) pv = le64(e + L->thread_off + 8); /* its own link is that one */
		if (!link_ok(pv) || (leader && !link_ok(gnx))) { /* it left (list_del_rcu poisons prev) */
			int gone = slot_of(oc, a, 0);
			if (gone >= 0) slot_free(oc, &oc->t[gone]);
			oc->at = 0;
			break;
		}
		if (threads) {
			uint64_t tn = le64(e + L->thread_off), head = le64(e + L->signal_off) + L->thread_head_off;
			int ls = leader ? -1 : slot_of(oc, le64(e + L->leader_off), 0);
			if (link_ok(tn) && tn != head) nx = tn - L->thread_off;           /* the group's next thread */
			else if (leader) nx = gnx - L->link_off;                           /* the next group */
			else if (ls >= 0 && oc->t[ls].gnext) nx = oc->t[ls].gnext;         /* ...as its leader's link said */
			else nx = L->table; /* its leader unknown: this round ends here (its rest is seen next round) */
		} else {
			nx = gnx - L->link_off;
		}
		int s = slot_of(oc, a, 0);
		if (s < 0 && (s = slot_of(oc, a, 1)) < 0) { /* more tasks than slots: counted, skipped */
			oc->st.deferred++;
			oc->at = nx == L->table ? 0 : nx;
			break;
		}
		struct offcpu_task *t = &oc->t[s];
		t->next = nx;
		t->gnext = leader ? gnx - L->link_off : 0;
		t->gen = oc->gen;
		visit_entry(oc, t, e, a, now);
		if (t->next == L->table) { /* the round is done: whoever it did not meet has left */
			for (uint32_t i = 0; i < oc->nslots; i++)
				if (oc->t[i].id.ptr && oc->t[i].gen != oc->gen) slot_free(oc, &oc->t[i]);
			oc->gen++;
			oc->st.rounds++;
			oc->census = 0;
			oc->at = 0;
			break;
		}
		oc->at = t->next;
		if (v + 1 < oc->nvisit && oc->visit[v + 1] != t->next) { /* predicted from an old link */
			oc->st.relinked++;
			break;
		}
	}
	return 0;
}

int offcpu_decode(struct offcpu *oc, const struct offcpu_req *req, int nreq, int64_t now, struct offcpu_hit *hit,
		  int cap)
{
	const struct offcpu_layout *L = &oc->L;
	if (L->mode == OL_LIST) {
		if (decode_list(oc, req, nreq, now) < 0) return -1;
	} else {
		if (nreq < 1 || req[0].slot != -1 || !req[0].data) {
			oc->st.unreadable++;
			return -1;
		}
		oc->st.stops++;
		for (uint32_t i = oc->first; i < oc->first + oc->nslice; i++)
			visit_entry(oc, &oc->t[i], req[0].data + (size_t)(i - oc->first) * L->stride,
				    L->table + (uint64_t)i * L->stride, now);
	}
	int n = 0;
	for (int r = 0; r < nreq; r++) {
		const struct offcpu_req *q = &req[r];
		if (q->slot < 0) continue;
		struct offcpu_task *t = &oc->t[q->slot];
		if (!q->data) {
			oc->st.unreadable++;
			continue;
		}
		if (!off_cpu(t->cls) || t->sp != q->sp || (L->mode == OL_LIST && t->visit_ns != now)) {
			oc->st.stale++; /* (a list's task not visited in this stop: its entry was not re-read) */
			continue;
		}
		int64_t u = unit(oc), w = (t->owed_ns + u / 2) / u;
		if (w < 1 || n == cap) continue; /* owes less than half a period yet: later */
		t->owed_ns -= w * u;
		oc->st.samples++;
		oc->st.weight += (uint64_t)w;
		hit[n++] = (struct offcpu_hit){ q->slot, t->cls, (uint32_t)w, q };
	}
	return n;
}

int offcpu_flush(struct offcpu *oc, int64_t now, struct offcpu_hit *hit, int cap)
{
	int n = 0;
	int64_t u = unit(oc);
	for (uint32_t i = 0; i < oc->nslots && n < cap; i++) {
		struct offcpu_task *t = &oc->t[i];
		if (!t->visit_ns || t->cls == OC_NONE) continue;
		if (t->cls == OC_RUNNING) { /* last seen running: what it owes from before has no stack now */
			if (t->owed_ns > 0) oc->st.dropped_ns += (uint64_t)t->owed_ns;
			t->owed_ns = 0;
			continue;
		}
		int64_t dt = now - t->visit_ns;
		t->owed_ns += dt > t->ran_ns ? dt - t->ran_ns : 0;
		t->visit_ns = now;
		t->ran_ns = 0;
		int64_t w = (t->owed_ns + u / 2) / u;
		if (w < 1) continue;
		if (!t->kept) { /* never walked at its sp: the time cannot be given a stack */
			oc->st.dropped_ns += (uint64_t)t->owed_ns;
			t->owed_ns = 0;
			continue;
		}
		t->owed_ns -= w * u;
		oc->st.samples++;
		oc->st.weight += (uint64_t)w;
		oc->st.held++;
		hit[n++] = (struct offcpu_hit){ (int)i, t->kept_cls, (uint32_t)w, NULL };
	}
	return n;
}
