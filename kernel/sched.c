/* SPDX-License-Identifier: MIT */
/* sched.c: tasks and per-CPU round-robin scheduling, preempted on every timer tick. */
#include "sched.h"
#include "cpu.h"
#include "lib.h"
#include "mem.h"
#include "panic.h"
#include "arch.h"

struct task tasks[MAX_TASKS];
static struct spinlock tasks_lock = SPINLOCK_INIT("tasks");	/* slot allocation, pids */
static int next_pid = 1;

void swtch(uint64_t *save_rsp, uint64_t new_rsp);	/* switch.S */

const char *task_state_name(enum task_state s)
{
	static const char *names[] = { "free", "runnable", "running", "sleeping", "blocked", "zombie" };
	return (unsigned)s < ARRAY_SIZE(names) ? names[s] : "?";
}

struct task *current_task(void)
{
	return mycpu()->current;
}

/* The code this CPU is running now becomes its idle task (pid 0 on CPU 0, else a fresh pid). */
void sched_init_cpu(void)
{
	struct cpu *c = mycpu();
	uint64_t f = spin_lock_irqsave(&tasks_lock);
	struct task *t = 0;
	for (int i = 0; i < MAX_TASKS && !t; i++)
		if (tasks[i].state == TASK_FREE)
			t = &tasks[i];
	if (!t)
		panic("sched: no task slot for cpu%d's idle task", c->id);
	memset(t, 0, sizeof(*t));
	t->pid = next_pid++;
	t->state = TASK_RUNNING;
	spin_unlock_irqrestore(&tasks_lock, f);
	snprintf(t->name, sizeof(t->name), "idle/%d", c->id);
	strncpy0(t->desc, "idle", sizeof(t->desc));
	t->kind = KIND_IDLE;
	t->cpu = c->id;
	/* The stack is the boot/AP stack this code runs on; bounds are set by the caller. */
	c->idle = t;
	c->current = t;
}

static void finish_switch(void)
{
	struct cpu *c = mycpu();
	struct task *z = c->zombie;
	if (z && z != c->current) {
		c->zombie = 0;
		kfree(z->stack, z->stack_size);
		uint64_t f = spin_lock_irqsave(&tasks_lock);
		z->state = TASK_FREE;
		spin_unlock_irqrestore(&tasks_lock, f);
	}
}

/* Next task to run after prev, round robin; rq_lock held. Wakes sleepers whose time came. */
static struct task *pick_next(struct cpu *c)
{
	struct task *t = c->runq;
	if (!t)
		return c->idle;
	do {
		if ((t->state == TASK_SLEEPING || t->state == TASK_BLOCKED) &&
		    t->wake_tick && c->ticks >= t->wake_tick)
			t->state = TASK_RUNNABLE;
		if (t->state == TASK_RUNNABLE || t->state == TASK_RUNNING) {
			c->runq = t->next;	/* the next scan starts after the chosen one */
			return t;
		}
		t = t->next;
	} while (t != c->runq);
	return c->idle;
}

/* Switches to the next runnable task of this CPU. Interrupts must be off. */
static void schedule(void)
{
	struct cpu *c = mycpu();
	struct task *prev = c->current;
	spin_lock(&c->rq_lock);
	struct task *next = pick_next(c);
	if (prev->state == TASK_RUNNING)
		prev->state = TASK_RUNNABLE;
	next->state = TASK_RUNNING;
	spin_unlock(&c->rq_lock);
	if (next == prev)
		return;
	if (prev->kind != KIND_IDLE && prev->state != TASK_ZOMBIE && !task_stack_guard_ok(prev))
		panic("sched: stack guard of pid %d (%s) overwritten: stack overflow", prev->pid, prev->name);
	c->current = next;
	swtch(&prev->rsp, next->rsp);
	finish_switch();	/* now on prev's stack again, maybe on a later switch */
}

/* First code a new task runs: swtch "returned" (through task_start) with interrupts off. */
void task_entry(void);
void task_entry(void)
{
	finish_switch();
	irq_enable();
	struct task *t = mycpu()->current;
	t->fn(t->arg);
	task_exit();
}

static void rq_insert(struct cpu *c, struct task *t)
{
	if (!c->runq) {
		t->next = t;
		c->runq = t;
	} else {	/* insert just before the scan start: runs last in this round */
		struct task *p = c->runq;
		while (p->next != c->runq)
			p = p->next;
		p->next = t;
		t->next = c->runq;
	}
}

static void rq_remove(struct cpu *c, struct task *t)
{
	struct task *p = c->runq;
	if (!p)
		return;
	if (t->next == t) {
		c->runq = 0;
		return;
	}
	while (p->next != t)
		p = p->next;
	p->next = t->next;
	if (c->runq == t)
		c->runq = t->next;
}

