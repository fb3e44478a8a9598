/* SPDX-License-Identifier: MIT */
/* offcpu.h: record --off-cpu -- the tasks that are not running, each saved stack weighed by the wall time it stood for (decisions only: offcpu_io.c reads and unwinds). */
#ifndef OFFCPU_H
#define OFFCPU_H
#include <stddef.h>
#include <stdint.h>
#include "task.h"

struct sample;
struct gdb_block;

#define OFFCPU_MAX_TASKS 4096   /* table entries followed */
#define OFFCPU_WINDOW 2048      /* bytes of a saved stack read from its sp (a walk of our kernel's
				 * switched-out task reads under 600) */
#define OFFCPU_BUDGET 4096      /* default stack bytes a stop may read (the table's slice besides) */
#define OFFCPU_LIST_WINDOW 8192 /* ...and for a Linux guest: its window and budget both (a task in
				 * poll(2) keeps ~2.5 KiB on its stack above the wait, and a walk
				 * that ends at a syscall's saved registers reads to the stack's top) */
#define OFFCPU_SLICE 4          /* default table entries a stop reads: every count/4 stops, each task */
#define OFFCPU_LIST_SLICE 2     /* ...and list entries (a Linux task is three `m` reads, a table's
				 * slice one: docs/benchmarks.md, offcpu-linux-bench) */
#define OFFCPU_SPAN_MARGIN 64   /* bytes read past where a task's last walk went */
#define OFFCPU_REQS 128         /* reads one stop makes at most: a table (or a list's 16 tasks, a
				 * few blocks each) and stacks */

/* What a task was doing at a stop, as its state says (the guest's enumerators, mapped). */
enum { OC_NONE, OC_RUNNING, OC_RUNNABLE, OC_BLOCKED, OC_UNINTERRUPTIBLE, OC_NCLASS };
/* The folded frame under the task for each class ("" for none and running). */
extern const char *const offcpu_class_frames[OC_NCLASS];

#define OFFCPU_NO_OFF UINT32_MAX   /* a field the guest's task struct does not have */
#define OFFCPU_MAX_BLOCKS 8        /* reads of one list entry (its fields, grouped) */
#define OFFCPU_MAX_VISITS 16       /* list entries a stop reads at most (a slice past it is cut) */
#define OFFCPU_LIST_POISON 0xdead000000000000ull /* Linux's list_del_rcu leaves prev at
				    * LIST_POISON2 = 0x122 + this (x86_64, arm64, riscv64) */

/* How the tasks are found: an array (our test kernel), or a circular list through a member of
 * each task, from a head task (Linux's init_task.tasks). */
enum { OL_TABLE, OL_LIST };

/* Where the guest keeps its tasks (from the image's DWARF: offcpu_dwarf.c; Linux's BTF:
 * offcpu_linux.c). */
struct offcpu_layout {
	int mode;                  /* OL_TABLE or OL_LIST */
	uint64_t table;            /* OL_TABLE: the task table's guest address: an array of the task
				    * struct; OL_LIST: the head task's address (idle: its own entry
				    * is read for the link only) */
	uint32_t count, stride;    /* OL_TABLE: its entries, and bytes each; OL_LIST: count 0, stride
				    * the bytes of an entry's buffer (past the last field read) */
	uint32_t link_off;         /* OL_LIST: the list_head (next, prev) in each task */
	uint32_t thread_off;       /* OL_LIST: a task's list_head on its group's thread list
				    * (OFFCPU_NO_OFF: leaders only) ... */
	uint32_t leader_off;       /* ...the group leader's pointer */
	uint32_t signal_off;       /* ...the pointer to the group's shared struct */
	uint32_t thread_head_off;  /* ...and the thread list's head in that struct */
	uint32_t nblocks;          /* OL_LIST: the reads of an entry, [off, off + len) each */
	struct { uint32_t off, len; } blocks[OFFCPU_MAX_BLOCKS];
	uint32_t tgid_off;         /* int32 tgid (OFFCPU_NO_OFF: the pid) */
	uint32_t on_cpu_off;       /* int32, non-zero while the task is on a CPU (OFFCPU_NO_OFF: none) */
	int linux_state;           /* the state is Linux's bit mask (cls[] unused) */
	uint64_t stack_size;       /* the stacks' size when stack_size_off is OFFCPU_NO_OFF */
	uint32_t pid_off;          /* int32 pid */
	uint32_t name_off, name_len; /* char name[name_len] */
	uint32_t state_off, state_size; /* the state enum (1, 2 or 4 bytes) */
	uint32_t kind_off, kind_size;   /* the kind enum (idle tasks are left out) */
	uint32_t sp_off;           /* the saved stack pointer while switched out (8 bytes) */
	uint32_t stack_off;        /* the stack's lowest address (8 bytes) */
	uint32_t stack_size_off;   /* ...and its size (8 bytes) */
	uint8_t cls[16];           /* state value -> OC_* (values past 15: OC_NONE) */
	int64_t idle_kind;         /* the kind value of idle tasks (-1: none) */
	uint64_t resume_pc;        /* where a switched-out task resumes: its walk starts there
				    * (0 with ctx: each task's own saved pc) */
	int ctx;                   /* 1: a switched-out task's pc and frame pointer are saved beside
				    * its sp (arm64's thread.cpu_context): its walk starts from them */
	uint32_t pc_off, fp_off;   /* ...where, 8 bytes each */
	uint32_t window;           /* bytes of a saved stack read before a walk says how far it goes
				    * (0: OFFCPU_WINDOW) */
};

