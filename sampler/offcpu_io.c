/* SPDX-License-Identifier: MIT */
/* offcpu_io.c: record --off-cpu's reads in a stop -- the task table and the saved stacks in one trip -- and their walks. */
#include "offcpu_io.h"
#include "offcpu_dwarf.h"
#include <stdlib.h>
#include <string.h>

#define OFFCPU_REQS 64 /* reads one stop makes at most: the table and 63 stacks */

/*
 * A switched-out task of our test kernel resumes at swtch_resume_pc with its saved sp, where
 * swtch's CFI reads its saved area (kernel/arch/.../switch.S): so its walk is an ordinary one,
 * started there, over the saved stack read in the stop -- through the same unwinders, symbols and
 * range as the vCPUs' samples.
 */
int offcpu_open(struct session *ss, struct offcpu **out, char *err, size_t cap)
{
	struct offcpu_layout L;
	if (ss->img.os.os != OS_TESTKERNEL || !ss->img.elf) {
		snprintf(err, cap, "--off-cpu follows our test kernel's tasks (its DWARF); %s",
			 ss->img.os.os == OS_LINUX ? "a Linux guest's task list is not read yet" : "this image is not it");
		return -1;
	}
	if (offcpu_testkernel_layout(ss->img.elf, &L, err, cap) < 0) return -1;
	struct offcpu *oc = malloc(sizeof *oc);
	uint8_t *table = malloc((size_t)L.count * L.stride);
	uint8_t *stacks = malloc((size_t)OFFCPU_BUDGET);
	struct sample *kept = calloc(L.count ? L.count : 1, sizeof *kept);
	if (!oc || !table || !stacks || !kept) {
		free(oc);
		free(table);
		free(stacks);
		free(kept);
		snprintf(err, cap, "out of memory");
		return -1;
	}
	offcpu_init(oc, &L, OFFCPU_BUDGET, ss->o->offcpu_slice ? ss->o->offcpu_slice : OFFCPU_SLICE, ss->o->rate > 0 ? 1000000000LL / ss->o->rate : 10000000);
	oc->table_buf = table;
	oc->stack_buf = stacks;
	oc->kept_buf = kept;
	*out = oc;
	return 0;
}

void offcpu_close(struct offcpu *oc)
{
	if (!oc) return;
	free(oc->table_buf);
	free(oc->stack_buf);
	free(oc->kept_buf);
	free(oc);
}

