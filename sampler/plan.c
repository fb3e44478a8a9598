/* SPDX-License-Identifier: MIT */
/* plan.c: the pure half of sampling -- which memory each vCPU's sample needs, given its previous
 * sample, and what the replies mean (unwind, idle, flags). No I/O: sample.c sends and receives. */
#include "plan.h"
#include "bytes.h"
#include "insn.h"
#include "unwind_cfi.h"
#include "unwind_orc.h"
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

#define PAGE 4096ull
#define STACK_ALIGN 16384ull /* kernel stacks end at a multiple of this (Linux THREAD_SIZE on x86_64) */
#define MISS_BELOW 64ull     /* a missed read starts this far below the word the walk needs: the next
			      * steps read slots just below a frame's CFA too (saved registers) */
#define TEXTCACHE_MAX (1u << 14) /* text blocks remembered (then every new pc costs a read) */
#define TEXT_BLOCK 64            /* bytes of text read and kept at a time */
#define WIN_CAP (UNWIND_MAX_CHUNKS + 2) /* windows before the text block and a new task's fields:
				  * the pointer and the predicted task's fields may take two */

static int text_byte(const struct plan *p, uint64_t addr);

static int plan_byte(const void *p, uint64_t addr)
{
	return text_byte(p, addr);
}

/* The frame-pointer method's questions about text (insn.c), answered for the guest's machine. */
static enum unwind_pc pc_kind(const void *arg, uint64_t pc, int *adj)
{
	const struct plan *p = arg;
	const struct sym *s = syms_lookup(p->cfg.syms, pc);
	*adj = 0;
	return p->l->arch->pc_kind ? p->l->arch->pc_kind(plan_byte, p, s ? s->addr : 0, s != NULL, pc, adj) : PC_BODY;
}

/*
 * Where an aarch64 exception vector's entry has run nothing of the handler (symbol `vectors`, as
 * in our kernel and Linux: 16 entries of 0x80 bytes): its first instruction -- QEMU takes an
 * exception it finds pending before it honours a stop, so a stop often lands there -- or a pc
 * after only instructions of Linux's kernel_ventry prologue (a64_vector_prologue: sp and x0
 * moved, nothing stored). Returns the entry's index (0-15) and *first (1 at its first
 * instruction), or -1.
 */
static int vector_at(const struct plan *p, uint64_t pc, int *first)
{
	if (!p->l->arch->vectors || !p->cfg.syms) return -1;
	const struct sym *s = syms_lookup(p->cfg.syms, pc);
	if (!s || strcmp(s->name, p->l->arch->vectors) || pc - s->addr >= 0x800 || (pc & 3)) return -1;
	uint64_t start = pc & ~(uint64_t)0x7f;
	for (uint64_t a = start; a < pc; a += 4) {
		uint32_t w = 0;
		for (int i = 0; i < 4; i++) {
			int b = text_byte(p, a + (uint64_t)i);
			if (b < 0) return -1;
			w |= (uint32_t)b << (8 * i);
		}
		if (!a64_vector_prologue(w)) return -1;
	}
	if (first) *first = pc == start;
	return (int)((start - s->addr) / 0x80);
}

/* An IRQ or FIQ vector (entries 1 and 2 of each group of four) where nothing of it has run. */
static int irq_vector_entry(const struct plan *p, uint64_t pc)
{
	int e = vector_at(p, pc, NULL);
	return e >= 0 && (e % 4 == 1 || e % 4 == 2);
}

/* Any exception vector where nothing of it has run (fp_ctx.vector): entries 0-7 take exceptions
 * from the current EL (the kernel), 8-15 from a lower one (user mode). */
static int vector_entry(const void *arg, uint64_t pc)
{
	int first = 0, e = vector_at(arg, pc, &first);
	if (e < 0) return 0;
	return e >= 8 ? FP_VEC_USER : first ? FP_VEC_KERNEL : FP_VEC_KERNEL_MOVED;
}

static int after_call(const void *arg, uint64_t ra)
{
	const struct plan *p = arg;
	return p->l->arch->after_call ? p->l->arch->after_call(plan_byte, p, ra) : -1;
}

/* Which bits of a return address may hold a pointer-authentication code (arch_pac_mask): from
 * the kernel's text range -- the map's or image's _stext.._etext, else its names' span. */
static uint64_t pac_mask(const struct layout *l, const struct sampler_cfg *cfg)
{
	const struct symtab *t = cfg->syms;
	uint64_t lo = cfg->klo, hi = cfg->khi;
	if (t && (t->marks >> MARK_STEXT & 1) && (t->marks >> MARK_ETEXT & 1)) {
		lo = t->mark[MARK_STEXT];
		hi = t->mark[MARK_ETEXT];
	} else if (t && t->n) {
		lo = t->syms[0].addr;
		hi = t->syms[t->n - 1].addr + 1;
	}
	return arch_pac_mask(l->arch, lo, hi);
}