/* One table entry, followed from stop to stop. */
struct offcpu_task {
	int cls;                   /* OC_* at the last stop */
	uint64_t sp;               /* its saved sp then (off-CPU), 0 unknown */
	uint64_t pc, fp;           /* ...and its saved pc and frame pointer (L.ctx) */
	uint64_t stack_lo, stack_hi; /* its stack */
	int64_t owed_ns;           /* off-CPU wall time not yet given to a sample */
	int64_t ran_ns;            /* time since its last visit a vCPU was seen running it */
	int64_t visit_ns;          /* when its entry was last read (0: never) */
	uint32_t span;             /* bytes from sp its last walk needed (+ margin), 0: unknown */
	int kept;                  /* its stack at sp was walked, the sample kept (offcpu_io.c's) */
	int kept_cls;              /* ...in this class */
	struct task_id id;         /* who it is (id.ptr: its address; OL_LIST: 0, a free slot) */
	uint64_t next;             /* OL_LIST: the next task as its last visit read it (0 unknown) */
	uint64_t gnext;            /* OL_LIST: a group leader's next on the task list (0: not a leader) */
	uint32_t gen;              /* OL_LIST: the round of the list its last visit was in */
};

/* One read a stop makes: the table (slot -1), or a slot's saved stack. */
struct offcpu_req {
	uint64_t addr;
	uint32_t len;
	int slot;                  /* the task whose stack this is, or < 0: the table or an entry */
	uint32_t dst;              /* slot < 0: where in the entries' buffer it goes (data points
				    * there: an entry's fields lie at their offsets from dst - off) */
	uint64_t sp;               /* the sp it was read for */
	const uint8_t *data;       /* the bytes, once read (NULL: unreadable) */
};

/* A task to unwind: its saved stack came whole, at the sp the table still holds. */
struct offcpu_hit {
	int slot;
	int cls;                   /* OC_RUNNABLE or OC_BLOCKED */
	uint32_t weight;           /* sample periods it stands for (>= 1) */
	const struct offcpu_req *stack; /* its read */
};

struct offcpu_stats {
	uint64_t stops;            /* stops that read the table */
	uint64_t samples;          /* off-CPU stacks produced */
	uint64_t weight;           /* ...the sample periods they stand for */
	uint64_t stale;            /* stacks read at an sp the task had left (it ran meanwhile) */
	uint64_t deferred;         /* stacks left for a later stop by the byte budget */
	uint64_t held;             /* stacks given at the end for the time since their task's last visit */
	uint64_t short_reads;      /* walks that went past a read cut to the last walk's span (read whole next visit) */
	uint64_t unreadable;       /* stacks or tables the stub would not read */
	uint64_t dropped_ns;       /* off-CPU time never given to a stack (its task ended, idled, or was never walked) */
	uint64_t stops_by[16];     /* walks by why they ended (enum unwind_stop) */
	uint64_t relinked;         /* OL_LIST: visits cut where the list had changed (read on from the new link) */
	uint64_t gone;             /* OL_LIST: tasks that left the list (exited) */
	uint64_t rounds;           /* OL_LIST: times the whole list was visited */
	uint64_t census_reads;     /* OL_LIST: trips of the walk that found the list at the start */
	uint64_t no_kernel_cpu;    /* stops with no vCPU in kernel mode to read through (none read) */
};

