/* SPDX-License-Identifier: MIT */
/* plan.h: the pure half of sampling (plan.c) -- per-vCPU state between samples, the windows of
 * guest memory a sample reads, and the plan that decides them and what the replies mean. */
#ifndef PLAN_H
#define PLAN_H
#include <stddef.h>
#include <stdint.h>
#include "arch.h"
#include "guestos.h"
#include "hash.h"
#include "sample.h"
#include "symbols.h"
#include "task.h"
#include "unwind.h"

#define SAMPLE_WINDOW 2048      /* bytes of stack one `m` reads at most (QEMU's `m` limit) */
#define SAMPLE_SLACK 256        /* window starts this far below the predicted stack pointer */
#define SAMPLE_MARGIN 128       /* a stack's window ends this far above the previous walk's highest
				 * read, unless that walk ended the chain on that stack */
#define SAMPLE_EXTENT_MAX 4096  /* at most this much of one stack is predicted */
#define SAMPLE_PREDICT_MAX 8    /* windows a prediction may use: the rest of UNWIND_MAX_CHUNKS is
				 * left for what the walk turns out to need */
#define SAMPLE_SPAN 32768       /* one stack's frames lie within this many bytes above its base */
#define PCPU_TRIES 16           /* error replies to `p` for the per-CPU register before giving up */
enum { PREG_MODE, PREG_FLAGS, PREG_N }; /* registers outside `g` read with `p` each sample */

/* A register read with `p` for the walk. */
enum { XR_WANTED, XR_READ, XR_FAILED };

/* What a window holds. */
enum { WIN_STACK, WIN_TEXT, WIN_TASKPTR, WIN_TASK };

/* A window of guest memory read from a vCPU. */
struct window {
	uint64_t addr;                 /* guest address */
	int len;                       /* bytes requested (crossing at most vcpu.cross_ok) */
	int ok;                        /* 1 once read */
	int crosses;                   /* spans a page boundary (allowed by vcpu.cross_ok) */
	int kind;                      /* WIN_*: stack; kernel text (idle tagging); the per-CPU
					 * current-task pointer; a task's identity fields */
	int predicted;                 /* speculative: predicted from the previous sample, or read
					 * ahead of what the walk needs (not the window holding it) */
	int via_kernel;                /* read it through another vCPU that is in kernel mode (a
					 * user-mode vCPU's tables map no kernel data under KPTI) */
	uint8_t data[SAMPLE_WINDOW];   /* the bytes */
};

/* Per-vCPU state kept between samples. */
struct vcpu {
	int cpu;                       /* vCPU index in gdb->tids */
	int have_pred;                 /* pred_sp is valid */
	uint64_t pred_sp;              /* stack pointer at the previous sample: predicts this one's */
	int pred_next;                 /* stacks the previous walk read (0: none, e.g. user mode) */
	struct uw_extent pred_ext[UW_MAX_EXTENTS]; /* ...[lowest, one past the highest) byte of each */
	int pred_last;                 /* the stack its last frame was on */
	uint64_t depth;                /* how deep below the first stack's top recent samples' stack
					* pointers were (a decaying maximum): the first window reaches
					* this far down, so a deeper call than the last one still hits */
	int elided;                    /* this trip's Hg was left out (vCPU is the stop vCPU) */
	int user_prev;                 /* the previous sample was in user mode or firmware */
	int firmware_prev;             /* ...in firmware (riscv64 M-mode) */
	int task_via_tried;            /* this sample's task reads were retried via another vCPU */
	int idle_prev;                 /* the previous sample found it halted in hlt: its stack is
					* not read again if pc, sp and fp are unchanged */
	uint64_t prev_pc, prev_sp, prev_fp; /* registers of the previous sample */
	int prev_n;                    /* frames of the previous sample */
	enum unwind_stop prev_stop;    /* why its walk ended */
	uint64_t prev_exact[4];        /* ...its exact-frame bits */
	uint64_t prev_frames[SAMPLE_MAX_FRAMES]; /* ...and the frames themselves */
	int hg_ok;                     /* this trip's Hg was accepted */
	int nregs;                     /* bytes in regs (0 = not read yet this sample) */
	uint8_t regs[1024];            /* decoded `g` reply */
	int nwin;                      /* windows in use this sample */
	struct window win[UNWIND_MAX_CHUNKS + 4]; /* stack read this sample, one text block, and
						   * the current task's pointer and fields */
	int nwin_trip;                 /* windows requested in the current trip start at this index */
	uint64_t cross_ok;             /* a page boundary whose both sides the last sample read (0 =
	                                * none, and always 0 once the plan's cross_off): the next
	                                * window may cross it in one `m` */
	int refetched;                 /* a failed crossing read is being re-read page by page */
	int done;                      /* sample finished (or given up) */
	int failed;                    /* no usable registers: sample dropped */
	uint64_t task_at;              /* where the vCPU's current-task pointer is (task_where: from the
					* per-CPU base, x86 kernel GS base, aarch64 TPIDR_EL1, or the
					* description's register or array; 0 = not learned yet): fixed
					* per vCPU (never set for CR_TASK, where the register is the task) */
	int pcpu_read;                 /* pcpu_val holds this sample's `p` reply for the per-CPU
					* register (when it is not in `g`) */
	uint64_t pcpu_val;             /* ...its value */
	int pcpu_fails;                /* `p` replies that were errors: asking stops at PCPU_TRIES */
	int preg_read[PREG_N];         /* preg_val[k] holds this sample's `p` reply for the plan's
					* preg[k] (a register outside `g` read each sample: riscv64's
					* priv and sstatus) */
	uint64_t preg_val[PREG_N];     /* ...its value */
	int preg_fails[PREG_N];        /* `p` replies for it that were errors: asking stops at PCPU_TRIES */
	int xreg;                      /* DWARF number of a register outside `g` this sample's walk
					* asked for (aarch64 ELR_EL1, at an exception vector), -1 none */
	int xreg_state;                /* XR_*: where that read stands */
	uint64_t xreg_val;             /* ...its value once read */
	uint64_t pred_task;            /* the task the previous sample found (0 none): its identity
					* is re-read with every sample, in the first trip */
	uint64_t task_ptr;             /* this sample's current-task pointer (0 = not read yet) */
	int task_state;                /* TS_*: how far this sample's attribution got */
	struct task_id task;           /* ...and what it found */
	int trips;                     /* round trips this sample needed */
};