void plan_init(struct plan *p, const struct layout *l, const struct sampler_cfg *cfg)
{
	memset(p, 0, sizeof *p);
	hash_init(&p->tc, TEXT_BLOCK);
	p->l = l;
	p->cfg = *cfg;
	const struct arch *a = l->arch;
	p->fp = (struct fp_ctx){ cfg->syms ? pc_kind : NULL, p, SAMPLE_SPAN, cfg->syms ? after_call : NULL,
				 cfg->syms && a->vectors ? vector_entry : NULL, a->elr,
				 a->elr >= 0 && cfg->os && cfg->os->pt_valid, cfg->os ? cfg->os->pt_lr : 0,
				 cfg->os ? cfg->os->pt_sp : 0, a->switch_stacks };
	p->uw[UM_FP] = (struct unwinder){ UM_FP, &p->fp, fp_step };
	p->uw[UM_CFI] = (struct unwinder){ UM_CFI, cfg->cfi, cfi_step };
	p->uw[UM_ORC] = (struct unwinder){ UM_ORC, cfg->orc, orc_step };
	for (int k = 0; k < cfg->nmethods && k < UM_N; k++)
		if ((cfg->order[k] == UM_FP) || (cfg->order[k] == UM_CFI && cfg->cfi) ||
		    (cfg->order[k] == UM_ORC && cfg->orc))
			p->methods[p->nmethods++] = &p->uw[cfg->order[k]];
	if (!p->nmethods) p->methods[p->nmethods++] = &p->uw[UM_FP];
	if (p->cfg.max_frames > SAMPLE_MAX_FRAMES) p->cfg.max_frames = SAMPLE_MAX_FRAMES;
	if (cfg->os && cfg->os->os != OS_NONE && cfg->os->cur_reg[0]) {
		/* a description's register: read with `p` (one more reply in the same trip) */
		p->pcpu = arch_find_reg(l, cfg->os->cur_reg);
		p->pcpu_by_p = p->pcpu_kernel = 1;
	} else if (!cfg->os || cfg->os->cur_how != CR_NONE) {
		p->pcpu = l->pcpu;
		p->pcpu_alt = l->pcpu_alt;
		p->pcpu_by_p = l->arch->pcpu_by_p;
	}
	p->preg[PREG_MODE] = l->arch->mode_by_p ? l->mode : NULL;
	p->preg[PREG_FLAGS] = l->arch->flags_by_p ? l->flags : NULL;
	p->kptr_lo = cfg->klo >> 63 ? 1ull << 63 : 0x1000;
	p->pac_mask = cfg->pac_mask ? cfg->pac_mask : pac_mask(l, cfg);
	p->task_via_kernel = cfg->os && (cfg->os->cur_how == CR_RAW || cfg->os->os == OS_DESC);
	if (cfg->os && cfg->os->os != OS_NONE) task_span(cfg->os, &p->task_lo, &p->task_len);
}

/* Attribution is on: the OS layer knows the layout, the stub gives the register it needs (none
 * for a global the description names), the fields fit one window. */
int plan_tasks_on(const struct plan *p)
{
	return p->cfg.os && p->cfg.os->os != OS_NONE && (p->pcpu || p->cfg.os->cur_how == CR_NONE) && p->task_len &&
	       p->task_len <= SAMPLE_WINDOW;
}

const struct reg *plan_wants_preg(const struct plan *p, const struct vcpu *v, int k)
{
	return p->preg[k] && !v->preg_read[k] && v->preg_fails[k] < PCPU_TRIES ? p->preg[k] : NULL;
}

int plan_vcpu_firmware(const struct plan *p, const struct vcpu *v)
{
	if (!v->nregs) return v->firmware_prev;
	if (p->preg[PREG_MODE])
		return v->preg_read[PREG_MODE] ? arch_is_firmware_mode(p->l, v->preg_val[PREG_MODE]) : -1;
	return 0; /* a mode in `g` (x86 cs, aarch64 cpsr): no firmware mode the sampler meets */
}

int plan_vcpu_user(const struct plan *p, const struct vcpu *v)
{
	if (!v->nregs) return v->user_prev;
	if (plan_vcpu_firmware(p, v) == 1) return 1;
	if (p->preg[PREG_MODE])
		return v->preg_read[PREG_MODE] ? arch_is_user_mode(p->l, v->preg_val[PREG_MODE]) : -1;
	return arch_is_user(p->l, v->regs, v->nregs);
}

int plan_vcpu_irqs_off(const struct plan *p, const struct vcpu *v)
{
	if (p->preg[PREG_FLAGS])
		return v->preg_read[PREG_FLAGS] ? arch_irqs_off_flags(p->l, v->preg_val[PREG_FLAGS]) : -1;
	return arch_irqs_off(p->l, v->regs, v->nregs);
}

