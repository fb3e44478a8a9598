/* sample.c: one sample of every selected vCPU in (usually) one round trip to the gdbstub. */
#include "sample.h"
#include "err.h"
#include <stdlib.h>

/*
 * A sample is one write:
 *   0x03 ($Hg<cpu>#cs $g#cs $m<addr>,<len>#cs [$m...#cs]) for each vCPU
 * QEMU stops the VM on the 0x03 (sending a stop reply), then answers each packet in order with
 * the VM stopped; we read all replies, unwind, and resume with $c#63. The `m` windows are
 * predicted from the vCPU's previous stack pointer; if the stack moved out of them, or the chain
 * leaves them, another trip (Hg + m, no 0x03) fetches what is missing.
 */

#define REPLY_TIMEOUT_MS 3000
#define PAGE 4096ull

enum { SL_HG, SL_G, SL_M };

/* What one request in a batch was. */
struct slot {
	int kind;   /* SL_* */
	int vi;     /* index into s->v */
	int wi;     /* window index for SL_M */
};

int sampler_init(struct sampler *s, struct gdb *g, const struct symtab *syms, const int *cpus,
		 int ncpus, uint64_t klo, uint64_t khi, int max_frames)
{
	memset(s, 0, sizeof *s);
	s->g = g;
	s->syms = syms;
	s->klo = klo;
	s->khi = khi;
	s->max_frames = max_frames > SAMPLE_MAX_FRAMES ? SAMPLE_MAX_FRAMES : max_frames;
	s->v = calloc((size_t)ncpus, sizeof *s->v);
	if (!s->v) {
		ERR_SET(s, ERR_SYS, "out of memory");
		return -1;
	}
	s->nv = ncpus;
	s->stop_tid = -1;
	for (int i = 0; i < ncpus; i++) s->v[i].cpu = cpus[i];
	return 0;
}

void sampler_free(struct sampler *s)
{
	free(s->v);
	s->v = NULL;
}

/*
 * Queue windows covering [addr, end), split at every page boundary except `cross`. A read that
 * crosses into an unmapped page fails whole (E14), so a window only crosses a boundary whose
 * both sides the vCPU's previous sample read: a kernel stack that straddles two pages then
 * costs one `m` instead of two. If the crossing read fails after all, process() re-reads the
 * range page by page in the next trip of the same sample.
 */
static void add_windows(struct vcpu *v, uint64_t addr, uint64_t end, uint64_t cross)
{
	while (addr < end && v->nwin < UNWIND_MAX_CHUNKS) {
		uint64_t pend = (addr | (PAGE - 1)) + 1;
		int crosses = pend == cross && end > pend && end - addr <= SAMPLE_WINDOW;
		if (crosses) pend = (pend | (PAGE - 1)) + 1;
		uint64_t stop = pend < end ? pend : end;
		struct window *w = &v->win[v->nwin++];
		w->addr = addr;
		w->len = (int)(stop - addr);
		w->ok = 0;
		w->crosses = crosses && stop > cross;
		addr = stop;
	}
}

/* The page boundary inside [lo, hi) if both of its sides were read (0 if none). */
static uint64_t read_boundary(const struct vcpu *v)
{
	for (int a = 0; a < v->nwin; a++) {
		const struct window *w = &v->win[a];
		uint64_t end = w->addr + (uint64_t)w->len;
		if (!w->ok) continue;
		if (w->crosses) return (w->addr | (PAGE - 1)) + 1;
		if (end % PAGE) continue;
		for (int b = 0; b < v->nwin; b++)
			if (v->win[b].ok && v->win[b].addr == end) return end;
	}
	return 0;
}

/* Append one vCPU's requests for this trip; returns -1 if the batch buffer is full. */
static int queue_vcpu(struct sampler *s, int vi, char *buf, size_t cap, size_t *off,
		      struct slot *slots, int *ns)
{
	struct vcpu *v = &s->v[vi];
	char req[64];
	size_t start = *off;
	int nstart = *ns;
	if (v->elided) {
		v->hg_ok = 1; /* first in the batch: QEMU selected the stop vCPU for us */
	} else {
		gdb_hg(s->g, v->cpu, req, sizeof req);
		if (rsp_append(buf, cap, off, req) < 0) goto full;
		slots[(*ns)++] = (struct slot){ SL_HG, vi, 0 };
	}
	if (!v->nregs) {
		if (rsp_append(buf, cap, off, "g") < 0) goto full;
		slots[(*ns)++] = (struct slot){ SL_G, vi, 0 };
	}
	for (int w = v->nwin_trip; w < v->nwin; w++) {
		snprintf(req, sizeof req, "m%llx,%x", (unsigned long long)v->win[w].addr, v->win[w].len);
		s->st.mem_reads++;
		s->st.mem_bytes += (uint64_t)v->win[w].len;
		s->st.cross_reads += (uint64_t)v->win[w].crosses;
		if (rsp_append(buf, cap, off, req) < 0) goto full;
		slots[(*ns)++] = (struct slot){ SL_M, vi, w };
	}
	return 0;
full:
	*off = start;
	*ns = nstart;
	return -1;
}

