/* SPDX-License-Identifier: MIT */
/* test_task.c: task attribution -- the OS layer on BTF built here, the cache, the filters, and
 * the plan's reads on literal replies (no guest, no socket). */
#include "check.h"
#include "../../sampler/guestos.h"
#include "../../sampler/plan.h"
#include "../../sampler/task.h"
#include <bpf/btf.h>
#include <stdlib.h>

#define BASE 0xffff88800fc00000ull   /* a vCPU's per-CPU (kernel GS) base */
#define T1 0xffff888003a5c000ull     /* task structs */
#define T2 0xffff888003a5e000ull

/* BTF for a kernel: task_struct {pid @pid_at, tgid, comm[16] @comm_at} and, as 6.1 has it, a
 * per-CPU current_task at cur_at -- or, hot: 6.2's pcpu_hot {union {struct {current_task}}}. */
static struct btf *kernel_btf(int pid_at, int comm_at, int cur_at, int hot, int with_cur)
{
	struct btf *b = btf__new_empty();
	int i32 = btf__add_int(b, "int", 4, BTF_INT_SIGNED);
	int ch = btf__add_int(b, "char", 1, BTF_INT_CHAR);
	int arr = btf__add_array(b, i32, ch, 16);
	int ts = btf__add_struct(b, "task_struct", (unsigned)comm_at + 64);
	btf__add_field(b, "state", i32, 0, 0);
	btf__add_field(b, "pid", i32, (unsigned)pid_at * 8, 0);
	btf__add_field(b, "tgid", i32, (unsigned)pid_at * 8 + 32, 0);
	btf__add_field(b, "comm", arr, (unsigned)comm_at * 8, 0);
	int ptr = btf__add_ptr(b, ts);
	int var, size = 8;
	if (!hot) {
		var = btf__add_var(b, with_cur ? "current_task" : "other_var", BTF_VAR_GLOBAL_ALLOCATED, ptr);
	} else {
		int inner = btf__add_struct(b, NULL, 16);
		btf__add_field(b, with_cur ? "current_task" : "other", ptr, 0, 0);
		btf__add_field(b, "preempt_count", i32, 64, 0);
		int un = btf__add_union(b, NULL, 64);
		btf__add_field(b, NULL, inner, 0, 0);
		btf__add_field(b, "pad", arr, 0, 0);
		int hs = btf__add_struct(b, "pcpu_hot", 64);
		btf__add_field(b, NULL, un, 0, 0);
		var = btf__add_var(b, "pcpu_hot", BTF_VAR_GLOBAL_ALLOCATED, hs);
		size = 64;
	}
	int other = btf__add_var(b, "this_cpu_off", BTF_VAR_GLOBAL_ALLOCATED, ptr);
	btf__add_datasec(b, ".data..percpu", 0x40000);
	btf__add_datasec_var_info(b, other, 0x199e8, 8);
	btf__add_datasec_var_info(b, var, (unsigned)cur_at, (unsigned)size);
	return b;
}

static int from_btf(struct guestos *os, struct btf *b)
{
	__u32 len = 0;
	const void *raw = btf__raw_data(b, &len);
	memset(os, 0, sizeof *os);
	int rc = guestos_linux_btf(os, raw, len);
	btf__free(b);
	return rc;
}

static void test_linux_btf(void)
{
	struct guestos os;
	/* 6.1: current_task is a per-CPU variable of its own. */
	CHECK(from_btf(&os, kernel_btf(2416, 2976, 0x1fb80, 0, 1)) == 0);
	CHECK(os.os == OS_LINUX && os.cur_off == 0x1fb80 && os.pid_off == 2416 && os.tgid_off == 2420);
	CHECK(os.comm_off == 2976 && os.comm_len == 16 && strstr(os.what, "current_task at +0x1fb80"));
	/* 6.2 on: pcpu_hot.current_task, inside an anonymous struct in an anonymous union. */
	CHECK(from_btf(&os, kernel_btf(2432, 2976, 0x351c0, 1, 1)) == 0);
	CHECK(os.os == OS_LINUX && os.cur_off == 0x351c0 && os.pid_off == 2432 && strstr(os.what, "pcpu_hot"));
	/* Neither: a layout we do not know -- one line saying so. */
	CHECK(from_btf(&os, kernel_btf(2432, 2976, 0x351c0, 1, 0)) == -1);
	CHECK(os.os == OS_NONE && strstr(os.why, "does not know"));
	CHECK(from_btf(&os, kernel_btf(2432, 2976, 0x100, 0, 0)) == -1 && os.os == OS_NONE);
	/* Not BTF at all. */
	static const uint8_t junk[64] = { 0x9f, 0xeb, 1, 0, 24, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f };
	memset(&os, 0, sizeof os);
	CHECK(guestos_linux_btf(&os, junk, sizeof junk) == -1 && os.os == OS_NONE && strstr(os.why, "does not parse"));
	CHECK(guestos_linux_btf(&os, junk, 3) == -1 && os.os == OS_NONE);
	/* No task_struct. */
	struct btf *b = btf__new_empty();
	btf__add_int(b, "int", 4, BTF_INT_SIGNED);
	CHECK(from_btf(&os, b) == -1 && strstr(os.why, "no struct task_struct"));
}

