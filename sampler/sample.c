/* SPDX-License-Identifier: MIT */
/* sample.c: one sample of every selected vCPU in (usually) one round trip to the gdbstub. */
#include "sampler.h"
#include "err.h"
#include "pace.h"
#include <stdlib.h>

/*
 * The I/O half of sampling (plan.c decides what to read and what replies mean). A sample is one write:
 *   0x03 ($Hg<cpu>#cs $g#cs $m<addr>,<len>#cs [$m...#cs]) for each vCPU
 * (plus $p<n>#cs after the g while the vCPU's per-CPU register -- aarch64's TPIDR_EL1, outside
 * QEMU's `g` -- is not known yet).
 * QEMU stops the VM on the 0x03 (sending a stop reply), then answers each packet in order with
 * the VM stopped; we read all replies, unwind, and resume with $c#63. The `m` windows are
 * predicted from the vCPU's previous stack pointer; if the stack moved out of them, or the chain
 * leaves them, another trip (Hg + m, no 0x03) fetches what is missing.
 */

/* A sample's replies: QEMU answers in well under a millisecond, but a loaded host (two CPU hogs,
 * four QEMUs) once kept it from answering a batch for 3 s -- its vCPU threads had to run to stop
 * -- and a migration's last step, which holds QEMU's main lock while it writes the rest of RAM,
 * kept the last reply of a batch (8 of 9 answered) for over 10 s beside two hogs (QEMU 7.2,
 * migrating to a pipe). Nothing for this long: it stopped answering. */
#define REPLY_TIMEOUT_MS 30000

enum { SL_HG, SL_G, SL_P, SL_M, SL_HGV, SL_XHG, SL_XM }; /* SL_HGV: Hg to another vCPU for via_kernel
							     * reads; SL_X*: the caller's own reads */

/* What one request in a batch was. */
struct slot {
	int kind;   /* SL_* */
	int vi;     /* index into s->v (SL_XM: the caller's block) */
	int wi;     /* window index for SL_M (SL_XM: the offset in its block) */
};

int sampler_init(struct sampler *s, struct gdb *g, const struct sampler_cfg *cfg, const int *cpus, int ncpus)
{
	memset(s, 0, sizeof *s);
	s->g = g;
	plan_init(&s->p, &g->layout, cfg);
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
	plan_free(&s->p);
}

/* Another vCPU than vi in kernel mode (by its registers this sample, else its last sample's
 * mode), whose translation maps kernel data; -1 if none. */
static int kernel_vcpu(const struct sampler *s, int vi)
{
	for (int i = 0; i < s->nv; i++) {
		const struct vcpu *o = &s->v[i];
		int user = plan_vcpu_user(&s->p, o) == 1;
		if (i != vi && !user) return i;
	}
	return -1;
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
	for (int k = 0; k < PREG_N; k++) {
		const struct reg *r = plan_wants_preg(&s->p, v, k);
		if (!r) continue;
		snprintf(req, sizeof req, "p%x", r->num);
		if (rsp_append(buf, cap, off, req) < 0) goto full;
		slots[(*ns)++] = (struct slot){ SL_P, vi, 2 + k };
	}
	if (plan_wants_pcpu(&s->p, v)) {
		snprintf(req, sizeof req, "p%x", s->p.pcpu->num);
		if (rsp_append(buf, cap, off, req) < 0) goto full;
		slots[(*ns)++] = (struct slot){ SL_P, vi, 0 };
	}
	const struct reg *x = plan_wants_xreg(&s->p, v);
	if (x) {
		snprintf(req, sizeof req, "p%x", x->num);
		if (rsp_append(buf, cap, off, req) < 0) goto full;
		slots[(*ns)++] = (struct slot){ SL_P, vi, 1 };
	}
	int on = vi; /* the vCPU `m` translates through */
	for (int w = v->nwin_trip; w < v->nwin; w++) {
		int want = v->win[w].via_kernel ? kernel_vcpu(s, vi) : vi;
		if (want < 0) want = vi;
		if (want != on) {
			gdb_hg(s->g, s->v[want].cpu, req, sizeof req);
			if (rsp_append(buf, cap, off, req) < 0) goto full;
			slots[(*ns)++] = (struct slot){ SL_HGV, want, 0 };
			on = want;
		}
		snprintf(req, sizeof req, "m%llx,%x", (unsigned long long)v->win[w].addr, v->win[w].len);
		plan_count_read(&s->p, &v->win[w]);
		if (rsp_append(buf, cap, off, req) < 0) goto full;
		slots[(*ns)++] = (struct slot){ SL_M, vi, w };
	}
	return 0;
full:
	*off = start;
	*ns = nstart;
	return -1;
}

/* Append the caller's reads (s->xb) behind an Hg to their vCPU; -1 if the batch has no room for
 * them all (then none go: the caller reads them itself). */