int offcpu_take(struct session *ss, struct offcpu *oc, int64_t now, struct sample *out, int cap)
{
	struct offcpu_req req[OFFCPU_REQS];
	struct gdb_block b[OFFCPU_REQS];
	struct offcpu_hit hit[OFFCPU_REQS];
	int nreq = offcpu_plan(oc, req, OFFCPU_REQS);
	if (nreq < 1) return 0;
	size_t used = 0;
	for (int i = 0; i < nreq; i++) {
		uint8_t *dst = req[i].slot < 0 ? oc->table_buf : oc->stack_buf + used;
		if (req[i].slot >= 0) used += req[i].len;
		b[i] = (struct gdb_block){ req[i].addr, req[i].len, dst, 0 };
	}
	if (gdb_read_blocks(&ss->g, ss->cpus[0], b, nreq) == -1)
		return -1; /* the error stays in ss->g: a rescue is recovered from there (session_sample) */
	for (int i = 0; i < nreq; i++) req[i].data = b[i].ok ? b[i].out : NULL;
	int nh = offcpu_decode(oc, req, nreq, now, hit, cap < OFFCPU_REQS ? cap : OFFCPU_REQS);
	const struct plan *p = &ss->s.p;
	const struct layout *l = ss->g.layout.arch ? &ss->g.layout : NULL;
	int n = 0;
	for (int h = 0; l && h < nh; h++) {
		const struct offcpu_task *t = &oc->t[hit[h].slot];
		const struct offcpu_req *q = hit[h].stack;
		struct unwind_in in;
		struct unwind_out uo;
		struct sample *s = &out[n];
		memset(&in, 0, sizeof in);
		in.arch = l->arch->uw;
		in.pc = oc->L.resume_pc;
		in.regs.r[in.arch->sp] = q->sp;
		in.regs.valid = 1ull << in.arch->sp;
		in.pac_mask = p->pac_mask;
		in.klo = p->cfg.klo;
		in.khi = p->cfg.khi;
		in.span = t->stack_hi - q->sp;
		in.max_frames = p->cfg.max_frames;
		in.nmethods = p->nmethods;
		memcpy(in.methods, p->methods, sizeof in.methods);
		in.nchunks = 1;
		in.chunks[0] = (struct unwind_chunk){ q->addr, q->len, q->data };
		memset(s, 0, offsetof(struct sample, frames));
		unwind_walk(&in, s->frames, &uo);
		uint64_t hi = 0;
		for (int e = 0; e < uo.nextents; e++)
			if (uo.ext[e].hi > hi) hi = uo.ext[e].hi;
		int more = uo.stop == UW_UNREAD && uo.need_reg < 0 && uo.need >= q->addr + q->len;
		if (offcpu_walked(oc, &hit[h], hi, more) || uo.n < 1) continue;
		s->n = (uint8_t)uo.n;
		memcpy(s->exact, uo.exact, sizeof s->exact);
		if (uo.stop != UW_END) s->flags |= SF_UNRELIABLE;
		s->offcpu = (uint8_t)hit[h].cls;
		s->weight = hit[h].weight;
		s->has_task = 1;
		s->task = t->id;
		oc->st.stops_by[uo.stop]++;
		oc->kept_buf[hit[h].slot] = *s; /* for the end: the time after its last visit */
		oc->t[hit[h].slot].kept = 1;
		n++;
	}
	return n;
}

int offcpu_finish(struct offcpu *oc, int64_t now, struct sample *out, int cap)
{
	struct offcpu_hit hit[OFFCPU_REQS];
	int nh = offcpu_flush(oc, now, hit, cap < OFFCPU_REQS ? cap : OFFCPU_REQS);
	for (int h = 0; h < nh; h++) {
		out[h] = oc->kept_buf[hit[h].slot];
		out[h].weight = hit[h].weight;
		out[h].offcpu = (uint8_t)hit[h].cls;
		oc->st.stops_by[UW_END] += (out[h].flags & SF_UNRELIABLE) == 0;
	}
	return nh;
}

void offcpu_summary(const struct offcpu *oc, struct summary *t)
{
	const struct offcpu_stats *s = &oc->st;
	char line[512];
	snprintf(line, sizeof line, "gdbsample: off-CPU: %llu stacks standing for %llu sample periods, over %llu stops; "
		 "%llu read where their task had moved on (read again), %llu left by the budget for later, %llu unreadable\n",
		 (unsigned long long)s->samples, (unsigned long long)s->weight, (unsigned long long)s->stops,
		 (unsigned long long)s->stale, (unsigned long long)s->deferred, (unsigned long long)s->unreadable);
	summary_text(t, line);
	summary_u64(t, "offcpu_tasks_table", NULL, oc->L.count);
	summary_u64(t, "offcpu_stops", NULL, s->stops);
	summary_u64(t, "offcpu_samples", NULL, s->samples);
	summary_u64(t, "offcpu_weight", NULL, s->weight);
	summary_u64(t, "offcpu_stale", NULL, s->stale);
	summary_u64(t, "offcpu_deferred", NULL, s->deferred);
	summary_u64(t, "offcpu_short_reads", NULL, s->short_reads);
	summary_u64(t, "offcpu_held", NULL, s->held);
	summary_u64(t, "offcpu_unreadable", NULL, s->unreadable);
	summary_u64(t, "offcpu_dropped_ns", NULL, s->dropped_ns);
	summary_u64(t, "offcpu_walk_end", NULL, s->stops_by[UW_END]);
	summary_u64(t, "offcpu_walk_other", NULL, s->samples - s->stops_by[UW_END]);
}