static void test_pure(void)
{
	const uint64_t UP = 1ull << 63; /* an upper-half kernel's pointers */
	CHECK(task_pcpu_base(BASE, 0, UP) == BASE);        /* kernel mode: gs_base */
	CHECK(task_pcpu_base(0x7f0000001000ull, BASE, UP) == BASE); /* user mode: the kernel's is in k_gs_base */
	CHECK(task_pcpu_base(0, 0x7f0000001000ull, UP) == 0);
	CHECK(task_ptr_ok(T1, UP) && !task_ptr_ok(0, UP) && !task_ptr_ok(T1 + 4, UP) && !task_ptr_ok(0x1000, UP));
	/* A kernel linked below the upper half (our aarch64 one, identity-mapped): TPIDR_EL1 alone,
	 * any aligned address past the first page. */
	CHECK(task_pcpu_base(0x40123450, 0, 0x1000) == 0x40123450);
	CHECK(task_pcpu_base(0, 0, 0x1000) == 0 && task_pcpu_base(0x40123454, 0, 0x1000) == 0);
	CHECK(task_ptr_ok(0x40200000, 0x1000) && !task_ptr_ok(0x800, 0x1000) && !task_ptr_ok(0, 0));

	struct guestos os = { .os = OS_LINUX, .cur_off = 0x1fb80, .pid_off = 2416, .tgid_off = 2420,
			      .comm_off = 2976, .comm_len = 16 };
	uint32_t lo, len;
	task_span(&os, &lo, &len);
	CHECK(lo == 2416 && len == 2992 - 2416);
	uint8_t span[1024] = { 0 };
	span[0] = 0x39; span[1] = 0x30;                 /* pid 12345 */
	span[4] = 0x38; span[5] = 0x30;                 /* tgid 12344 */
	memcpy(span + 560, "zerodd\0garbage!!", 16);
	struct task_id id;
	CHECK(task_decode(&os, T1, span, len, &id) == 0);
	CHECK(id.pid == 12345 && id.tgid == 12344 && id.ptr == T1 && !strcmp(id.comm, "zerodd"));
	CHECK(task_decode(&os, T1, span, len - 1, &id) == -1);   /* short */
	span[3] = 0x80;                                           /* pid < 0: not a task */
	CHECK(task_decode(&os, T1, span, len, &id) == -1);
	span[3] = 0;
	memcpy(span + 560, "0123456789abcdefXYZ", 16);            /* no NUL: cut at 15, as the guest */
	CHECK(task_decode(&os, T1, span, len, &id) == 0 && strlen(id.comm) == 15);
	span[560] = 0;                                            /* an empty name: not a task */
	CHECK(task_decode(&os, T1, span, len, &id) == -1);

	/* A description's 8-byte ids (a Rust kernel's u64): the span grows; a value a pid cannot be
	 * (past INT32_MAX, or negative in a signed field) is no task. 2-byte ones: their top bit is
	 * the sign unless unsigned. */
	struct guestos d = { .os = OS_DESC, .pid_off = 0, .tgid_off = 8, .pid_size = 8, .tgid_size = 8,
			     .pid_unsigned = 1, .tgid_unsigned = 1, .comm_off = 16, .comm_len = 8 };
	task_span(&d, &lo, &len);
	CHECK(lo == 0 && len == 24);
	uint8_t w[24] = { 0x39, 0x30, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 'r', 'u', 's', 't', 0 };
	CHECK(task_decode(&d, T1, w, len, &id) == 0 && id.pid == 12345 && id.tgid == 7 && !strcmp(id.comm, "rust"));
	w[4] = 1; /* 2^32 + 12345 */
	CHECK(task_decode(&d, T1, w, len, &id) == -1);
	w[4] = 0;
	w[3] = 0x7f; /* 0x7f003039: still a pid */
	CHECK(task_decode(&d, T1, w, len, &id) == 0 && id.pid == 0x7f003039);
	d.pid_size = d.tgid_size = 2;
	d.pid_unsigned = 0;
	w[1] = 0x80; /* a signed 2-byte field: negative */
	CHECK(task_decode(&d, T1, w, len, &id) == -1);
	d.pid_unsigned = 1;
	CHECK(task_decode(&d, T1, w, len, &id) == 0 && id.pid == 0x8039);

	char out[TASK_COMM_LEN * 4 + 1], root[96];
	char raw[TASK_COMM_LEN] = "a\x1b[2Jb\x7f";
	task_comm_format(raw, out);
	CHECK_STR(out, "a\\x1b[2Jb\\x7f");
	struct task_id k = { 42, 40, T1, "kworker/0:1" };
	task_root(TF_COMM, &k, 1, root, sizeof root);
	CHECK_STR(root, "kworker/0:1");
	task_root(TF_COMM_PID, &k, 1, root, sizeof root);
	CHECK_STR(root, "kworker/0:1-42");
	task_root(TF_PID, &k, 1, root, sizeof root);
	CHECK_STR(root, "42");
	task_root(TF_COMM, &k, 0, root, sizeof root);
	CHECK_STR(root, "[unknown]");
	struct task_id semi = { 5, 5, T1, "a;b" };
	task_root(TF_COMM_PID, &semi, 1, root, sizeof root);
	CHECK_STR(root, "a\\x3bb-5");          /* a ';' would split the folded frame */
}

