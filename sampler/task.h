/* SPDX-License-Identifier: MIT */
/* task.h: per-sample task attribution, the same for every guest OS -- what to read, what it means. */
#ifndef TASK_H
#define TASK_H
#include <stddef.h>
#include <stdint.h>
#include "guestos.h"

/* The task a sample ran for, as the guest's own structures name it. */
struct task_id {
	int32_t pid;                   /* Linux: the thread id */
	int32_t tgid;                  /* the process (thread group) id */
	uint64_t ptr;                  /* the task struct's guest address */
	char comm[TASK_COMM_LEN];      /* name, NUL-padded, as the guest had it (raw bytes) */
};

/* How this sample's attribution went. */
enum { TS_PENDING, TS_DONE, TS_LOST };

/* Counters, all in the summary. Every vCPU sample with attribution on is exactly one of
 * verified, hits, misses or lost. */
struct task_stats {
	uint64_t verified;   /* the task was the one the previous sample found, and its identity,
			      * re-read in the same round trip, confirmed (or corrected) the cache */
	uint64_t hits;       /* another task, known from the cache (read within TASK_VALID_NS) */
	uint64_t misses;     /* a task new to the cache (or expired): its fields cost another trip */
	uint64_t lost;       /* no attribution: pointer or fields unreadable or implausible */
	uint64_t renamed;    /* re-reads that found a cached task changed (exec, or a recycled
			      * task struct): the cache was corrected before the sample used it */
	uint64_t reads;      /* `m` requests for the pointer and fields */
	uint64_t bytes;      /* ...and the bytes they asked for */
};

#define TASK_VALID_NS 1000000000ll  /* a cached identity not re-read for this long is read again */
#define TASKCACHE_SLOTS 8192        /* open addressing; when full, the cache starts over */

struct taskent {
	int64_t read_ns;               /* when its fields were last read (0 = empty slot) */
	struct task_id id;
};

struct taskcache {
	struct taskent *e;             /* TASKCACHE_SLOTS slots (allocated on first use) */
	size_t n;                      /* slots in use */
};

/* The per-CPU base from the registers that may hold it -- x86: gs_base, then k_gs_base (in user
 * mode the kernel's is there, after swapgs); aarch64: TPIDR_EL1 alone -- the first that can be a
 * kernel pointer (task_ptr_ok with lo); 0 if neither. */
uint64_t task_pcpu_base(uint64_t a, uint64_t b, uint64_t lo);
/* 1 if ptr can be a kernel struct: 8-aligned, at or above lo (the upper half, 1 << 63, for a
 * kernel mapped there; our aarch64 kernel runs identity-mapped in the lower half). */
int task_ptr_ok(uint64_t ptr, uint64_t lo);
/* Where os says the current task is on vCPU number cpu, given the register's value val (and alt,
 * the arch's user-mode alternative: x86 k_gs_base): the address of the task pointer, or for
 * CR_TASK the task itself; 0 if not known from these (not a kernel pointer yet, an index past
 * the array). Pure: plan.c reads the registers and the memory. */
uint64_t task_where(const struct guestos *os, int cpu, uint64_t val, uint64_t alt, uint64_t lo);
/* The byte span of the identity fields: [ptr + *lo, ptr + *lo + *len). */
void task_span(const struct guestos *os, uint32_t *lo, uint32_t *len);
/* Decode the span read at ptr + lo; -1 if implausible (negative ids, an empty name). */
int task_decode(const struct guestos *os, uint64_t ptr, const uint8_t *span, uint32_t len, struct task_id *id);
/* The cached identity of ptr read at or after now_ns - TASK_VALID_NS, or NULL. */
const struct task_id *taskcache_get(const struct taskcache *c, uint64_t ptr, int64_t now_ns);
/* Remember id as read at now_ns; returns 1 if it replaced a different identity for its pointer. */
int taskcache_put(struct taskcache *c, const struct task_id *id, int64_t now_ns);
void taskcache_free(struct taskcache *c);

/* A task's name for output: printable ASCII kept, other bytes as \xNN, up to the first NUL. */
void task_comm_format(const char comm[TASK_COMM_LEN], char out[TASK_COMM_LEN * 4 + 1]);

/* How the task shows as the root frame of a folded stack. */
enum { TF_COMM, TF_COMM_PID, TF_PID, TF_CPU };
extern const char *const task_format_names[4];
/* The root frame for a sample's task under format tf ("[unknown]" without one). */
void task_root(int tf, const struct task_id *id, int has_task, char *out, size_t cap);

/* --pid LIST and --comm REGEX: which samples to keep. */
#define TASK_FILTER_MAX 64
struct task_filter {
	int npids;                       /* ranges in lo/hi (0: no --pid) */
	int32_t lo[TASK_FILTER_MAX], hi[TASK_FILTER_MAX];
	int has_re;                      /* --comm given: re is compiled */
	void *re;                        /* regex_t * (POSIX extended) */
};
/* Parse "1,5-7" into f; -1 on a bad list. */
int task_filter_pids(struct task_filter *f, const char *list);
/* Compile a --comm regex; -1 with a message in err on a bad one. */
int task_filter_comm(struct task_filter *f, const char *re, char *err, size_t cap);
/* 1 if a filter is set. */
int task_filter_on(const struct task_filter *f);
/* 1 if a sample's task passes (its pid or tgid in the list, and its name matching); a sample
 * without a task never passes a filter that is on. */
int task_filter_match(const struct task_filter *f, const struct task_id *id, int has_task);
void task_filter_free(struct task_filter *f);

#endif