static int queue_extra(struct sampler *s, char *buf, size_t cap, size_t *off, struct slot *slots, int *ns, int room)
{
	char req[64];
	size_t start = *off;
	int nstart = *ns;
	gdb_hg(s->g, s->xcpu, req, sizeof req);
	if (room < 1 || rsp_append(buf, cap, off, req) < 0) goto full;
	slots[(*ns)++] = (struct slot){ SL_XHG, 0, 0 };
	for (int i = 0; i < s->nxb; i++) {
		s->xb[i].ok = 1;
		for (size_t at = 0; at < s->xb[i].len; at += GDB_MEM_MAX) {
			size_t n = s->xb[i].len - at < GDB_MEM_MAX ? s->xb[i].len - at : GDB_MEM_MAX;
			snprintf(req, sizeof req, "m%llx,%zx", (unsigned long long)(s->xb[i].addr + at), n);
			if (*ns - nstart >= room || rsp_append(buf, cap, off, req) < 0) goto full;
			slots[(*ns)++] = (struct slot){ SL_XM, i, (int)at };
		}
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
	const char *p = s->g->dec.pkt;
	size_t len = s->g->dec.len;
	if (sl->kind == SL_XHG) { /* refused: the reads behind it went through another vCPU */
		if (ev != GDB_EV_PACKET || !(len == 2 && p[0] == 'O' && p[1] == 'K'))
			for (int i = 0; i < s->nxb; i++) s->xb[i].ok = 0;
		return;
	}
	if (sl->kind == SL_XM) {
		struct gdb_block *b = &s->xb[sl->vi];
		size_t n = b->len - (size_t)sl->wi < GDB_MEM_MAX ? b->len - (size_t)sl->wi : GDB_MEM_MAX;
		if (ev != GDB_EV_PACKET || gdb_parse_mem(p, len, b->out + sl->wi, n) < 0) b->ok = 0;
		return;
	}
	struct vcpu *v = &s->v[sl->vi];
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
	case SL_HGV: /* a failed switch leaves `m` on the previous vCPU: its reads fail or are the
		      * same global kernel data */
		if (!(len == 2 && p[0] == 'O' && p[1] == 'K')) s->st.rejected++;
		break;
	case SL_G: /* only trust registers read with this vCPU selected, and all the walk needs */
		if (v->hg_ok && !rsp_is_error(p, len) && len % 2 == 0 && len / 2 <= sizeof v->regs &&
		    len / 2 >= (size_t)s->g->layout.need && rsp_unhex(v->regs, p, len / 2) == 0)
			v->nregs = (int)(len / 2);
		else if (v->hg_ok)
			s->st.rejected++; /* a short or garbled `g`: no sample at pc 0 */
		break;
	case SL_P: { /* wi 0: the per-CPU register; 1: one the walk needs; 2 + k: preg[k] (the mode,
		     * the flags). Little-endian, as in `g` */
		uint8_t b[8] = { 0 };
		int ok = v->hg_ok && len >= 2 && len % 2 == 0 && len / 2 <= 8 && !rsp_is_error(p, len) &&
			 rsp_unhex(b, p, len / 2) == 0;
		if (sl->wi == 1) {
			v->xreg_state = ok ? XR_READ : XR_FAILED;
			v->xreg_val = ok ? rsp_le(b, (int)(len / 2)) : 0;
		} else if (sl->wi >= 2) { /* a register read each sample: PREG_MODE, PREG_FLAGS */
			int k = sl->wi - 2;
			v->preg_read[k] = ok;
			v->preg_val[k] = ok ? rsp_le(b, (int)(len / 2)) : 0;
			if (!ok && v->hg_ok) v->preg_fails[k]++;
		} else if (ok) {
			v->pcpu_val = rsp_le(b, (int)(len / 2));
			v->pcpu_read = 1;
		} else if (v->hg_ok) {
			v->pcpu_fails++; /* an error or empty reply: no such register after all */
		}
		break;
	}
	case SL_M: {
		struct window *w = &v->win[sl->wi];
		if (v->hg_ok && len == (size_t)w->len * 2 && rsp_unhex(w->data, p, (size_t)w->len) == 0)
			w->ok = 1;
		else if (rsp_is_error(p, len))
			plan_count_error(&s->p, w); /* a loss, or only speculation: the plan's to say */
		break;
	}
	}
}

/* Send one batch (optionally behind 0x03) and read every reply. */
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
				s->stopped_at_ns = pace_now();
				*stop_tid = gdb_stop_tid(s->g->dec.pkt, s->g->dec.len);
			} else {
				s->g->st.stray_stops++;
			}
			continue;
		}
		if (expect_stop) { /* a reply before any stop reply: the VM was already stopped */
			s->st.no_stop_reply++;
			s->stopped_at_ns = pace_now();
			expect_stop = 0;
		}
		apply(s, &slots[i++], ev);
	}
	return 0;
conn:
	ERR_SET(s, s->g->err, "%s", s->g->errstr);
	return -1;
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
	struct slot slots[SAMPLE_GROUP * (8 + UNWIND_MAX_CHUNKS) + 8 + SAMPLE_EXTRA_MAX + 1]; /* Hg g p p, and
										 * windows; the caller's */
	int elide = -1, stopped_by_us = s->g->running;
	*nout = 0;
	s->x_sent = 0;
	s->stopped_at_ns = 0;
	s->p.now_ns = pace_now();
	for (int i = 0, k = 1; i < s->nv; i++) {
		struct vcpu *v = &s->v[i];
		v->nregs = 0;
		v->done = v->failed = v->trips = v->elided = 0;
		plan_first(&s->p, v); /* the windows its previous sample predicts */
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
			if (with_stop && s->nxb > 0 && queue_extra(s, buf, sizeof buf, &off, slots, &ns, SAMPLE_EXTRA_MAX) == 0)
				s->x_sent = 1; /* behind the vCPUs' requests, in the stop's own write */
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
			s->v[i].done = plan_after_trip(&s->p, &s->v[i], &out[i], last);
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
