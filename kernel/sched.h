/* SPDX-License-Identifier: MIT */
/* sched.h: kernel threads with pids, per-CPU round-robin run queues, sleep/wake/exit/kill. */
#ifndef SCHED_H
#define SCHED_H
#include <stdint.h>
#include <stddef.h>

#define MAX_TASKS 64
#define TASK_STACK_SIZE 16384
#define STACK_GUARD_WORDS 8		/* canary words at the low end of every task stack */
#define STACK_GUARD 0x5afe57acc0ffee00ull
#define STACK_FILL 0x5a			/* untouched stack bytes, for the high-water mark */

enum task_state { TASK_FREE, TASK_RUNNABLE, TASK_RUNNING, TASK_SLEEPING, TASK_BLOCKED, TASK_ZOMBIE };
enum task_kind { KIND_IDLE, KIND_SHELL, KIND_WORK, KIND_SYSTEM };

struct task {
	int pid;			/* unique, never reused while the kernel runs */
	char name[16];			/* short name shown by ps */
	char desc[32];			/* what it was started as, e.g. "split 5 3 2" */
	enum task_state state;		/* changed under its CPU's rq_lock */
	enum task_kind kind;
	int cpu;			/* the CPU whose run queue holds it (no migration) */
	uint64_t rsp;			/* saved stack pointer while switched out */
	uint8_t *stack;			/* lowest address of the stack */
	size_t stack_size;
	volatile uint64_t ticks;	/* timer ticks that found it running */
	uint64_t wake_tick;		/* SLEEPING/timed BLOCKED: the CPU tick to wake at */
	volatile int killed;		/* asked to exit; long-running loops poll it */
	void (*fn)(void *);		/* entry point and its argument */
	void *arg;
	uint64_t args[4];		/* small arguments for workloads */
	struct task *next;		/* run-queue link */
};

extern struct task tasks[MAX_TASKS];

void sched_init_cpu(void);		/* makes the boot flow of this CPU its idle task */
/* args (may be NULL) are copied into t->args before the task can run. */
struct task *task_create(const char *name, enum task_kind kind, void (*fn)(void *), void *arg,
			 const uint64_t args[4], int cpu);
void task_exit(void) __attribute__((noreturn));
void task_sleep_ms(uint64_t ms);
void task_block_timeout(uint64_t ms);	/* interrupts off on entry; returns with them off */
void task_wake(struct task *t);
void task_yield(void);
int task_kill(int pid);			/* 0, or -1 if no such task */
struct task *task_by_pid(int pid);
struct task *current_task(void);
int sched_pick_cpu(void);		/* the online CPU with the fewest workloads (+ the shell) */
void sched_tick(void);			/* from the timer interrupt */
void sched_preempt(void);		/* on the way out of an interrupt */
size_t task_stack_used(const struct task *t);	/* high-water mark in bytes */
int task_stack_guard_ok(const struct task *t);
const char *task_state_name(enum task_state s);
#endif