const struct reg *plan_wants_xreg(const struct plan *p, const struct vcpu *v)
{
	return v->xreg >= 0 && v->xreg_state == XR_WANTED ? p->l->dwarf[v->xreg] : NULL;
}

int plan_wants_pcpu(const struct plan *p, const struct vcpu *v)
{
	return p->pcpu_by_p && p->pcpu && plan_tasks_on(p) && !v->task_at && !v->pcpu_read &&
	       v->pcpu_fails < PCPU_TRIES && v->task_state == TS_PENDING;
}

void plan_free(struct plan *p)
{
	hash_free(&p->tc);
	taskcache_free(&p->tasks);
}

/* ---- the text byte before a pc (is the vCPU halted in hlt?) ---- */

/* Text read from the guest is kept in aligned TEXT_BLOCK-byte blocks: one read serves every pc
 * of a loop, and text never changes. The cached byte at addr, or -1. */
static int tc_get(const struct hash *c, uint64_t addr)
{
	uint64_t block = addr & ~(uint64_t)(TEXT_BLOCK - 1);
	struct hash_item *it = hash_find(c, &block, sizeof block);
	return it ? ((const uint8_t *)hash_value(it))[addr - block] : -1;
}

/* Remember a block (all zeros if it could not be read: not hlt, and never asked again). */
static void tc_put(struct hash *c, uint64_t block, const uint8_t *data)
{
	if (c->n >= TEXTCACHE_MAX) return;
	uint8_t *val = hash_get(c, &block, sizeof block, NULL);
	if (val && data) memcpy(val, data, TEXT_BLOCK);   /* a new block is zero-filled already */
}

/* The kernel byte at addr: from the image's text, else from what the guest gave; -1 unknown. */
static int text_byte(const struct plan *p, uint64_t addr)
{
	int b = p->cfg.syms ? syms_byte(p->cfg.syms, addr) : -1;
	return b >= 0 ? b : tc_get(&p->tc, addr);
}

/* ---- windows ---- */

/*
 * Queue windows covering [addr, end), split at SAMPLE_WINDOW and at every page boundary except
 * `cross`. A read that crosses into an unmapped page fails whole (E14), so a window only
 * crosses a boundary whose both sides the vCPU's previous sample read: a kernel stack that
 * straddles two pages then costs one `m` instead of two. If the crossing read fails after all,
 * the next trip re-reads the range page by page.
 */
static void add_windows(struct vcpu *v, uint64_t addr, uint64_t end, uint64_t cross, int max, int predicted)
{
	while (addr < end && v->nwin < max) {
		uint64_t pend = (addr | (PAGE - 1)) + 1;
		if (pend == cross) pend = (pend | (PAGE - 1)) + 1;
		uint64_t stop = pend < end ? pend : end;
		if (stop - addr > SAMPLE_WINDOW) stop = addr + SAMPLE_WINDOW;
		struct window *w = &v->win[v->nwin++];
		w->addr = addr;
		w->len = (int)(stop - addr);
		w->ok = 0;
		w->kind = WIN_STACK;
		w->via_kernel = 0;
		w->predicted = predicted;
		w->crosses = cross && addr < cross && stop > cross;
		addr = stop;
	}
}

/* Another trip is needed for what is queued next: the first queued of the trip marks where the
 * trip's requests start. */
static void queue_more(struct vcpu *v, int *more)
{
	if (!*more) v->nwin_trip = v->nwin;
	*more = 1;
}

void plan_count_read(struct plan *p, const struct window *w)
{
	if (w->kind != WIN_STACK) return; /* text and task bytes are counted apart */
	p->st.mem_reads++;
	p->st.mem_bytes += (uint64_t)w->len;
	p->st.cross_reads += (uint64_t)w->crosses;
}

void plan_count_error(struct plan *p, const struct window *w)
{
	if (w->kind == WIN_TASKPTR || w->kind == WIN_TASK) return; /* attribution counts its own losses */
	if (w->crosses) return;         /* retried page by page: refetch_crossing counts it */
	if (w->predicted) p->st.stale_windows++; /* speculative: no loss */
	else p->st.mem_errors++;
}

/* Queue a read for attribution (the pointer, or a task's identity fields). */
static void want_task(struct plan *p, struct vcpu *v, int kind, uint64_t addr, uint32_t len, int predicted)
{
	struct window *w = &v->win[v->nwin++];
	w->addr = addr;
	w->len = (int)len;
	w->ok = w->crosses = 0;
	/* in user mode now (its registers are in), or last time (the first trip's guess) */
	w->via_kernel = p->task_via_kernel &&
			plan_vcpu_user(p, v) == 1 ? 1 : 0;
	w->predicted = predicted;
	w->kind = kind;
	p->st.task.reads++;
	p->st.task.bytes += len;
}