/* The plan's counters, all in the summary (stats.c's rows of the counter table): those of its
 * decisions and its windows (the sampler reports each `m` sent and each error reply:
 * plan_count_read, plan_count_error). The wire's own are the sampler's (wirestats.h). */
struct sampler_stats {
	uint64_t hits;                  /* vCPU samples done in the first round trip */
	uint64_t misses;                /* vCPU samples that needed another trip */
	uint64_t reg_errors;            /* vCPU samples dropped: registers unreadable */
	uint64_t mem_errors;            /* `m` replies that were errors (E14: unmapped) to memory the
					 * walk needed */
	uint64_t stale_windows;         /* ...and to speculative reads: windows the previous sample
					 * predicted (a task switch may have freed that stack) or read
					 * ahead past what the walk needed (into a guard page) */
	uint64_t cross_reads;           /* `m` reads that crossed a page boundary (see add_windows) */
	uint64_t cross_failed;          /* ...that failed and were re-read page by page */
	uint64_t mem_reads;             /* `m` requests sent */
	uint64_t mem_bytes;             /* bytes they asked for */
	uint64_t idle_reused;           /* idle vCPU samples whose unchanged stack was not re-read */
	uint64_t text_reads;            /* kernel text blocks read from the guest to tag idle samples
					 * (a map without the image's text: once per 64 bytes of text) */
	uint64_t irq_vector;            /* stops on an IRQ/FIQ vector's first instruction (aarch64),
					 * counted as the interrupted pc (plan.c) */
	uint64_t reg_reads;             /* registers outside `g` a walk needed, read with `p` in
					 * another trip (aarch64: ELR_EL1 at an exception vector) */
	struct task_stats task;         /* task attribution (task.h) */
	uint64_t stops[UW_NSTOPS];      /* why walks ended */
	uint64_t frames[UM_N];          /* frames each unwinding method produced */
	uint64_t stops_by[UM_N + 1][UW_NSTOPS]; /* why walks ended, by the method of their last
					 * step ([UM_N]: no step was taken) */
};

/* What the sampler needs to know besides the connection. */
struct sampler_cfg {
	const struct symtab *syms;      /* kernel text (idle tagging, prologues), or NULL */
	int nmethods;                   /* unwinding methods, in order of preference (0: frame pointers) */
	int order[UM_N];                /* ...UM_* each */
	void *orc;                      /* struct orc_table for UM_ORC */
	void *cfi;                      /* struct cfi_ctx for UM_CFI */
	uint64_t klo, khi;              /* kernel range */
	int max_frames;                 /* frame cap */
	const struct guestos *os;       /* task layout (NULL or OS_NONE: no attribution) */
	uint64_t pac_mask;              /* pointer-authentication bits of kernel code pointers as the
					 * stub reports them (QEMU >= 8: pauth_cmask[_high]), 0: derive
					 * them from the text (arch_pac_mask) */
};