/* Apply one reply event to its slot. */
static void apply(struct sampler *s, const struct slot *sl, enum gdb_ev ev)
{
	struct vcpu *v = &s->v[sl->vi];
	const char *p = s->g->dec.pkt;
	size_t len = s->g->dec.len;
	if (ev != GDB_EV_PACKET) {
		s->st.rejected++;
		if (sl->kind == SL_HG) v->hg_ok = 0;
		return;
	}
	switch (sl->kind) {
	case SL_HG:
		v->hg_ok = len == 2 && p[0] == 'O' && p[1] == 'K';
		if (!v->hg_ok) s->st.rejected++;
		break;
	case SL_G: /* only trust registers read with this vCPU selected */
		if (v->hg_ok && !rsp_is_error(p, len) && len % 2 == 0 && len / 2 <= sizeof v->regs &&
		    rsp_unhex(v->regs, p, len / 2) == 0)
			v->nregs = (int)(len / 2);
		break;
	case SL_M: {
		struct window *w = &v->win[sl->wi];
		if (v->hg_ok && len == (size_t)w->len * 2 && rsp_unhex(w->data, p, (size_t)w->len) == 0)
			w->ok = 1;
		else if (rsp_is_error(p, len) && !w->crosses)
			s->st.mem_errors++; /* a failed crossing read is retried: counted in process() */
		break;
	}
	}
}

/* Send one batch (optionally behind 0x03) and read every reply. */
/* The thread id in a stop reply "T02thread:p01.02;" (-1 if none). */
static int stop_thread(const char *pkt)
{
	const char *t = strstr(pkt, "thread:");
	return t ? gdb_parse_tid(t + 7, NULL) : -1;
}

static int trip(struct sampler *s, const char *buf, size_t len, struct slot *slots, int ns,
		int with_stop, int *stop_tid)
{
	if (gdb_write(s->g, buf, len) < 0) goto conn;
	if (with_stop) s->g->running = 0;
	int expect_stop = with_stop;
	for (int i = 0; i < ns;) {
		enum gdb_ev ev = gdb_next(s->g, REPLY_TIMEOUT_MS);
		if (ev == GDB_EV_ERROR) goto conn;
		if (ev == GDB_EV_TIMEOUT) {
			ERR_SET(s, ERR_TIMEOUT, "the gdbstub stopped answering (%d of %d replies)", i, ns);
			return -1;
		}
		if (ev == GDB_EV_PACKET && rsp_is_stop(s->g->dec.pkt, s->g->dec.len)) {
			if (expect_stop) {
				expect_stop = 0;
				*stop_tid = stop_thread(s->g->dec.pkt);
			} else {
				s->g->st.stray_stops++;
			}
			continue;
		}
		if (expect_stop) { /* a reply before any stop reply: the VM was already stopped */
			s->st.no_stop_reply++;
			expect_stop = 0;
		}
		apply(s, &slots[i++], ev);
	}
	return 0;
conn:
	ERR_SET(s, s->g->err, "%s", s->g->errstr);
	return -1;
}