static const struct window *find_win(const struct vcpu *v, int kind, uint64_t addr)
{
	for (int w = v->nwin - 1; w >= 0; w--) /* the latest: a retry's */
		if (v->win[w].kind == kind && (!addr || v->win[w].addr == addr)) return &v->win[w];
	return NULL;
}

static void task_lost(struct plan *p, struct vcpu *v)
{
	v->task_state = TS_LOST;
	v->pred_task = 0;
	p->st.task.lost++;
}

/* The task pointer t is read: its identity from this trip's fields, the cache, or the next trip. */
static void task_fields(struct plan *p, struct vcpu *v, uint64_t t, int last_trip, int *more)
{
	struct task_stats *ts = &p->st.task;
	if (!task_ptr_ok(t, p->kptr_lo)) { task_lost(p, v); return; }
	v->task_ptr = t;
	const struct window *fw = find_win(v, WIN_TASK, t + p->task_lo);
	struct task_id id;
	if (fw && fw->ok) {
		if (task_decode(p->cfg.os, t, fw->data, (uint32_t)fw->len, &id) < 0) { task_lost(p, v); return; }
		ts->renamed += (uint64_t)taskcache_put(&p->tasks, &id, p->now_ns);
		if (fw->predicted) ts->verified++;
		else ts->misses++;
	} else if (fw && !fw->predicted) {
		{ task_lost(p, v); return; } /* the fields of a pointer just read would not read */
	} else {
		const struct task_id *c = taskcache_get(&p->tasks, t, p->now_ns);
		if (!c) {
			if (last_trip) { task_lost(p, v); return; }
			queue_more(v, more);
			want_task(p, v, WIN_TASK, t + p->task_lo, p->task_len, 0);
			return;
		}
		id = *c;
		ts->hits++;
	}
	v->task = id;
	v->task_state = TS_DONE;
	v->pred_task = t;
}

/* This sample's value of the register the task's place comes from (0: not read). */
static uint64_t task_reg(const struct plan *p, const struct vcpu *v)
{
	if (!p->pcpu) return 0;
	return p->pcpu_by_p ? (v->pcpu_read ? v->pcpu_val : 0) : arch_reg(p->pcpu, v->regs, v->nregs);
}

/*
 * Attribution after a trip. The first trip read the pointer (its address is fixed once the
 * vCPU's per-CPU base, or the description's register, is known) and the identity of the task the
 * previous sample found. The same task: those fields are this sample's identity, fresh. Another
 * task: the cache, if it read that task within TASK_VALID_NS; else its fields are read next
 * trip. A vCPU's first sample learns the base from its registers and reads the pointer next
 * trip. Where the register is the task (CR_TASK) there is no pointer to read: every sample takes
 * it from the register, in kernel mode only.
 */
static void task_after_trip(struct plan *p, struct vcpu *v, int last_trip, int *more)
{
	const struct guestos *os = p->cfg.os;
	if (v->task_state != TS_PENDING) return;
	if (os->cur_how == CR_TASK) {
		if (plan_vcpu_user(p, v) != 0) { task_lost(p, v); return; } /* the register is the user's */
		uint64_t t = task_where(os, v->cpu, task_reg(p, v), 0, p->kptr_lo);
		if (!t) { task_lost(p, v); return; }
		task_fields(p, v, t, last_trip, more);
		return;
	}
	if (!v->task_at) {
		/* x86: gs_base or k_gs_base, in `g`; aarch64: TPIDR_EL1, read with `p` in the first trip;
		 * a description's register: with `p`, and only from a kernel-mode sample */
		if (p->pcpu_kernel && plan_vcpu_user(p, v) != 0) { task_lost(p, v); return; }
		/* ...and never from firmware's registers (OpenSBI swaps tp with mscratch on entry) */
		if (plan_vcpu_firmware(p, v) == 1) { task_lost(p, v); return; }
		uint64_t b = p->pcpu_alt ? arch_reg(p->pcpu_alt, v->regs, v->nregs) : 0;
		v->task_at = task_where(os, v->cpu, task_reg(p, v), b, p->kptr_lo); /* (0: not read) */
		if (!v->task_at) { task_lost(p, v); return; } /* no per-CPU base yet (early boot) */
	}
	const struct window *pw = find_win(v, WIN_TASKPTR, 0);
	if (!pw) {
		if (last_trip) { task_lost(p, v); return; }
		queue_more(v, more);
		want_task(p, v, WIN_TASKPTR, v->task_at, 8, 0);
		return;
	}
	if (!pw->ok && p->task_via_kernel && !pw->via_kernel && !v->task_via_tried && !last_trip &&
	    plan_vcpu_user(p, v) == 1) {
		/* it turned to user mode since the last sample: read through a kernel-mode vCPU */
		v->task_via_tried = 1;
		queue_more(v, more);
		want_task(p, v, WIN_TASKPTR, v->task_at, 8, 0);
		return;
	}
	if (!pw->ok) { task_lost(p, v); return; }
	task_fields(p, v, le64(pw->data), last_trip, more);
}

