/* SPDX-License-Identifier: MIT */
/* task_shapes.c: current-task layouts of other kernels' shapes, as DWARF, for test_taskdesc_dwarf.c. */

/* xv6-riscv's: cpus[] indexed by the hart id in tp, each with its running proc. */
struct proc { long state; void *kstack; int ppid; char name[16]; int pid; };
struct cpu { int noff; int intena; struct proc *proc; };
struct cpu cpus[4];
/* A uniprocessor kernel's global. */
struct proc *current_proc;
/* A per-CPU area at an offset a register holds, a typedef'd task with nested and anonymous members. */
typedef struct thread {
	long flags;
	struct { int tid; int ptid; } ids;
	union { char comm[24]; long words[3]; };
	long id64;
	short sid;
	char *label;
	unsigned bits : 3;
	unsigned long long uid; /* a Rust kernel's u64 id */
	double weight;
} thread_t;
struct pcpu_area { long pad[3]; thread_t *cur; struct proc *procs[2]; };
struct pcpu_area pcpu_area;
/* Shapes a description may not use: pointers to follow first, two dimensions, no pointer at all. */
struct cpu *cpuptrs[4];
struct multi { struct cpu c[2][2]; } multi;
int not_a_pointer;
static struct proc *twice;
struct proc **use_twice = &twice;

void start(void)
{
}

/* A struct only declared where the pointer to it is (defined in another unit: task_shapes2.c). */
struct task2;
struct cpu2 { struct task2 *cur; };
struct cpu2 cpus2[2];