struct offcpu {
	struct offcpu_layout L;
	struct offcpu_task t[OFFCPU_MAX_TASKS]; /* nslots of them in use */
	uint32_t nslots;           /* OL_TABLE: L.count; OL_LIST: the slots used (some free: id.ptr 0) */
	uint64_t at;               /* OL_LIST: the task this stop's visits start at (0: the head) */
	uint32_t gen;              /* OL_LIST: the current round of the list */
	int census;                /* OL_LIST: the list is being walked for the first time */
	int nvisit;                /* OL_LIST: this stop's visits, in list order */
	uint64_t visit[OFFCPU_MAX_VISITS]; /* ...their addresses */
	uint32_t budget;           /* stack bytes a stop may read */
	uint32_t slice;            /* table entries a stop reads */
	uint32_t first, nslice;    /* this stop's slice: entries [first, first + nslice) */
	uint32_t next_first;       /* the next stop's */
	uint32_t cursor;           /* the budget's rotation: which of a slice's stacks goes first */
	int64_t period_ns;         /* one sample period (1 / -r): weights count these */
	int64_t last_stop_ns;      /* the last stop (offcpu_running): an on-CPU sample stands for
				    * the interval since */
	struct offcpu_stats st;
	uint8_t *table_buf;        /* offcpu_io.c's: where the table is read */
	uint8_t *stack_buf;        /* ...and the stacks (budget bytes) */
	struct sample *kept_buf;   /* ...each task's last walked stack (L.count) */
	struct offcpu_req req[OFFCPU_REQS]; /* offcpu_io.c's: this stop's reads, planned before it */
	int nreq;                  /* ...how many (0: none planned) */
	struct gdb_block *blocks;  /* ...as blocks the sampler carries (OFFCPU_REQS) */
	int cpu;                   /* ...through this vCPU: the last one seen in kernel mode */
	uint64_t merged;           /* stops whose reads went in the vCPUs' trip */
	uint64_t own_trips;        /* stops that read them in a trip of their own */
};

/* One line into err (cap bytes), printf-style: -1, for a layout's failures to return. */
int offcpu_fail(char *err, size_t cap, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* Start following the table L: slice entries a stop (0: all), budget bytes of stacks a stop,
 * weights in periods of period_ns. */
void offcpu_init(struct offcpu *oc, const struct offcpu_layout *L, uint32_t budget, uint32_t slice, int64_t period_ns);
/* Each stop at now, before its visits (offcpu_decode): the vCPUs' samples s (n), whose tasks
 * ran for the interval since the stop before -- time not owed to them. */
void offcpu_running(struct offcpu *oc, const struct sample *s, int n, int64_t now);
/* This stop's reads: the table's next slice first (the first stop: the whole table), then the
 * saved stacks of its tasks last seen off-CPU, from the rotation's start, while the budget lasts.
 * Returns how many (at most cap). */
int offcpu_plan(struct offcpu *oc, struct offcpu_req *req, int cap);
/* After the reads, at time now: the slice's entries' states taken from the table (req[0].data),
 * the time since its previous visit owed to each off-CPU task, and the tasks whose stack came at
 * the sp the table still holds returned in hit[] (at most cap), each weighing the periods owed.
 * -1 if the table could not be read (nothing changed). */
int offcpu_decode(struct offcpu *oc, const struct offcpu_req *req, int nreq, int64_t now, struct offcpu_hit *hit,
		  int cap);
/* A hit's walk read up to hi (exclusive); wanted_more: it stopped for want of bytes past the read.
 * A walk cut short by a read shortened to the last walk's span is taken back (its weight owed
 * again, its next read the whole window): 1, the sample is not to be kept. Else the span to read
 * next visit is remembered: 0. */
int offcpu_walked(struct offcpu *oc, const struct offcpu_hit *h, uint64_t hi, int wanted_more);
/* The run's end at now: each task its last visit found off-CPU (and walked: kept) is given what
 * it owes plus the time since that visit, under that visit's state and stack (hit[].stack NULL:
 * the caller kept the walk), at most cap; call again until it returns 0. Time of a task never
 * walked at its sp is dropped, counted. */
int offcpu_flush(struct offcpu *oc, int64_t now, struct offcpu_hit *hit, int cap);

#endif