/* Decide, after a trip, whether vCPU v is finished; otherwise queue what it needs next. */
static void process(struct sampler *s, struct vcpu *v, struct sample *out, int last_trip)
{
	const struct layout *l = &s->g->layout;
	if (!v->nregs) {
		if (last_trip) {
			v->done = v->failed = 1;
			s->st.reg_errors++;
		}
		return;
	}
	/* A crossing read that failed: forget the boundary, re-read page by page next trip. */
	for (int w = 0; w < v->nwin && !last_trip; w++) {
		struct window *cw = &v->win[w];
		if (!cw->crosses || cw->ok) continue;
		cw->crosses = 0;
		v->cross_ok = 0;
		s->st.cross_failed++;
		v->nwin_trip = v->nwin;
		v->refetched = 1;
		add_windows(v, cw->addr, cw->addr + (uint64_t)cw->len, 0);
		return;
	}
	struct unwind_in in = { 0 };
	struct unwind_out uo;
	in.pc = arch_reg(l->pc, v->regs, v->nregs);
	in.sp = arch_reg(l->sp, v->regs, v->nregs);
	in.fp = arch_reg(l->fp, v->regs, v->nregs);
	in.lr = arch_reg(l->lr, v->regs, v->nregs);
	in.has_lr = l->lr != NULL;
	in.fp_prev = l->arch->fp_prev;
	in.fp_ret = l->arch->fp_ret;
	in.klo = s->klo;
	in.khi = s->khi;
	in.span = SAMPLE_SPAN;
	in.max_frames = s->max_frames;
	in.pc_kind = s->syms ? syms_pc_kind(s->syms, in.pc) : PC_BODY;
	for (int w = 0; w < v->nwin; w++)
		if (v->win[w].ok && in.nchunks < UNWIND_MAX_CHUNKS)
			in.chunks[in.nchunks++] = (struct unwind_chunk){ v->win[w].addr, (uint32_t)v->win[w].len,
									 v->win[w].data };
	int user = arch_is_user(l, v->regs, v->nregs) == 1;
	/* Still halted where the previous sample found it: while in hlt nothing above sp changed
	 * (interrupts only use the stack below it), so the previous walk stands. */
	int same = v->idle_prev && in.pc == v->prev_pc && in.sp == v->prev_sp && in.fp == v->prev_fp &&
		   v->prev_n <= s->max_frames;
	if (same) {
		memcpy(out->frames, v->prev_frames, (size_t)v->prev_n * sizeof out->frames[0]);
		uo = (struct unwind_out){ .n = v->prev_n, .stop = v->prev_stop, .top = v->pred_top };
		s->st.idle_reused++;
	} else if (user) {
		uo.n = 1;
		uo.stop = UW_RANGE;
		out->frames[0] = in.pc;
	} else {
		unwind_walk(&in, out->frames, &uo);
	}
	/* The walk wants memory we have not read: fetch it next trip unless it is hopeless. */
	if (uo.stop == UW_UNREAD && !last_trip && v->nwin < UNWIND_MAX_CHUNKS) {
		int already = 0;
		for (int w = 0; w < v->nwin; w++)
			if (uo.need >= v->win[w].addr && uo.need - v->win[w].addr < (uint64_t)v->win[w].len)
				already = 1; /* it was requested and failed (unmapped): give up */
		if (!already) {
			v->need = uo.need & ~15ull;
			v->nwin_trip = v->nwin;
			add_windows(v, v->need, v->need + SAMPLE_WINDOW, 0);
			return;
		}
	}
	v->done = 1;
	if (v->refetched) { /* page by page it read fine: this gdbstub refuses crossing reads */
		int all = 1;
		for (int w = v->nwin_trip; w < v->nwin; w++) all &= v->win[w].ok;
		if (all && v->nwin_trip < v->nwin) s->cross_off = 1;
		v->refetched = 0;
	}
	if (!same) v->cross_ok = s->cross_off ? 0 : read_boundary(v);
	v->pred_sp = in.sp;
	v->pred_top = uo.top;
	v->have_pred = 1;
	v->prev_pc = in.pc;
	v->prev_sp = in.sp;
	v->prev_fp = in.fp;
	v->prev_n = uo.n;
	v->prev_stop = uo.stop;
	if (!same) memcpy(v->prev_frames, out->frames, (size_t)uo.n * sizeof out->frames[0]);
	out->cpu = (uint16_t)v->cpu;
	out->n = (uint8_t)uo.n;
	out->flags = 0;
	if (user) out->flags |= SF_USER;
	if (arch_irqs_off(l, v->regs, v->nregs) == 1) out->flags |= SF_IRQOFF;
	if (s->syms && !user && syms_after_hlt(s->syms, in.pc) == 1) out->flags |= SF_IDLE;
	v->idle_prev = (out->flags & SF_IDLE) && uo.stop != UW_UNREAD;
	if (uo.stop == UW_UNREAD || uo.stop == UW_MAXFRAMES) out->flags |= SF_PARTIAL;
	s->st.stops[uo.stop]++;
	if (v->trips == 1) s->st.hits++;
	else s->st.misses++;
}

/* The first trip's stack window: from a little below the predicted stack pointer to what the
 * previous walk read (a little above, unless it ended the chain), at most SAMPLE_WINDOW bytes,
 * split at page boundaries other than `cross` (see add_windows). */
