/* SPDX-License-Identifier: MIT */
/* offcpu_io.c: record --off-cpu's reads in a stop -- the task table and the saved stacks in one trip -- and their walks. */
#include "offcpu_io.h"
#include "bytes.h"
#include "offcpu_dwarf.h"
#include "offcpu_linux.h"
#include "pace.h"
#include <stdlib.h>
#include <string.h>


int offcpu_image_check(const struct image *im, char *err, size_t cap)
{
	if (im->os.os == OS_LINUX && !im->ocl_ok) {
		snprintf(err, cap, "%s", im->ocl_why);
		return -1;
	}
	if (im->os.os != OS_LINUX && (im->os.os != OS_TESTKERNEL || !im->elf)) {
		snprintf(err, cap, "--off-cpu follows the tasks of our test kernel (its DWARF) or of a Linux kernel "
			 "(its BTF): give its image with -e (%s)", im->os.why[0] ? im->os.why : "this one is neither");
		return -1;
	}
	return 0;
}

/*
 * A switched-out task of our test kernel resumes at swtch_resume_pc with its saved sp, where
 * swtch's CFI reads its saved area (kernel/arch/.../switch.S): so its walk is an ordinary one,
 * started there, over the saved stack read in the stop -- through the same unwinders, symbols and
 * range as the vCPUs' samples.
 */
/* The tasks of a Linux guest (its BTF, read at load, and symbols): the layout, or -1 with one
 * line in err. */
static int linux_layout(struct session *ss, struct offcpu_layout *L, char *err, size_t cap)
{
	if (!ss->img.ocl_ok) {
		snprintf(err, cap, "%s", ss->img.ocl_why);
		return -1;
	}
	*L = ss->img.ocl;
	return offcpu_linux_place(L, &ss->img.syms, err, cap);
}

/* 8 bytes at addr through the slicer's vCPU: 0 with *v, -1 (ss->err), 1 unreadable. */
static int read_word(struct session *ss, uint64_t addr, uint64_t *v)
{
	uint8_t buf[8];
	struct gdb_block b = { addr, 8, buf, 0 };
	if (session_slice_blocks(ss, &b, 1) < 0) return -1;
	if (!b.ok) return 1;
	*v = le64(buf);
	return 0;
}

/*
 * The list's head when the symbols do not name init_task (arm64 without CONFIG_KALLSYMS_ALL):
 * the slicer's vCPU's current task (its per-CPU pointer, as the samples find it), then its
 * tasks.next links until a task with pid 0 -- the idle tasks are on no list but init_task, the
 * head, is (a vCPU's idle task is left for its first link: swapper/N's is a copy of init_task's).
 * 0, or -1 with one line in err.
 */
static int find_head(struct session *ss, struct offcpu_layout *L, char *err, size_t cap)
{
	const struct reg *r = ss->g.layout.pcpu;
	const struct guestos *os = &ss->img.os;
	uint64_t base = 0, at, t = 0, next;
	int cpu = ss->sl.cpu >= 0 ? ss->sl.cpu : ss->cpus[0];
	int rc = -2;
	if (!r || os->os != OS_LINUX || gdb_reg(&ss->g, cpu, r->num, &base) < 0 ||
	    !(at = task_where(os, cpu, base, 0, ss->s.p.kptr_lo)) || (rc = read_word(ss, at, &t)) != 0 || !(t >> 63)) {
		if (rc == -1)
			return offcpu_fail(err, cap, "--off-cpu: reading a vCPU's current task: %s", ss->errstr);
		return offcpu_fail(err, cap, "--off-cpu: no init_task in the kernel's symbols (a kernel without "
				   "CONFIG_KALLSYMS_ALL), and no vCPU's current task to find it from");
	}
	/* a trip a task: its pid and its link together, the link read where the previous task's led */
	rc = read_word(ss, t + L->link_off, &next);
	for (int n = 0; rc == 0 && n < OFFCPU_MAX_TASKS; n++) {
		uint8_t pid[4], link[8];
		if (!(next >> 63) || next < L->link_off) break;
		t = next - L->link_off;
		struct gdb_block b[2] = { { t + L->pid_off, 4, pid, 0 }, { t + L->link_off, 8, link, 0 } };
		if (session_slice_blocks(ss, b, 2) < 0) {
			rc = -1;
			break;
		}
		if (!b[0].ok) break;
		if (le32(pid) == 0) {
			L->table = t;
			return 0;
		}
		if (!b[1].ok) break;
		next = le64(link);
	}
	if (rc < 0)
		return offcpu_fail(err, cap, "--off-cpu: looking for init_task along the task list: %s", ss->errstr);
	return offcpu_fail(err, cap, "--off-cpu: no init_task in the kernel's symbols, and the task list from the "
			   "current task (0x%llx) did not lead to it", (unsigned long long)t);
}