struct task *task_create(const char *name, enum task_kind kind, void (*fn)(void *), void *arg,
			 const uint64_t args[4], int cpu)
{
	uint8_t *stack = kalloc(TASK_STACK_SIZE);
	if (!stack)
		return 0;
	uint64_t f = spin_lock_irqsave(&tasks_lock);
	struct task *t = 0;
	for (int i = 0; i < MAX_TASKS && !t; i++)
		if (tasks[i].state == TASK_FREE)
			t = &tasks[i];
	if (!t) {
		spin_unlock_irqrestore(&tasks_lock, f);
		kfree(stack, TASK_STACK_SIZE);
		return 0;
	}
	memset(t, 0, sizeof(*t));
	t->pid = next_pid++;
	t->state = TASK_BLOCKED;	/* not schedulable until it is on a run queue */
	spin_unlock_irqrestore(&tasks_lock, f);

	strncpy0(t->name, name, sizeof(t->name));
	t->kind = kind;
	t->cpu = cpu;
	t->fn = fn;
	t->arg = arg;
	if (args)
		memcpy(t->args, args, sizeof(t->args));
	t->stack = stack;
	t->stack_size = TASK_STACK_SIZE;
	memset(stack, STACK_FILL, TASK_STACK_SIZE);
	for (int i = 0; i < STACK_GUARD_WORDS; i++)
		((uint64_t *)stack)[i] = STACK_GUARD;

	t->rsp = arch_task_stack_init(stack + TASK_STACK_SIZE);	/* swtch "returns" to task_start */

	struct cpu *c = &cpus[cpu];
	f = spin_lock_irqsave(&c->rq_lock);
	t->state = TASK_RUNNABLE;
	rq_insert(c, t);
	spin_unlock_irqrestore(&c->rq_lock, f);
	return t;
}

void task_exit(void)
{
	irq_disable();
	struct cpu *c = mycpu();
	struct task *t = c->current;
	if (t->kind == KIND_IDLE)
		panic("sched: idle task tried to exit");
	spin_lock(&c->rq_lock);
	rq_remove(c, t);
	t->state = TASK_ZOMBIE;
	c->zombie = t;
	spin_unlock(&c->rq_lock);
	schedule();
	panic("sched: zombie pid %d ran again", t->pid);
}

static void block_until(enum task_state s, uint64_t ms)
{
	struct cpu *c = mycpu();
	struct task *t = c->current;
	spin_lock(&c->rq_lock);
	t->state = s;
	t->wake_tick = ms ? c->ticks + (ms + 9) / 10 + 1 : 0;	/* +1: the current tick is partial */
	spin_unlock(&c->rq_lock);
	schedule();
}

void task_sleep_ms(uint64_t ms)
{
	uint64_t f = irq_save();
	block_until(TASK_SLEEPING, ms ? ms : 1);
	irq_restore(f);
}

void task_block_timeout(uint64_t ms)
{
	block_until(TASK_BLOCKED, ms);
}

void task_wake(struct task *t)
{
	struct cpu *c = &cpus[t->cpu];
	uint64_t f = spin_lock_irqsave(&c->rq_lock);
	if (t->state == TASK_SLEEPING || t->state == TASK_BLOCKED) {
		t->state = TASK_RUNNABLE;
		if (c == mycpu())
			c->need_resched = 1;
	}
	spin_unlock_irqrestore(&c->rq_lock, f);
}

void task_yield(void)
{
	uint64_t f = irq_save();
	schedule();
	irq_restore(f);
}

struct task *task_by_pid(int pid)
{
	for (int i = 0; i < MAX_TASKS; i++)
		if (tasks[i].state != TASK_FREE && tasks[i].state != TASK_ZOMBIE && tasks[i].pid == pid)
			return &tasks[i];
	return 0;
}

int task_kill(int pid)
{
	struct task *t = task_by_pid(pid);
	if (!t)
		return -1;
	t->killed = 1;
	task_wake(t);
	return 0;
}

int sched_pick_cpu(void)
{
	int best = 0, best_n = MAX_TASKS + 1;
	for (int i = 0; i < ncpu; i++) {
		if (!cpus[i].online)
			continue;
		int n = 0;
		for (int j = 0; j < MAX_TASKS; j++)
			if (tasks[j].state != TASK_FREE && tasks[j].state != TASK_ZOMBIE &&
			    (tasks[j].kind == KIND_WORK || tasks[j].kind == KIND_SHELL) && tasks[j].cpu == i)
				n++;	/* system tasks (net, udpsh) mostly sleep: not counted */
		if (n < best_n) {
			best = i;
			best_n = n;
		}
	}
	return best;
}

/* Timer interrupt, interrupts off: account the tick, then rotate (time slice = one tick). */
void sched_tick(void)
{
	struct cpu *c = mycpu();
	c->ticks++;
	c->current->ticks++;
	c->need_resched = 1;
}

void sched_preempt(void)
{
	struct cpu *c = mycpu();
	if (c->need_resched && c->current) {
		c->need_resched = 0;
		schedule();
	}
}

size_t task_stack_used(const struct task *t)
{
	const uint8_t *p = t->stack + STACK_GUARD_WORDS * 8;
	const uint8_t *end = t->stack + t->stack_size;
	while (p < end && *p == STACK_FILL)
		p++;
	return (size_t)(end - p);
}

int task_stack_guard_ok(const struct task *t)
{
	for (int i = 0; i < STACK_GUARD_WORDS; i++)
		if (((const uint64_t *)t->stack)[i] != STACK_GUARD)
			return 0;
	return 1;
}
