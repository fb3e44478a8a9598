/* SPDX-License-Identifier: MIT */
/* offcpu_linux.c: a Linux guest's task list for record --off-cpu, found through its BTF (libbpf) and kernel symbols. */
#include "offcpu_linux.h"
#include "guestos.h"
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <elf.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/*
 * A thread group's leader is on the list through init_task.tasks; its other threads on the
 * group's list, signal->thread_head through each one's thread_node (offcpu.c walks both). What a
 * visit reads of a task_struct -- __state, on_cpu, stack, tasks, pid, tgid, comm, thread.sp,
 * thread_node, group_leader, signal -- comes from BTF, offsets and sizes alike (and
 * signal_struct's thread_head); the reads are grouped into a few blocks. A task switched out by __switch_to_asm pushed
 * rbp, rbx and r12-r15 and stored rsp into thread.sp (`mov %rsp, TASK_threadsp(%rdi)`): the
 * instruction after that store is where it resumes, with that sp, and where its walk starts --
 * the kernel's own ORC entry for that pc describes the six pushes, so the walk goes on into
 * __schedule with no knowledge of struct inactive_task_frame written here. The store is found in
 * the image's text and its displacement checked against BTF's offset of thread.sp.
 *
 * arm64's cpu_switch_to stores x19-x28, fp (x29), sp and lr in thread.cpu_context instead: the
 * saved lr is where the task resumes (in __switch_to, whose frame record fp points at), so its
 * walk starts at that pc with that sp and fp -- the frame records' chain, return addresses
 * stripped of their PAC as a vCPU's are -- and reads cpu_context's fp, sp and pc (BTF's offsets).
 */
static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

struct want {
	const char *name;
	long long size;   /* the size it must have (0: any) */
	long off;
	long long got;
};

static int by_off(const void *a, const void *b)
{
	const struct want *x = a, *y = b;
	return (x->off > y->off) - (x->off < y->off);
}

/* The resume pc: the instruction after `mov %rsp, disp32(%rdi)` (48 89 a7 disp32) in the first
 * bytes of __switch_to_asm, disp32 the offset of thread.sp; 0 if not there. */
static uint64_t resume_pc(const struct symtab *syms, uint64_t fn, uint32_t sp_off)
{
	for (uint64_t a = fn; a < fn + 48; a++) {
		int b[7];
		for (int i = 0; i < 7; i++) b[i] = syms_byte(syms, a + (uint64_t)i);
		if (b[0] != 0x48 || b[1] != 0x89 || b[2] != 0xa7 || b[3] < 0 || b[4] < 0 || b[5] < 0 || b[6] < 0) continue;
		uint32_t d = (uint32_t)b[3] | (uint32_t)b[4] << 8 | (uint32_t)b[5] << 16 | (uint32_t)b[6] << 24;
		if (d == sp_off) return a + 7;
	}
	return 0;
}

static uint64_t sym_addr(const struct symtab *t, const char *name)
{
	for (size_t i = 0; i < t->n; i++)
		if (!t->syms[i].mod && !strcmp(t->syms[i].name, name)) return t->syms[i].addr;
	return 0;
}

