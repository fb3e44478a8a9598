// SPDX-License-Identifier: MIT
/* main.c (shape guest): a riscv64 kernel that keeps its running process as xv6 does, for --tasks. */
/*
 * Not our test kernel's layout: struct cpu cpus[NCPU] indexed by the hart id (in tp), whose
 * `proc` points at the running struct proc, with `pid` and `name[16]` at offsets unlike struct
 * task's (name at +20, pid at +36). Each hart h alternates between two processes, "even<h>"
 * (pid 100*(h+1)) and "odd<h>" (pid 100*(h+1)+1), each spinning in its own function: a sample
 * whose leaf is spin_even on hart h belongs to even<h> and no other -- an exact oracle for
 * `--tasks` with `current = cpus[$tp].proc`. `id` holds the pid again as a Rust kernel keeps one
 * (a u64, at +40). No interrupts, no timer: nothing else runs.
 */
#include <stdint.h>

#define NCPU 4
#define SPIN 200000L
#define UART ((volatile uint8_t *)0x10000000UL) /* QEMU virt's NS16550: THR +0, LSR +5 */
#define SBI_EXT_HSM 0x48534dL

struct proc {
	long state;
	void *kstack;
	int ppid;
	char name[16];
	int pid;
	unsigned long id; /* the pid as a u64 */
};

struct cpu {
	int noff;
	int intena;
	struct proc *proc; /* the process running on this hart */
};

struct cpu cpus[NCPU];
struct proc procs[NCPU][2];
static int arrived;

extern char stacks[], secondary_entry[];

static long sbi(long ext, long fid, long a0, long a1, long a2)
{
	register long r0 __asm__("a0") = a0, r1 __asm__("a1") = a1, r2 __asm__("a2") = a2;
	register long r6 __asm__("a6") = fid, r7 __asm__("a7") = ext;
	__asm__ volatile("ecall" : "+r"(r0), "+r"(r1) : "r"(r2), "r"(r6), "r"(r7) : "memory");
	return r0; /* the SBI error: 0 for success */
}

static void puts_uart(const char *s)
{
	for (; *s; s++) {
		while (!(UART[5] & 0x20))
			;
		UART[0] = (uint8_t)*s;
	}
}

static void setup_proc(struct proc *p, const char *name, int h, int pid)
{
	int i = 0;
	for (; name[i]; i++)
		p->name[i] = name[i];
	p->name[i++] = (char)('0' + h);
	p->name[i] = 0;
	p->state = 3; /* RUNNING, as xv6 counts */
	p->kstack = stacks + (h + 1) * 16384L;
	p->ppid = 1;
	p->pid = pid;
	p->id = (unsigned long)pid;
}

__attribute__((noinline)) void spin_even(long n)
{
	for (volatile long i = 0; i < n; i++)
		;
}

__attribute__((noinline)) void spin_odd(long n)
{
	for (volatile long i = 0; i < n; i++)
		;
}

/* The store to cpus[h].proc is made before the spin starts, and not moved past it. */
static void run(struct cpu *c, struct proc *p)
{
	c->proc = p;
	__asm__ volatile("" ::: "memory");
}

__attribute__((noreturn)) void hart_main(long h)
{
	struct cpu *c = &cpus[h];
	setup_proc(&procs[h][0], "even", (int)h, 100 * ((int)h + 1));
	setup_proc(&procs[h][1], "odd", (int)h, 100 * ((int)h + 1) + 1);
	__atomic_fetch_add(&arrived, 1, __ATOMIC_SEQ_CST);
	for (;;) {
		run(c, &procs[h][0]);
		spin_even(SPIN);
		run(c, &procs[h][1]);
		spin_odd(SPIN);
	}
}

/* The boot hart (any of them: OpenSBI's lottery) starts the others, waits for them all, says
 * "shape: ready" and runs its own two processes. */
__attribute__((noreturn)) void boot_main(long boot)
{
	int harts = 1;
	for (long h = 0; h < NCPU; h++)
		if (h != boot && sbi(SBI_EXT_HSM, 0, h, (long)secondary_entry, (long)(stacks + (h + 1) * 16384L)) == 0)
			harts++;
	while (__atomic_load_n(&arrived, __ATOMIC_SEQ_CST) != harts - 1)
		;
	puts_uart("shape: ready\n");
	hart_main(boot);
}