static void test_cache(void)
{
	struct taskcache c = { 0 };
	struct task_id a = { 10, 10, T1, "a" }, b = { 11, 10, T2, "b" }, a2 = { 12, 12, T1, "true" };
	CHECK(taskcache_get(&c, T1, 5) == NULL);
	CHECK(taskcache_put(&c, &a, 100) == 0);
	CHECK(taskcache_put(&c, &b, 200) == 0);
	const struct task_id *g = taskcache_get(&c, T1, 100 + TASK_VALID_NS);
	CHECK(g && g->pid == 10 && !strcmp(g->comm, "a"));
	CHECK(taskcache_get(&c, T1, 101 + TASK_VALID_NS) == NULL);      /* too old: read again */
	CHECK(taskcache_put(&c, &a, 300) == 0);                          /* the same: not renamed */
	CHECK(taskcache_put(&c, &a2, 400) == 1);                         /* exec or a reused struct */
	g = taskcache_get(&c, T1, 500);
	CHECK(g && g->pid == 12 && !strcmp(g->comm, "true"));
	/* Filling it starts it over; nothing is lost but the cached names. */
	for (uint64_t i = 0; i < TASKCACHE_SLOTS; i++) {
		struct task_id t = { (int32_t)i, (int32_t)i, T1 + 0x2000 * (i + 2), "x" };
		taskcache_put(&c, &t, 600);
	}
	CHECK(c.n <= TASKCACHE_SLOTS / 2);
	taskcache_free(&c);
}

static void test_filter(void)
{
	struct task_filter f = { 0 };
	struct task_id a = { 100, 90, T1, "zerodd" }, b = { 7, 7, T2, "spinner" };
	char err[100];
	CHECK(task_filter_match(&f, &a, 1) && task_filter_match(&f, &a, 0)); /* off: everything */
	CHECK(task_filter_pids(&f, "5-8,90") == 0 && f.npids == 2);
	CHECK(task_filter_match(&f, &a, 1) && task_filter_match(&f, &b, 1)); /* tgid 90; pid 7 */
	CHECK(!task_filter_match(&f, &a, 0));                                /* no task: never */
	CHECK(task_filter_pids(&f, "8") == 0 && !task_filter_match(&f, &a, 1) && !task_filter_match(&f, &b, 1));
	static const char *const bad[] = { "", ",", "1,", "-1", "3-2", "a", "1 ", " 1", "99999999999", "1-x" };
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) CHECK(task_filter_pids(&f, bad[i]) == -1);
	f.npids = 0;
	CHECK(task_filter_comm(&f, "^(zero|rng)dd$", err, sizeof err) == 0);
	CHECK(task_filter_match(&f, &a, 1) && !task_filter_match(&f, &b, 1));
	CHECK(task_filter_comm(&f, "(unclosed", err, sizeof err) == -1 && err[0]);
	CHECK(task_filter_match(&f, &a, 1)); /* the good regex stays */
	task_filter_free(&f);
	CHECK(!task_filter_on(&f));
}