/* The pure half of sampling (plan.c): which windows each vCPU needs, and what its replies mean. */
struct plan {
	const struct layout *l;         /* the `g` layout */
	struct sampler_cfg cfg;         /* symbols, unwinders, range, frame cap */
	struct fp_ctx fp;               /* the frame-pointer unwinder's context */
	struct unwinder uw[UM_N];       /* every method (used or not) */
	int nmethods;                   /* those in use, in order of preference */
	const struct unwinder *methods[UM_N];
	int cross_off;                  /* 1 once a crossing read failed where page-by-page reads
					 * worked: this gdbstub refuses them, never cross again */
	struct hash tc;                 /* kernel text read for idle tagging: block address ->
					 * its bytes (plan.c's text blocks; text never changes) */
	struct taskcache tasks;         /* task identities by task pointer */
	const struct reg *pcpu, *pcpu_alt; /* the per-CPU base register(s) (x86 gs_base, k_gs_base;
					 * aarch64 TPIDR_EL1, read with `p`), NULL: absent */
	int pcpu_by_p;                  /* pcpu is not in the `g` reply: read it with `p` */
	int pcpu_kernel;                /* a register a task description names: its value is the
					 * kernel's only in kernel mode (never learned from a user-mode sample) */
	const struct reg *preg[PREG_N]; /* registers read with `p` each sample (PREG_MODE: the mode
					 * register, PREG_FLAGS: the flags; riscv64 priv, sstatus), NULL:
					 * in `g` or absent */
	int task_via_kernel;            /* user-mode vCPUs read task data through a kernel-mode one
					 * (aarch64 Linux: KPTI unmaps the kernel at EL0) */
	uint64_t pac_mask;              /* return-address bits a pointer-authentication code may fill
					 * (arch_pac_mask of the kernel text; 0 none) */
	uint64_t kptr_lo;               /* kernel pointers (per-CPU base, task) lie at or above this:
					 * the upper half, or (a kernel linked below it) the first page's end */
	uint32_t task_lo, task_len;     /* the identity fields' span in a task struct (task_span) */
	int64_t now_ns;                 /* when this round started (the cache's clock) */
	struct sampler_stats st;        /* counters */
};

/* 1 if task attribution runs (cfg.os knows the layout and the stub has the per-CPU register). */
int plan_tasks_on(const struct plan *p);
/* 1 if v's next trip must read the per-CPU register with `p` (its base is not known yet). */
int plan_wants_pcpu(const struct plan *p, const struct vcpu *v);
/* The register (PREG_*) v's next trip must read with `p` each sample (riscv64 priv, sstatus), or NULL. */
const struct reg *plan_wants_preg(const struct plan *p, const struct vcpu *v, int k);
/* Whether v's sample is outside the kernel's context -- user mode, or firmware below the kernel
 * (riscv64 M-mode, whose registers are the firmware's: OpenSBI swaps tp on entry): 1, 0, or -1
 * unknown (from `g`, or the mode read with `p`; before this sample's registers are in, the
 * previous sample's answer). Either way only the pc is recorded, and kernel data is read through
 * another vCPU where the stub translates by the vCPU's mode. */
int plan_vcpu_user(const struct plan *p, const struct vcpu *v);
/* Whether that is firmware (riscv64 M-mode): 1, 0, -1 unknown (as plan_vcpu_user). */
int plan_vcpu_firmware(const struct plan *p, const struct vcpu *v);
/* Whether v's sample ran with interrupts off: 1, 0, -1 unknown (from `g`, or the flags read with `p`). */
int plan_vcpu_irqs_off(const struct plan *p, const struct vcpu *v);
/* The register v's next trip must read with `p` for its walk, or NULL. */
const struct reg *plan_wants_xreg(const struct plan *p, const struct vcpu *v);
/* Set up the plan (cfg copied; no methods = the frame-pointer walk). */
void plan_init(struct plan *p, const struct layout *l, const struct sampler_cfg *cfg);
/* A new sample: forget v's windows, and queue the ones its previous sample predicts. */
void plan_first(struct plan *p, struct vcpu *v);
/* After a trip: 1 if v's sample is finished (out filled, or v->failed), 0 if it queued windows
 * for another trip (from v->nwin_trip on). last_trip: no more trips are possible. */
int plan_after_trip(struct plan *p, struct vcpu *v, struct sample *out, int last_trip);
/* A window's `m` request was sent / its reply was an error: the plan counts its windows' reads
 * (stack bytes asked, page crossings) and tells a loss from speculation (a predicted or
 * read-ahead window that proved unmapped). */
void plan_count_read(struct plan *p, const struct window *w);
void plan_count_error(struct plan *p, const struct window *w);
/* The walk's inputs from v's registers and the stack read so far (chunks point into v). */
void plan_walk_input(const struct plan *p, const struct vcpu *v, struct unwind_in *in);
void plan_free(struct plan *p);

#endif