static int layout_btf(const struct btf *b, struct offcpu_layout *L, char *err, size_t cap)
{
	int task = btf__find_by_name_kind(b, "task_struct", BTF_KIND_STRUCT);
	if (task < 0) return offcpu_fail(err, cap, "--off-cpu: the image's BTF has no struct task_struct");
	struct want w[] = {
		{ "__state", 4, 0, 0 },     { "on_cpu", 4, 0, 0 },      { "stack", 8, 0, 0 },
		{ "tasks", 16, 0, 0 },      { "pid", 4, 0, 0 },         { "tgid", 4, 0, 0 },
		{ "comm", 0, 0, 0 },        { "thread", 0, 0, 0 },      { "thread_node", 16, 0, 0 },
		{ "group_leader", 8, 0, 0 }, { "signal", 8, 0, 0 },
	};
	enum { W_STATE, W_ONCPU, W_STACK, W_TASKS, W_PID, W_TGID, W_COMM, W_THREAD, W_TNODE, W_LEADER, W_SIGNAL, W_N };
	unsigned thread_type = 0, signal_type = 0;
	int threads = 1;
	for (int i = 0; i < W_N; i++) {
		w[i].off = guestos_btf_member(b, (unsigned)task, w[i].name, &w[i].got,
					      i == W_THREAD ? &thread_type : i == W_SIGNAL ? &signal_type : NULL, 0);
		int bad = w[i].off < 0 || (w[i].size && w[i].got != w[i].size) || w[i].got < 1;
		if (bad && i >= W_TNODE) { /* no thread lists: leaders only */
			threads = 0;
			w[i].off = w[W_STATE].off, w[i].got = 4; /* (read nothing more) */
			continue;
		}
		if (bad)
			return offcpu_fail(err, cap, "--off-cpu: task_struct in BTF has no %s%s (a kernel before 5.14, or a layout "
				    "gdbsample does not know)", w[i].name, w[i].size ? " of the size expected" : "");
	}
	long long hsz = 0;
	long head = -1;
	if (threads) { /* signal is a pointer: the struct it points to holds the thread list's head */
		const struct btf_type *pt = btf__type_by_id(b, signal_type);
		head = pt && btf_is_ptr(pt) ? guestos_btf_member(b, pt->type, "thread_head", &hsz, NULL, 0) : -1;
		if (head < 0 || hsz != 16) threads = 0;
	}
	/* where a switched-out task's registers are: x86_64 keeps rsp in thread.sp (the rest on its
	 * stack), arm64 x19-x29, sp and the pc in thread.cpu_context (cpu_switch_to) */
	long long spsz = 0, fpsz = 0, pcsz = 0, csz = 0;
	unsigned ctx_type = 0;
	long sp = guestos_btf_member(b, thread_type, "sp", &spsz, NULL, 0), fp = -1, pc = -1;
	long ctx = sp < 0 ? guestos_btf_member(b, thread_type, "cpu_context", &csz, &ctx_type, 0) : -1;
	if (ctx >= 0) {
		sp = guestos_btf_member(b, ctx_type, "sp", &spsz, NULL, 0);
		fp = guestos_btf_member(b, ctx_type, "fp", &fpsz, NULL, 0);
		pc = guestos_btf_member(b, ctx_type, "pc", &pcsz, NULL, 0);
		if (sp < 0 || fp < 0 || pc < 0 || spsz != 8 || fpsz != 8 || pcsz != 8)
			return offcpu_fail(err, cap, "--off-cpu: thread_struct.cpu_context in BTF lacks an 8-byte fp, sp or pc "
				    "(not arm64's)");
	} else if (sp < 0 || spsz != 8) {
		return offcpu_fail(err, cap, "--off-cpu: thread_struct in BTF has neither an 8-byte sp (x86_64's) nor a "
			    "cpu_context (arm64's)");
	}
	long base = w[W_THREAD].off + (ctx >= 0 ? ctx : 0);
	long lo = sp, hi = sp + 8; /* the registers read: one span of the thread's */
	if (ctx >= 0) {
		lo = fp < lo ? fp : lo, lo = pc < lo ? pc : lo;
		hi = fp + 8 > hi ? fp + 8 : hi, hi = pc + 8 > hi ? pc + 8 : hi;
	}
	w[W_THREAD].off = base + lo;
	w[W_THREAD].got = hi - lo;
	memset(L, 0, sizeof *L);
	if (ctx >= 0) {
		L->ctx = 1;
		L->pc_off = (uint32_t)(base + pc);
		L->fp_off = (uint32_t)(base + fp);
	}
	L->mode = OL_LIST;
	L->linux_state = 1;
	L->state_off = (uint32_t)w[W_STATE].off;
	L->state_size = 4;
	L->on_cpu_off = (uint32_t)w[W_ONCPU].off;
	L->stack_off = (uint32_t)w[W_STACK].off;
	L->stack_size_off = OFFCPU_NO_OFF;
	L->stack_size = LINUX_THREAD_SIZE;
	L->window = OFFCPU_LIST_WINDOW;
	L->link_off = (uint32_t)w[W_TASKS].off;
	L->pid_off = (uint32_t)w[W_PID].off;
	L->tgid_off = (uint32_t)w[W_TGID].off;
	L->name_off = (uint32_t)w[W_COMM].off;
	L->name_len = (uint32_t)(w[W_COMM].got < TASK_COMM_LEN ? w[W_COMM].got : TASK_COMM_LEN);
	L->sp_off = (uint32_t)(base + sp);
	L->thread_off = threads ? (uint32_t)w[W_TNODE].off : OFFCPU_NO_OFF;
	L->leader_off = (uint32_t)w[W_LEADER].off;
	L->signal_off = (uint32_t)w[W_SIGNAL].off;
	L->thread_head_off = threads ? (uint32_t)head : 0;
	L->idle_kind = -1;
	/* the fields in a few reads: neighbours less than 512 bytes apart share one (QEMU answers a
	 * packet of a few hundred bytes about as fast as one of eight: fewer packets are cheaper) */
	qsort(w, W_N, sizeof w[0], by_off);
	for (int i = 0; i < W_N; i++) {
		uint32_t lo = (uint32_t)w[i].off, hi = lo + (uint32_t)w[i].got;
		if (L->nblocks && lo <= L->blocks[L->nblocks - 1].off + L->blocks[L->nblocks - 1].len + 512) {
			uint32_t end = L->blocks[L->nblocks - 1].off + L->blocks[L->nblocks - 1].len;
			if (hi > end) L->blocks[L->nblocks - 1].len = hi - L->blocks[L->nblocks - 1].off;
			continue;
		}
		if (L->nblocks == OFFCPU_MAX_BLOCKS) return offcpu_fail(err, cap, "--off-cpu: task_struct's fields too scattered");
		L->blocks[L->nblocks].off = lo;
		L->blocks[L->nblocks++].len = hi - lo;
	}
	uint32_t end = L->blocks[L->nblocks - 1].off + L->blocks[L->nblocks - 1].len;
	L->stride = (end + 15) & ~15u;
	return 0;
}