/* ---- the plan's reads ---- */

static const char xml[] = "<architecture>i386:x86-64</architecture>"
	"<reg name=\"rax\" bitsize=\"64\"/><reg name=\"rbx\" bitsize=\"64\"/><reg name=\"rcx\" bitsize=\"64\"/>"
	"<reg name=\"rdx\" bitsize=\"64\"/><reg name=\"rsi\" bitsize=\"64\"/><reg name=\"rdi\" bitsize=\"64\"/>"
	"<reg name=\"rbp\" bitsize=\"64\"/><reg name=\"rsp\" bitsize=\"64\"/>"
	"<reg name=\"r8\" bitsize=\"64\"/><reg name=\"r9\" bitsize=\"64\"/><reg name=\"r10\" bitsize=\"64\"/>"
	"<reg name=\"r11\" bitsize=\"64\"/><reg name=\"r12\" bitsize=\"64\"/><reg name=\"r13\" bitsize=\"64\"/>"
	"<reg name=\"r14\" bitsize=\"64\"/><reg name=\"r15\" bitsize=\"64\"/><reg name=\"rip\" bitsize=\"64\"/>"
	"<reg name=\"eflags\" bitsize=\"32\"/><reg name=\"cs\" bitsize=\"32\"/><reg name=\"ss\" bitsize=\"32\"/>"
	"<reg name=\"ds\" bitsize=\"32\"/><reg name=\"es\" bitsize=\"32\"/><reg name=\"fs\" bitsize=\"32\"/>"
	"<reg name=\"gs\" bitsize=\"32\"/><reg name=\"fs_base\" bitsize=\"64\"/><reg name=\"gs_base\" bitsize=\"64\"/>"
	"<reg name=\"k_gs_base\" bitsize=\"64\"/>";

static struct layout lay;

static void le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++) p[i] = (uint8_t)(v >> (8 * i));
}

/* Registers of a vCPU in user mode (pc outside the kernel: no stack to read), gs as given. */
static void regs(struct vcpu *v, uint64_t gs, uint64_t kgs)
{
	memset(v->regs, 0, sizeof v->regs);
	le64(v->regs + 128, 0x401000);
	v->regs[137] = 0x02;
	v->regs[140] = 0x33;                               /* cs: ring 3 */
	le64(v->regs + arch_find_reg(&lay, "gs_base")->off, gs);
	le64(v->regs + arch_find_reg(&lay, "k_gs_base")->off, kgs);
	v->nregs = lay.gsize;
}

static struct window *win(struct vcpu *v, int kind)
{
	for (int i = 0; i < v->nwin; i++)
		if (v->win[i].kind == kind) return &v->win[i];
	return NULL;
}

/* The fields' reply for a task: pid, tgid, name at the layout below (span from pid at +16). */
static void fields(struct window *w, int32_t pid, const char *comm)
{
	memset(w->data, 0, (size_t)w->len);
	w->data[0] = (uint8_t)pid;
	w->data[1] = (uint8_t)(pid >> 8);
	w->data[4] = (uint8_t)pid;
	w->data[5] = (uint8_t)(pid >> 8);
	memcpy(w->data + 16, comm, strlen(comm));
	w->ok = 1;
}