/* A page boundary both of whose sides were read this sample (0 if none). */
static uint64_t read_boundary(const struct vcpu *v)
{
	for (int a = 0; a < v->nwin; a++) {
		const struct window *w = &v->win[a];
		uint64_t end = w->addr + (uint64_t)w->len;
		if (!w->ok || w->kind != WIN_STACK) continue;
		if (w->crosses) return (w->addr | (PAGE - 1)) + 1;
		if (end % PAGE) continue;
		for (int b = 0; b < v->nwin; b++)
			if (v->win[b].ok && v->win[b].kind == WIN_STACK && v->win[b].addr == end) return end;
	}
	return 0;
}

/*
 * The first trip's windows: for each stack the previous walk read, from a little below where it
 * began (the predicted stack pointer, for the first) to a little above its highest read --
 * no margin above the stack on which the chain ended: that was its outermost frame, and above
 * a stack's top there may be a guard page (Linux's vmap stacks), which would fail the read.
 */
void plan_first(struct plan *p, struct vcpu *v)
{
	v->nwin = v->nwin_trip = 0;
	v->refetched = 0;
	v->task_ptr = 0;
	v->task_state = TS_PENDING;
	v->task_via_tried = 0;
	v->pcpu_read = 0;
	v->preg_read[PREG_MODE] = v->preg_read[PREG_FLAGS] = 0;
	v->xreg = -1;
	if (plan_tasks_on(p)) { /* the pointer's address is fixed per vCPU; re-read who ran last time */
		if (!v->task_at && p->cfg.os->cur_how == CR_NONE) /* a global: known before any register */
			v->task_at = task_where(p->cfg.os, v->cpu, 0, 0, p->kptr_lo);
		if (v->task_at) want_task(p, v, WIN_TASKPTR, v->task_at, 8, 0);
		if (v->pred_task) want_task(p, v, WIN_TASK, v->pred_task + p->task_lo, p->task_len, 1);
	}
	if (!v->have_pred || v->idle_prev || !v->pred_next) return;
	uint64_t cross = p->cross_off ? 0 : v->cross_ok;
	int ended = v->prev_stop == UW_END || v->prev_stop == UW_USER;
	for (int k = 0; k < v->pred_next; k++) {
		const struct uw_extent *e = &v->pred_ext[k];
		uint64_t lo = k ? e->lo : e->hi - v->depth < v->pred_sp ? e->hi - v->depth : v->pred_sp;
		lo = (lo - (k ? 0 : SAMPLE_SLACK)) & ~15ull;
		if (k == 0 && e->hi - lo > SAMPLE_EXTENT_MAX) lo = (e->hi - SAMPLE_EXTENT_MAX) & ~15ull;
		uint64_t hi = e->hi + (ended && k == v->pred_last ? 0 : SAMPLE_MARGIN);
		if (hi <= lo) continue;
		if (hi - lo > SAMPLE_EXTENT_MAX) hi = lo + SAMPLE_EXTENT_MAX;
		/* Every `m` costs QEMU a packet: if the slack below sp is all that crosses into the
		 * page below, give up that slack rather than send a second `m`. */
		uint64_t top_page = (hi - 1) & ~(PAGE - 1);
		if (k == 0 && (lo & ~(PAGE - 1)) != top_page && (v->pred_sp & ~(PAGE - 1)) == top_page &&
		    cross != top_page)
			lo = top_page;
		add_windows(v, lo, hi, cross, SAMPLE_PREDICT_MAX, 1);
	}
}

/* ---- replies ---- */

static int in_kernel(const struct plan *p, uint64_t a)
{
	return a >= p->cfg.klo && a <= p->cfg.khi;
}

/* Queue the text block holding addr for the next trip. */
static void want_text(struct vcpu *v, uint64_t addr)
{
	struct window *w = &v->win[v->nwin++];
	w->addr = addr & ~(uint64_t)(TEXT_BLOCK - 1);
	w->len = TEXT_BLOCK;
	w->ok = w->crosses = w->predicted = w->via_kernel = 0;
	w->kind = WIN_TEXT;
}