/* A Linux guest's list walked once (the census), in stops of the session's slicer: a task a
 * trip, since nothing predicts the next link yet. 0, or -1 (ss->err). */
static int census(struct session *ss, struct offcpu *oc, char *err, size_t cap)
{
	if (session_slice_stop(ss) < 0) goto fail;
	if (!oc->L.table && find_head(ss, &oc->L, err, cap) < 0) {
		session_slice_release(ss);
		return -1;
	}
	for (int trips = 0; oc->census; trips++) {
		if (trips > 4 * OFFCPU_MAX_TASKS) { /* a list that never closes: not followed */
			session_slice_release(ss);
			snprintf(err, cap, "--off-cpu: the task list from init_task did not close after %d reads", trips);
			return -1;
		}
		int nreq = offcpu_prepare(oc); /* the stops' own plan: one entry, nothing to predict */
		if (session_slice_blocks(ss, oc->blocks, nreq) < 0) goto fail;
		for (int i = 0; i < nreq; i++) oc->req[i].data = oc->blocks[i].ok ? oc->blocks[i].out : NULL;
		oc->nreq = 0;
		oc->st.census_reads++;
		if (offcpu_decode(oc, oc->req, nreq, pace_now(), NULL, 0) < 0 && oc->st.unreadable > 16) {
			session_slice_release(ss);
			snprintf(err, cap, "--off-cpu: the task list cannot be read at init_task (0x%llx)",
				 (unsigned long long)oc->L.table);
			return -1;
		}
	}
	if (session_slice_release(ss) < 0) goto fail;
	return 0;
fail:
	snprintf(err, cap, "--off-cpu: reading the task list: %s", ss->errstr);
	return -1;
}

/*
 * A switched-out task of our test kernel resumes at swtch_resume_pc with its saved sp, where
 * swtch's CFI reads its saved area (kernel/arch/.../switch.S); a Linux task at the instruction
 * after __switch_to_asm's store of its rsp, where ORC reads the six pushes (offcpu_linux.c): so
 * each walk is an ordinary one, started there, over the saved stack read in the stop -- through
 * the same unwinders, symbols and range as the vCPUs' samples.
 */
int offcpu_open(struct session *ss, struct offcpu **out, char *err, size_t cap)
{
	struct offcpu_layout L;
	if (ss->img.os.os == OS_LINUX) {
		if (linux_layout(ss, &L, err, cap) < 0) return -1;
	} else if (ss->img.os.os != OS_TESTKERNEL || !ss->img.elf) {
		snprintf(err, cap, "--off-cpu follows the tasks of our test kernel (its DWARF) or of Linux (its BTF); "
			 "this image is neither");
		return -1;
	} else if (offcpu_testkernel_layout(ss->img.elf, &L, err, cap) < 0) {
		return -1;
	}
	int list = L.mode == OL_LIST;
	size_t entries = list ? (size_t)OFFCPU_MAX_VISITS * L.stride : (size_t)L.count * L.stride;
	size_t kept_n = list ? OFFCPU_MAX_TASKS : L.count ? L.count : 1;
	struct offcpu *oc = malloc(sizeof *oc);
	uint8_t *table = malloc(entries ? entries : 1);
	uint32_t budget = list ? OFFCPU_LIST_WINDOW : OFFCPU_BUDGET;
	uint8_t *stacks = malloc(budget);
	struct sample *kept = calloc(kept_n, sizeof *kept);
	struct gdb_block *blocks = calloc(OFFCPU_REQS, sizeof *blocks);
	if (!oc || !table || !stacks || !kept || !blocks) {
		free(oc);
		free(table);
		free(stacks);
		free(kept);
		free(blocks);
		snprintf(err, cap, "out of memory");
		return -1;
	}
	offcpu_init(oc, &L, budget, ss->o->offcpu_slice ? ss->o->offcpu_slice : list ? OFFCPU_LIST_SLICE : OFFCPU_SLICE, ss->o->rate > 0 ? 1000000000LL / ss->o->rate : 10000000);
	oc->table_buf = table;
	oc->stack_buf = stacks;
	oc->kept_buf = kept;
	oc->blocks = blocks;
	oc->cpu = ss->sl.cpu >= 0 ? ss->sl.cpu : ss->cpus[0];
	if (list && census(ss, oc, err, cap) < 0) {
		offcpu_close(oc);
		return -1;
	}
	*out = oc;
	return 0;
}