static void test_plan_reads(void)
{
	static struct plan p;
	static struct vcpu v;
	struct sample out;
	struct guestos os = { .os = OS_LINUX, .cur_off = 0x1fb80, .pid_off = 16, .tgid_off = 20, .comm_off = 32,
			      .comm_len = 16 };
	CHECK(arch_layout_xml(&lay, xml) == 0);
	struct sampler_cfg cfg = { .klo = 0xffff800000000000ull, .khi = ~0ull, .max_frames = 64, .os = &os };
	plan_init(&p, &lay, &cfg);
	CHECK(plan_tasks_on(&p) && p.task_lo == 16 && p.task_len == 32);
	memset(&v, 0, sizeof v);

	/* First sample: the GS base comes with the registers (user mode: k_gs_base), then the pointer
	 * is read, then -- a task new to the cache -- its fields: three trips. */
	p.now_ns = 1000;
	plan_first(&p, &v);
	CHECK(v.nwin == 0);
	regs(&v, 0x7f00000010, BASE);
	CHECK(plan_after_trip(&p, &v, &out, 0) == 0);
	struct window *w = win(&v, WIN_TASKPTR);
	CHECK(v.task_at == BASE + 0x1fb80 && w && w->addr == BASE + 0x1fb80 && w->len == 8);
	le64(w->data, T1);
	w->ok = 1;
	CHECK(plan_after_trip(&p, &v, &out, 0) == 0);
	w = win(&v, WIN_TASK);
	CHECK(w && w->addr == T1 + 16 && w->len == 32 && !w->predicted);
	fields(w, 300, "spinner");
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1);
	CHECK(out.has_task && out.task.pid == 300 && out.task.ptr == T1 && !strcmp(out.task.comm, "spinner"));
	CHECK(out.flags & SF_USER);
	CHECK(p.st.task.misses == 1 && p.st.task.reads == 2 && p.st.task.bytes == 40);

	/* Next sample: one trip reads the pointer and, speculatively, who ran last time. */
	p.now_ns = 2000;
	plan_first(&p, &v);
	CHECK(v.nwin == 2 && win(&v, WIN_TASKPTR)->addr == BASE + 0x1fb80);
	w = win(&v, WIN_TASK);
	CHECK(w->addr == T1 + 16 && w->predicted);
	le64(win(&v, WIN_TASKPTR)->data, T1);
	win(&v, WIN_TASKPTR)->ok = 1;
	fields(w, 300, "spinner");
	regs(&v, 0x7f00000010, BASE);
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1);
	CHECK(out.has_task && out.task.pid == 300 && p.st.task.verified == 1 && p.st.task.renamed == 0);

	/* The same struct, a new program (exec): the speculative read corrects the name at once. */
	plan_first(&p, &v);
	le64(win(&v, WIN_TASKPTR)->data, T1);
	win(&v, WIN_TASKPTR)->ok = 1;
	fields(win(&v, WIN_TASK), 301, "true");
	regs(&v, 0x7f00000010, BASE);
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1);
	CHECK(out.task.pid == 301 && !strcmp(out.task.comm, "true") && p.st.task.renamed == 1);

	/* Another task, switched in: unknown, so its fields cost a trip; the predicted read is ignored. */
	plan_first(&p, &v);
	le64(win(&v, WIN_TASKPTR)->data, T2);
	win(&v, WIN_TASKPTR)->ok = 1;
	fields(win(&v, WIN_TASK), 301, "true");
	regs(&v, 0x7f00000010, BASE);
	CHECK(plan_after_trip(&p, &v, &out, 0) == 0);
	w = &v.win[v.nwin - 1];
	CHECK(w->kind == WIN_TASK && w->addr == T2 + 16 && !w->predicted);
	fields(w, 7, "zerodd");
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1 && out.task.pid == 7 && p.st.task.misses == 2);

	/* Back to the first: from the cache, no extra trip. */
	plan_first(&p, &v);
	le64(win(&v, WIN_TASKPTR)->data, T1);
	win(&v, WIN_TASKPTR)->ok = 1;
	fields(win(&v, WIN_TASK), 7, "zerodd");
	regs(&v, 0x7f00000010, BASE);
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1);
	CHECK(out.task.pid == 301 && p.st.task.hits == 1);

	/* An implausible pointer: the sample stays, unattributed and counted. */
	plan_first(&p, &v);
	le64(win(&v, WIN_TASKPTR)->data, 0);
	win(&v, WIN_TASKPTR)->ok = 1;
	win(&v, WIN_TASK)->ok = 0;
	regs(&v, 0x7f00000010, BASE);
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1 && !out.has_task && p.st.task.lost == 1 && v.pred_task == 0);
	/* An unreadable pointer likewise; and the next sample reads no speculative fields. */
	plan_first(&p, &v);
	CHECK(v.nwin == 1);
	regs(&v, 0x7f00000010, BASE);
	CHECK(plan_after_trip(&p, &v, &out, 0) == 1 && !out.has_task && p.st.task.lost == 2);
	/* Every attributed-or-not sample is counted exactly once. */
	CHECK(p.st.task.verified + p.st.task.hits + p.st.task.misses + p.st.task.lost == 7);
	plan_free(&p);

	/* No gs_base in the stub's registers: attribution is off, sampling is not. */
	static struct layout bare;
	arch_layout_xml(&bare, "<architecture>i386:x86-64</architecture><reg name=\"rbp\" bitsize=\"64\"/>"
			"<reg name=\"rsp\" bitsize=\"64\"/><reg name=\"rip\" bitsize=\"64\"/>");
	plan_init(&p, &bare, &cfg);
	CHECK(!plan_tasks_on(&p));
	plan_free(&p);
}

void test_task(void)
{
	test_linux_btf();
	test_pure();
	test_cache();
	test_filter();
	test_plan_reads();
}