static void predict(struct vcpu *v, uint64_t cross)
{
	uint64_t lo = (v->pred_sp - SAMPLE_SLACK) & ~15ull;
	/* A walk that reached the chain's end (a zero frame pointer) read the stack's outermost
	 * frame: nothing above it is ever needed, and above a stack's top there may be a guard page
	 * (Linux's vmap stacks), so no margin then. */
	uint64_t hi = v->pred_top + (v->prev_stop == UW_END ? 0 : SAMPLE_MARGIN);
	if (hi - lo > SAMPLE_WINDOW) hi = lo + SAMPLE_WINDOW;
	/* Every `m` costs QEMU a packet: if the slack below sp is all that crosses into the page
	 * below, give up that slack rather than send a second `m`. */
	uint64_t top_page = (hi - 1) & ~(PAGE - 1);
	if ((lo & ~(PAGE - 1)) != top_page && (v->pred_sp & ~(PAGE - 1)) == top_page && cross != top_page)
		lo = top_page;
	add_windows(v, lo, hi, cross);
}

/* A stop vCPU whose Hg was left out was not the one QEMU selected: drop what we read for it. */
static void undo_elided(struct sampler *s, struct vcpu *v)
{
	s->st.hg_wrong++;
	v->nregs = 0;
	for (int w = 0; w < v->nwin; w++) v->win[w].ok = 0;
	v->nwin_trip = 0;
}

int sampler_take(struct sampler *s, struct sample *out, int *nout)
{
	static char buf[GDB_REQ_MAX * 2];
	static int order[GDB_MAX_CPUS];
	struct slot slots[SAMPLE_GROUP * (2 + UNWIND_MAX_CHUNKS) + 8];
	int elide = -1, stopped_by_us = s->g->running;
	*nout = 0;
	for (int i = 0, k = 1; i < s->nv; i++) {
		struct vcpu *v = &s->v[i];
		v->nregs = v->nwin = v->nwin_trip = 0;
		v->done = v->failed = v->trips = v->elided = 0;
		v->refetched = 0;
		/* No window for a vCPU idle where it was (its stack is reused if it did not move), nor
		 * for one whose last walk read no stack (pc outside the kernel, user mode). */
		if (v->have_pred && !v->idle_prev && v->pred_top) predict(v, v->cross_ok);
		/* The stop vCPU goes first in the batch, with no Hg in front of its g. */
		if (stopped_by_us && elide < 0 && s->g->tids[v->cpu] == s->stop_tid) {
			elide = i;
			v->elided = 1;
			order[0] = i;
		} else {
			order[k++] = i;
		}
	}
	if (elide < 0)
		for (int i = 0; i < s->nv; i++) order[i] = i;
	for (int t = 0; t < SAMPLE_MAX_TRIPS; t++) {
		int last = t == SAMPLE_MAX_TRIPS - 1;
		/* Pipelined writes of up to SAMPLE_GROUP vCPUs each; the first carries the 0x03. */
		for (int first = 0; first < s->nv;) {
			size_t off = 0;
			int ns = 0, with_stop = t == 0 && first == 0 && s->g->running, k = first, inbatch = 0;
			int stop_tid = -1;
			if (with_stop) buf[off++] = 0x03;
			for (; k < s->nv && inbatch < SAMPLE_GROUP; k++) {
				struct vcpu *v = &s->v[order[k]];
				if (v->done) continue;
				if (queue_vcpu(s, order[k], buf, sizeof buf, &off, slots, &ns) < 0) break;
				v->trips++;
				inbatch++;
			}
			first = k;
			if (!ns && !with_stop) continue;
			s->st.trips++;
			if (trip(s, buf, off, slots, ns, with_stop, &stop_tid) < 0) return -1;
			if (with_stop) {
				if (elide >= 0 && stop_tid != s->stop_tid) undo_elided(s, &s->v[elide]);
				s->stop_tid = stop_tid;
			}
		}
		if (t == 0 && elide >= 0) {
			s->st.hg_elided++;
			s->v[elide].elided = 0; /* later trips select it explicitly */
		}
		int pending = 0;
		for (int i = 0; i < s->nv; i++) {
			if (s->v[i].done) continue;
			process(s, &s->v[i], &out[i], last);
			pending += !s->v[i].done;
		}
		if (!pending) break;
	}
	for (int i = 0; i < s->nv; i++)
		if (!s->v[i].failed) {
			out[*nout] = out[i]; /* compact: *nout <= i always */
			(*nout)++;
			s->st.vcpu_samples++;
		}
	return 0;
}

int sampler_resume(struct sampler *s)
{
	if (gdb_cont(s->g) < 0) {
		ERR_SET(s, s->g->err, "%s", s->g->errstr);
		return -1;
	}
	return 0;
}