void offcpu_close(struct offcpu *oc)
{
	if (!oc) return;
	free(oc->table_buf);
	free(oc->stack_buf);
	free(oc->kept_buf);
	free(oc->blocks);
	free(oc);
}

int offcpu_prepare(struct offcpu *oc)
{
	oc->nreq = offcpu_plan(oc, oc->req, OFFCPU_REQS);
	size_t used = 0;
	for (int i = 0; i < oc->nreq; i++) {
		uint8_t *dst = oc->req[i].slot < 0 ? oc->table_buf + oc->req[i].dst : oc->stack_buf + used;
		if (oc->req[i].slot >= 0) used += oc->req[i].len;
		oc->blocks[i] = (struct gdb_block){ oc->req[i].addr, oc->req[i].len, dst, 0 };
	}
	return oc->nreq;
}

int offcpu_take(struct session *ss, struct offcpu *oc, int sent, int cpu, int user, int64_t now, struct sample *out, int cap)
{
	struct offcpu_hit hit[OFFCPU_REQS];
	struct offcpu_req *req = oc->req;
	struct gdb_block *b = oc->blocks;
	int nreq = oc->nreq, none = 1;
	oc->nreq = 0;
	if (nreq < 1) return 0;
	for (int i = 0; sent && i < nreq; i++) none &= !b[i].ok;
	if (!sent || (none && user && cpu >= 0 && cpu != oc->cpu)) {
		/* not carried by the vCPUs' trip, or read through a vCPU in user mode (KPTI): a trip
		 * of its own through one in kernel mode */
		if (cpu < 0) {
			oc->st.no_kernel_cpu++;
			return 0;
		}
		oc->own_trips++;
		if (gdb_read_blocks(&ss->g, cpu, b, nreq) == -1)
			return -1; /* the error stays in ss->g: a rescue is recovered from there (session_sample) */
	} else {
		oc->merged++;
	}
	if (cpu >= 0) oc->cpu = cpu;
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
		in.pc = oc->L.ctx ? uw_strip(p->pac_mask, t->pc) : oc->L.resume_pc;
		in.regs.r[in.arch->sp] = q->sp;
		in.regs.valid = 1ull << in.arch->sp;
		if (oc->L.ctx) { /* arm64: the frame record chain starts at the saved x29 */
			in.regs.r[in.arch->fp] = t->fp;
			in.regs.valid |= 1ull << in.arch->fp;
		}
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
		/* as a vCPU's walk (plan.c): the stack's end, the user-mode context a syscall or an
		 * interrupt left (a task switched out on its way back to user mode), or --max-frames */
		int whole = uo.stop == UW_END || uo.stop == UW_USER || uo.stop == UW_MAXFRAMES;
		if (!whole) s->flags |= SF_UNRELIABLE;
		s->offcpu = (uint8_t)hit[h].cls;
		s->weight = hit[h].weight;
		s->has_task = 1;
		s->task = t->id;
		oc->st.stops_by[whole ? UW_END : uo.stop]++;
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
	summary_u64(t, "offcpu_tasks_table", NULL, oc->L.mode == OL_LIST ? 0 : oc->L.count);
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
	summary_u64(t, "offcpu_no_kernel_cpu", NULL, s->no_kernel_cpu);
	summary_u64(t, "offcpu_in_vcpu_trip", NULL, oc->merged);
	summary_u64(t, "offcpu_own_trips", NULL, oc->own_trips);
	if (oc->L.mode == OL_LIST) { /* a list's upkeep */
		uint32_t live = 0;
		for (uint32_t i = 0; i < oc->nslots; i++) live += oc->t[i].id.ptr != 0;
		summary_u64(t, "offcpu_list_tasks", NULL, live);
		summary_u64(t, "offcpu_list_rounds", NULL, s->rounds);
		summary_u64(t, "offcpu_list_relinked", NULL, s->relinked);
		summary_u64(t, "offcpu_list_gone", NULL, s->gone);
		summary_u64(t, "offcpu_census_reads", NULL, s->census_reads);
	}
	summary_u64(t, "offcpu_walk_other", NULL, s->samples - s->stops_by[UW_END]);
}