void plan_walk_input(const struct plan *p, const struct vcpu *v, struct unwind_in *in)
{
	const struct layout *l = p->l;
	memset(in, 0, offsetof(struct unwind_in, chunks));
	in->arch = l->arch->uw;
	in->pc = arch_reg(l->pc, v->regs, v->nregs);
	arch_dwarf_regs(l, v->regs, v->nregs, &in->regs);
	/* Registers outside the `g` reply (aarch64's ELR_EL1): read for this walk, or readable */
	for (int d = 0; d < l->arch->uw->nregs; d++) {
		const struct reg *r = l->dwarf[d];
		if (!r || r->off + r->size <= v->nregs) continue;
		if (v->xreg == d && v->xreg_state == XR_READ) {
			in->regs.r[d] = v->xreg_val;
			in->regs.valid |= 1ull << d;
		} else if (v->xreg != d) {
			in->fetchable |= 1ull << d;
		}
	}
	in->user = plan_vcpu_user(p, v) == 1;
	in->pac_mask = p->pac_mask;
	in->klo = p->cfg.klo;
	in->khi = p->cfg.khi;
	in->span = SAMPLE_SPAN;
	in->max_frames = p->cfg.max_frames;
	in->nmethods = p->nmethods;
	memcpy(in->methods, p->methods, sizeof in->methods);
	for (int w = 0; w < v->nwin; w++)
		if (v->win[w].ok && v->win[w].kind == WIN_STACK && in->nchunks < UNWIND_MAX_CHUNKS)
			in->chunks[in->nchunks++] = (struct unwind_chunk){ v->win[w].addr, (uint32_t)v->win[w].len,
									   v->win[w].data };
}

/* ---- after a trip, step by step (plan_after_trip) ---- */

/* Decides whether a vCPU whose registers did not come is waited for (another trip may bring
 * them: 0) or dropped (the last trip: 1, v->failed, counted). */
static int without_registers(struct plan *p, struct vcpu *v, int last_trip)
{
	if (!last_trip) return 0;
	v->failed = 1;
	p->st.reg_errors++;
	return 1;
}

/* Decides whether a crossing read failed: then the boundary is forgotten and the range queued
 * page by page for the next trip (1, counted); 0 if none did. */
static int refetch_crossing(struct plan *p, struct vcpu *v)
{
	for (int w = 0; w < v->nwin; w++) {
		struct window *cw = &v->win[w];
		if (!cw->crosses || cw->ok) continue;
		cw->crosses = 0;
		v->cross_ok = 0;
		p->st.cross_failed++;
		v->nwin_trip = v->nwin;
		v->refetched = 1;
		add_windows(v, cw->addr, cw->addr + (uint64_t)cw->len, 0, WIN_CAP, cw->predicted);
		return 1;
	}
	return 0;
}

/* Keeps the text blocks that arrived for idle tagging (an unreadable one as "not hlt"). */
static void keep_text(struct plan *p, const struct vcpu *v)
{
	for (int w = 0; w < v->nwin; w++)
		if (v->win[w].kind == WIN_TEXT) tc_put(&p->tc, v->win[w].addr, v->win[w].ok ? v->win[w].data : NULL);
}

/* Decides whether the previous walk stands: a vCPU still halted where the previous sample found
 * it (same pc, sp, fp) -- while in hlt nothing above sp changed, interrupts only use the stack
 * below it -- reuses it (1, counted); otherwise the stack is walked (0). */
static int walk_or_reuse(struct plan *p, const struct vcpu *v, const struct unwind_in *in, uint64_t sp,
			 uint64_t fp, struct sample *out, struct unwind_out *uo)
{
	int same = v->idle_prev && in->pc == v->prev_pc && sp == v->prev_sp && fp == v->prev_fp &&
		   v->prev_n <= p->cfg.max_frames;
	if (!same) {
		unwind_walk(in, out->frames, uo);
		return 0;
	}
	memcpy(out->frames, v->prev_frames, (size_t)v->prev_n * sizeof out->frames[0]);
	memset(uo, 0, sizeof *uo);
	uo->n = v->prev_n;
	uo->stop = v->prev_stop;
	uo->stop_method = -1;
	memcpy(uo->exact, v->prev_exact, sizeof uo->exact);
	p->st.idle_reused++;
	return 1;
}

/* Decides whether the walk stopped for a register outside `g`: it is read with `p` next trip
 * (once a sample, counted). */
static void want_register(struct plan *p, struct vcpu *v, const struct unwind_out *uo, int *more)
{
	if (uo->stop != UW_UNREAD || uo->need_reg < 0 || v->xreg >= 0) return;
	v->xreg = uo->need_reg;
	v->xreg_state = XR_WANTED;
	queue_more(v, more);
	p->st.reg_reads++;
}

/* Decides whether the walk stopped for memory not read yet and worth a trip: not when it was
 * asked for already (and failed: unmapped) or the windows are used up. Then it reads ahead to
 * the next STACK_ALIGN boundary, where a kernel stack (Linux: 16 KiB, aligned so) ends and a
 * guard page may begin, from a little below the word; the windows split at pages, so an
 * unmapped page costs only its own read. The read-ahead is speculative, the word's window not. */
