/* SPDX-License-Identifier: MIT */
/* offcpu.h: record --off-cpu -- the tasks that are not running, each saved stack weighed by the wall time it stood for (decisions only: offcpu_io.c reads and unwinds). */
#ifndef OFFCPU_H
#define OFFCPU_H
#include <stddef.h>
#include <stdint.h>
#include "task.h"

struct sample;

#define OFFCPU_MAX_TASKS 4096   /* table entries followed */
#define OFFCPU_WINDOW 2048      /* bytes of a saved stack read from its sp (a walk of our kernel's
				 * switched-out task reads under 600) */
#define OFFCPU_BUDGET 4096      /* default stack bytes a stop may read (the table's slice besides) */
#define OFFCPU_SLICE 4          /* default table entries a stop reads: every count/4 stops, each task */
#define OFFCPU_SPAN_MARGIN 64   /* bytes read past where a task's last walk went */

/* What a task was doing at a stop, as its state says (the guest's enumerators, mapped). */
enum { OC_NONE, OC_RUNNING, OC_RUNNABLE, OC_BLOCKED, OC_NCLASS };
/* The folded frame under the task for each class ("" for none and running). */
extern const char *const offcpu_class_frames[OC_NCLASS];

/* Where the guest keeps its tasks (from the image's DWARF: offcpu_dwarf.c). */
struct offcpu_layout {
	uint64_t table;            /* the task table's guest address: an array of the task struct */
	uint32_t count, stride;    /* its entries, and bytes each */
	uint32_t pid_off;          /* int32 pid */
	uint32_t name_off, name_len; /* char name[name_len] */
	uint32_t state_off, state_size; /* the state enum (1, 2 or 4 bytes) */
	uint32_t kind_off, kind_size;   /* the kind enum (idle tasks are left out) */
	uint32_t sp_off;           /* the saved stack pointer while switched out (8 bytes) */
	uint32_t stack_off;        /* the stack's lowest address (8 bytes) */
	uint32_t stack_size_off;   /* ...and its size (8 bytes) */
	uint8_t cls[16];           /* state value -> OC_* (values past 15: OC_NONE) */
	int64_t idle_kind;         /* the kind value of idle tasks (-1: none) */
	uint64_t resume_pc;        /* where a switched-out task resumes: its walk starts there */
};

/* One table entry, followed from stop to stop. */
struct offcpu_task {
	int cls;                   /* OC_* at the last stop */
	uint64_t sp;               /* its saved sp then (off-CPU), 0 unknown */
	uint64_t stack_lo, stack_hi; /* its stack */
	int64_t owed_ns;           /* off-CPU wall time not yet given to a sample (in class owed_cls) */
	int64_t visit_ns;          /* when its entry was last read (0: never) */
	uint32_t span;             /* bytes from sp its last walk needed (+ margin), 0: unknown */
	int kept;                  /* its stack at sp was walked, the sample kept (offcpu_io.c's) */
	int owed_cls;
	struct task_id id;         /* who it is */
};

/* One read a stop makes: the table (slot -1), or a slot's saved stack. */
struct offcpu_req {
	uint64_t addr;
	uint32_t len;
	int slot;
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
	uint64_t dropped_ns;       /* off-CPU time never given to a stack (the class changed first) */
	uint64_t stops_by[16];     /* walks by why they ended (enum unwind_stop) */
};

struct offcpu {
	struct offcpu_layout L;
	struct offcpu_task t[OFFCPU_MAX_TASKS]; /* L.count of them in use */
	uint32_t budget;           /* stack bytes a stop may read */
	uint32_t slice;            /* table entries a stop reads */
	uint32_t first, nslice;    /* this stop's slice: entries [first, first + nslice) */
	uint32_t next_first;       /* the next stop's */
	uint32_t cursor;           /* the budget's rotation: which of a slice's stacks goes first */
	int64_t period_ns;         /* one sample period (1 / -r): weights count these */
	struct offcpu_stats st;
	uint8_t *table_buf;        /* offcpu_io.c's: where the table is read */
	uint8_t *stack_buf;        /* ...and the stacks (budget bytes) */
	struct sample *kept_buf;   /* ...each task's last walked stack (L.count) */
};

/* Start following the table L: slice entries a stop (0: all), budget bytes of stacks a stop,
 * weights in periods of period_ns. */
void offcpu_init(struct offcpu *oc, const struct offcpu_layout *L, uint32_t budget, uint32_t slice, int64_t period_ns);
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