int offcpu_linux_btf(const void *btf, size_t len, struct offcpu_layout *L, char *err, size_t cap)
{
	if (!btf || !len) return offcpu_fail(err, cap, "--off-cpu: the image has no BTF (a kernel built without CONFIG_DEBUG_INFO_BTF)");
	libbpf_set_print(quiet);
	struct btf *b = btf__new(btf, (__u32)len);
	if (!b || libbpf_get_error(b)) return offcpu_fail(err, cap, "--off-cpu: the image's BTF does not parse (libbpf)");
	int rc = layout_btf(b, L, err, cap);
	btf__free(b);
	return rc;
}

int offcpu_linux_place(struct offcpu_layout *L, const struct symtab *syms, char *err, size_t cap)
{
	int arm64 = syms->machine ? syms->machine == EM_AARCH64 : L->ctx;
	if (syms->machine && syms->machine != EM_X86_64 && !arm64)
		return offcpu_fail(err, cap, "--off-cpu: a Linux guest's switched-out stacks are read on x86_64 and arm64 only "
			    "(not riscv64 yet)");
	if (arm64 != L->ctx)
		return offcpu_fail(err, cap, "--off-cpu: the BTF's thread_struct is %s's but the kernel's symbols are %s's",
				   L->ctx ? "arm64" : "x86_64", arm64 ? "arm64" : "x86_64");
	/* init_task: the head of the list, from the symbols -- a kernel without CONFIG_KALLSYMS_ALL
	 * (Debian's arm64) names no data: 0, found in the guest at the census (offcpu_io.c) */
	L->table = (syms->marks >> MARK_INIT_TASK) & 1 ? syms->mark[MARK_INIT_TASK] : 0;
	if (arm64) { /* each task resumes at its own saved pc (cpu_context.pc), with its fp */
		L->resume_pc = 0;
		return 0;
	}
	if (!L->table)
		return offcpu_fail(err, cap, "--off-cpu: no init_task in the kernel's symbols (the head of its task list)");
	uint64_t sw = sym_addr(syms, "__switch_to_asm");
	if (!sw) return offcpu_fail(err, cap, "--off-cpu: no __switch_to_asm in the kernel's symbols");
	L->resume_pc = resume_pc(syms, sw, L->sp_off);
	if (!L->resume_pc)
		return offcpu_fail(err, cap, "--off-cpu: __switch_to_asm does not store rsp at task_struct+0x%x (thread.sp, from "
			    "BTF) as gdbsample expects", L->sp_off);
	return 0;
}