static void want_stack(struct vcpu *v, const struct unwind_out *uo, int *more)
{
	if (uo->stop != UW_UNREAD || uo->need_reg >= 0 || v->nwin >= WIN_CAP) return;
	for (int w = 0; w < v->nwin; w++)
		if (v->win[w].kind == WIN_STACK && uo->need >= v->win[w].addr &&
		    uo->need - v->win[w].addr < (uint64_t)v->win[w].len)
			return;
	uint64_t lo = (uo->need - MISS_BELOW) & ~15ull, hi = (uo->need | (STACK_ALIGN - 1)) + 1;
	if (hi - lo < 16) hi += PAGE; /* the word itself straddles the boundary */
	if (hi - lo > SAMPLE_EXTENT_MAX) hi = lo + SAMPLE_EXTENT_MAX;
	queue_more(v, more);
	int from = v->nwin;
	add_windows(v, lo, hi, 0, WIN_CAP, 1);
	for (int w = from; w < v->nwin; w++)
		if (uo->need - v->win[w].addr < (uint64_t)v->win[w].len) v->win[w].predicted = 0;
}

/* Decides whether the vCPU is idle -- halted: just after `hlt` (x86), at or just after
 * `wfi`/`wfe` (aarch64) -- 1, 0, or -1 unknown (user mode, outside the kernel, no symbols, or
 * text not known). Given symbols but no image text (a map), the text block is asked of the
 * guest for the next trip, once a sample (counted). */
static int idle_or_ask(struct plan *p, struct vcpu *v, const struct unwind_in *in, int last_trip, int *more)
{
	if (!p->cfg.syms || in->user || !in_kernel(p, in->pc)) return -1;
	uint64_t need = 0;
	int idle = p->l->arch->idle ? p->l->arch->idle(plan_byte, p, in->pc, &need) : 0;
	int asked = 0;
	for (int w = 0; w < v->nwin; w++) asked |= v->win[w].kind == WIN_TEXT; /* once a sample, even if it failed */
	if (idle < 0 && !asked && !last_trip && p->tc.n < TEXTCACHE_MAX) {
		queue_more(v, more);
		want_text(v, need);
		p->st.text_reads++;
	}
	return idle;
}

/* Decides, once a re-read page by page is complete, whether this gdbstub refuses crossing reads:
 * every page read fine where the crossing read failed -- then no read crosses again. */
static void learn_cross_off(struct plan *p, struct vcpu *v)
{
	if (!v->refetched) return;
	int all = 1, any = 0;
	for (int w = v->nwin_trip; w < v->nwin; w++)
		if (v->win[w].kind == WIN_STACK) {
			all &= v->win[w].ok;
			any = 1;
		}
	if (all && any) p->cross_off = 1;
	v->refetched = 0;
}

/* Decides what the next sample predicts: the stacks this walk read, how deep (a decaying
 * maximum), the boundary it may cross -- unless it read no kernel stack (user mode, a pc outside
 * the kernel) or reused the previous walk: then the previous prediction stands. Also keeps this
 * sample's registers and chain for the next one's reuse. */
static void remember(const struct plan *p, struct vcpu *v, const struct unwind_in *in, const struct unwind_out *uo,
		     uint64_t sp, uint64_t fp, const struct sample *out, int same)
{
	int read_stack = uo->nextents && uo->ext[0].hi > uo->ext[0].lo;
	if (!same && read_stack) {
		v->cross_ok = p->cross_off ? 0 : read_boundary(v);
		v->pred_next = uo->nextents;
		memcpy(v->pred_ext, uo->ext, sizeof v->pred_ext);
		v->pred_last = uo->last_extent;
		uint64_t d = uo->ext[0].hi - sp;
		v->depth = d > v->depth - v->depth / 64 ? d : v->depth - v->depth / 64;
		if (v->depth > SAMPLE_EXTENT_MAX) v->depth = SAMPLE_EXTENT_MAX;
		v->pred_sp = sp;
		v->have_pred = 1;
	}
	if (!same) {
		memcpy(v->prev_frames, out->frames, (size_t)uo->n * sizeof out->frames[0]);
		memcpy(v->prev_exact, uo->exact, sizeof v->prev_exact);
	}
	v->prev_pc = in->pc;
	v->prev_sp = sp;
	v->prev_fp = fp;
	v->prev_n = uo->n;
	v->prev_stop = uo->stop;
}

/* Decides what the sample says: its chain (an interrupt vector's stop moved to the interrupted
 * pc), its task, and its flags -- user, interrupts off, idle (as idle_or_ask found, or at the
 * interrupted pc), partial, unreliable. Counts the vector stops. */
static void make_sample(struct plan *p, struct vcpu *v, const struct unwind_in *in, const struct unwind_out *uo,
			int idle, struct sample *out)
{
	const struct layout *l = p->l;
	out->cpu = (uint16_t)v->cpu;
	out->has_task = v->task_state == TS_DONE;
	if (out->has_task) out->task = v->task;
	out->n = (uint8_t)uo->n;
	memcpy(out->exact, uo->exact, sizeof out->exact);
	out->flags = 0;
	/* Stopped on an interrupt vector before its first instruction ran: the sample is the
	 * interrupted pc's (frame 1, exact: ELR_EL1 through the entry's CFI), taken with interrupts
	 * on (an interrupt is taken only then), as the in-guest profilers would see it. Counted. */
	int at_vector = !in->user && out->n >= 2 && (out->exact[0] & 2) && irq_vector_entry(p, in->pc);
	if (at_vector) {
		memmove(out->frames, out->frames + 1, (size_t)(out->n - 1) * sizeof out->frames[0]);
		out->n--;
		for (int w = 0; w < 4; w++)
			out->exact[w] = (out->exact[w] >> 1) | (w < 3 ? out->exact[w + 1] << 63 : 0);
		out->exact[0] &= ~1ull;
		p->st.irq_vector++;
		uint64_t need0;
		idle = l->arch->idle ? l->arch->idle(plan_byte, p, out->frames[0], &need0) : 0; /* woken from wfi */
	}
	/* ...and one from user mode (an EL0 vector) is a user-mode sample. */
	int user_vector = !in->user && !at_vector && out->n == 1 && uo->stop == UW_USER &&
			  vector_entry(p, in->pc) == FP_VEC_USER;
	if (user_vector) {
		if (irq_vector_entry(p, in->pc)) p->st.irq_vector++; /* a sync one: the trap not yet begun */
		if (v->xreg == 33 && v->xreg_state == XR_READ) out->frames[0] = v->xreg_val; /* the user pc */
	}
	int firmware = in->user && plan_vcpu_firmware(p, v) == 1;
	if (firmware) out->flags |= SF_FIRMWARE;
	else if (in->user || user_vector) out->flags |= SF_USER;
	v->user_prev = in->user;
	v->firmware_prev = firmware;
	if (!at_vector && !user_vector && !in->user && plan_vcpu_irqs_off(p, v) == 1) out->flags |= SF_IRQOFF;
	if (idle == 1) out->flags |= SF_IDLE;
	v->idle_prev = idle == 1 && uo->stop != UW_UNREAD;
	if (uo->stop == UW_UNREAD || uo->stop == UW_MAXFRAMES) out->flags |= SF_PARTIAL;
	if (!in->user && (uo->stop != UW_END && uo->stop != UW_USER && uo->stop != UW_MAXFRAMES))
		out->flags |= SF_UNRELIABLE;
	for (int m = 0; m < UM_N && !in->user; m++) /* frames from a method other than the first: guesses */
		if (uo->by_method[m] && p->nmethods > 1 && m != p->methods[0]->method) out->flags |= SF_UNRELIABLE;
}

/* Counts the finished sample: why its walk ended (by method, and each method's frames, unless
 * the walk was reused), and whether its first trip sufficed. */
static void count_sample(struct plan *p, const struct vcpu *v, const struct unwind_out *uo, int same)
{
	struct sampler_stats *st = &p->st;
	st->stops[uo->stop]++;
	if (!same) {
		st->stops_by[uo->stop_method < 0 ? UM_N : uo->stop_method][uo->stop]++;
		for (int m = 0; m < UM_N; m++) st->frames[m] += uo->by_method[m];
	}
	if (v->trips == 1) st->hits++;
	else st->misses++;
}

int plan_after_trip(struct plan *p, struct vcpu *v, struct sample *out, int last_trip)
{
	const struct layout *l = p->l;
	if (!v->nregs) return without_registers(p, v, last_trip);      /* wait for them, or drop */
	if (!last_trip && refetch_crossing(p, v)) return 0;            /* a crossing read failed */
	keep_text(p, v);                                               /* text that arrived */
	struct unwind_in in;
	struct unwind_out uo;
	plan_walk_input(p, v, &in);
	uint64_t sp = arch_reg(l->sp, v->regs, v->nregs), fp = arch_reg(l->fp, v->regs, v->nregs);
	int same = walk_or_reuse(p, v, &in, sp, fp, out, &uo);         /* walk, or an idle vCPU's last */
	int more = 0;
	if (!last_trip) want_register(p, v, &uo, &more);               /* the walk needs a `p` */
	if (!last_trip) want_stack(v, &uo, &more);                     /* ...or more stack */
	int idle = idle_or_ask(p, v, &in, last_trip, &more);           /* halted? (may ask for text) */
	if (plan_tasks_on(p)) task_after_trip(p, v, last_trip, &more); /* who ran (may need a trip) */
	if (more) return 0;
	learn_cross_off(p, v);                                         /* does the stub refuse crossings? */
	remember(p, v, &in, &uo, sp, fp, out, same);                   /* what the next sample predicts */
	make_sample(p, v, &in, &uo, idle, out);                        /* chain, task, flags */
	count_sample(p, v, &uo, same);
	return 1;
}
