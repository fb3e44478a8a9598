/* SPDX-License-Identifier: MIT */
/* test_offcpu.c: record --off-cpu's decisions -- which reads a stop makes, what the table says, how wait time becomes weights -- on literals. */
#include "check.h"
#include "../../sampler/offcpu.h"
#include "../../sampler/sample.h"
#include "../../sampler/bytes.h"
#include "../../sampler/files.h"
#include "../../sampler/elfsec.h"
#include "../../sampler/offcpu_dwarf.h"
#include <gelf.h>
#include <stdlib.h>

#define MS 1000000LL
enum { RUNNING = 2, RUNNABLE = 1, SLEEPING = 3, FREE = 0 }; /* the guest's enumerators, as ours has them */

/* A table of 4 entries of 64 bytes: pid at 0, name at 4 (16), state at 20 (4), kind at 24 (4),
 * sp at 32, stack at 40, stack_size at 48. Kind 0 is idle. */
static void layout(struct offcpu_layout *L)
{
	memset(L, 0, sizeof *L);
	L->table = 0x1000;
	L->count = 4;
	L->stride = 64;
	L->pid_off = 0;
	L->name_off = 4;
	L->name_len = 16;
	L->state_off = 20;
	L->state_size = 4;
	L->kind_off = 24;
	L->kind_size = 4;
	L->sp_off = 32;
	L->stack_off = 40;
	L->stack_size_off = 48;
	L->cls[RUNNING] = OC_RUNNING;
	L->cls[RUNNABLE] = OC_RUNNABLE;
	L->cls[SLEEPING] = OC_BLOCKED;
	L->idle_kind = 0;
	L->resume_pc = 0xffff0010;
}

static void entry(uint8_t *table, int i, int pid, const char *name, int state, int kind, uint64_t sp)
{
	uint8_t *e = table + 64 * i;
	memset(e, 0, 64);
	put_le32(e, (uint32_t)pid);
	memcpy(e + 4, name, strlen(name));
	put_le32(e + 20, (uint32_t)state);
	put_le32(e + 24, (uint32_t)kind);
	put_le64(e + 32, sp);
	put_le64(e + 40, 0x100000ull * (uint64_t)(i + 1)); /* each its own 16 KiB stack */
	put_le64(e + 48, 16384);
}

static uint8_t stackbytes[4096];

/* What the vCPUs' samples say at a stop at now: each entry of the 4-entry table whose state is
 * RUNNING is on one (as our kernel's current task). */
static void vcpus(struct offcpu *oc, const uint8_t *table, int64_t now)
{
	struct sample s[4];
	int n = 0;
	for (int i = 0; i < 4; i++) {
		if (le32(table + 64 * i + 20) != RUNNING) continue;
		memset(&s[n], 0, sizeof s[n]);
		s[n].has_task = 1;
		s[n++].task.ptr = 0x1000 + 64 * (uint64_t)i;
	}
	offcpu_running(oc, s, n, now);
}

/* One stop: plan, "read" (the table as given, every stack readable unless bad_slot), decode. */
static int stop(struct offcpu *oc, uint8_t *table, int64_t now, struct offcpu_hit *hit, int *nreq_out, int bad_slot)
{
	struct offcpu_req req[16];
	vcpus(oc, table, now);
	int nreq = offcpu_plan(oc, req, 16);
	for (int i = 0; i < nreq; i++) req[i].data = req[i].slot < 0 ? table : req[i].slot == bad_slot ? NULL : stackbytes;
	if (nreq_out) *nreq_out = nreq;
	return offcpu_decode(oc, req, nreq, now, hit, 16);
}

/* A sleeping task: learned at the first stop, read and weighed from the second on, each stop the
 * periods since the one before; a running one and an idle one never; a free slot neither. */
static void test_weights(void)
{
	static struct offcpu oc;
	struct offcpu_layout L;
	uint8_t table[256];
	struct offcpu_hit hit[16];
	int nreq;
	layout(&L);
	offcpu_init(&oc, &L, 16384, 0, 10 * MS);
	entry(table, 0, 1, "idle/0", RUNNABLE, 0, 0x100100);   /* idle: left out */
	entry(table, 1, 3, "shell", SLEEPING, 1, 0x203f00);
	entry(table, 2, 4, "split", RUNNING, 2, 0x300800);
	entry(table, 3, 0, "", FREE, 0, 0);
	CHECK(stop(&oc, table, 100 * MS, hit, &nreq, -1) == 0 && nreq == 1); /* the table alone: nothing known yet */
	CHECK(stop(&oc, table, 110 * MS, hit, &nreq, -1) == 1 && nreq == 2);
	CHECK(hit[0].slot == 1 && hit[0].cls == OC_BLOCKED && hit[0].weight == 1);
	CHECK(hit[0].stack->addr == 0x203f00 && hit[0].stack->len == 0x100); /* to the stack's top */
	CHECK(oc.t[1].id.pid == 3 && !strcmp(oc.t[1].id.comm, "shell"));
	CHECK(stop(&oc, table, 135 * MS, hit, NULL, -1) == 1 && hit[0].weight == 3); /* 25 ms: 2.5 rounds to 3 */
	CHECK(stop(&oc, table, 140 * MS, hit, NULL, -1) == 0); /* owes 0 ms (25 - 30 + 5): none yet */
	CHECK(stop(&oc, table, 150 * MS, hit, NULL, -1) == 1 && hit[0].weight == 1);
	CHECK(oc.st.samples == 3 && oc.st.stops == 5);
	CHECK(oc.st.weight == 5); /* 50 ms from the first stop on: the time, given back whole */
}

/* A task that ran between two stops (its sp moved): the stack read at the old sp is stale, and
 * the next stop reads it at the new one; time owed is kept, not lost. */
static void test_stale(void)
{
	static struct offcpu oc;
	struct offcpu_layout L;
	uint8_t table[256];
	struct offcpu_hit hit[16];
	layout(&L);
	offcpu_init(&oc, &L, 16384, 0, 10 * MS);
	for (int i = 0; i < 4; i++) entry(table, i, 0, "", FREE, 0, 0);
	entry(table, 1, 3, "w", SLEEPING, 1, 0x200f00);
	stop(&oc, table, 100 * MS, hit, NULL, -1);
	/* the read goes out for 0x200f00, but by the time it is decoded the table says 0x200e00 */
	struct offcpu_req req[16];
	int nreq = offcpu_plan(&oc, req, 16);
	entry(table, 1, 3, "w", SLEEPING, 1, 0x200e00);
	for (int i = 0; i < nreq; i++) req[i].data = req[i].slot < 0 ? table : stackbytes;
	CHECK(offcpu_decode(&oc, req, nreq, 110 * MS, hit, 16) == 0 && oc.st.stale == 1);
	CHECK(stop(&oc, table, 120 * MS, hit, NULL, -1) == 1 && hit[0].weight == 2 && hit[0].stack->addr == 0x200e00);
	/* unreadable: counted, its time kept for later */
	CHECK(stop(&oc, table, 130 * MS, hit, NULL, 1) == 0 && oc.st.unreadable == 1);
	CHECK(stop(&oc, table, 140 * MS, hit, NULL, -1) == 1 && hit[0].weight == 2);
	/* it runs (a vCPU's sample says so): what it owed stays owed, the time it ran is not owed;
	 * it waits again at another sp: the time is given to the stack read there */
	stop(&oc, table, 150 * MS, hit, NULL, 1); /* unreadable again: 10 ms owed */
	entry(table, 1, 3, "w", RUNNING, 1, 0x200e00);
	CHECK(stop(&oc, table, 160 * MS, hit, NULL, -1) == 0 && oc.t[1].owed_ns == 10 * MS && oc.st.dropped_ns == 0);
	entry(table, 1, 3, "w", SLEEPING, 1, 0x200d00);
	CHECK(stop(&oc, table, 170 * MS, hit, NULL, -1) == 0); /* its stack not read yet: 20 ms owed */
	CHECK(stop(&oc, table, 180 * MS, hit, NULL, 1) == 0);  /* unreadable: 30 */
	entry(table, 1, 0, "", FREE, 0, 0);                    /* it ends: what it owed is dropped, counted */
	CHECK(stop(&oc, table, 190 * MS, hit, NULL, -1) == 0 && oc.st.dropped_ns == (uint64_t)(30 * MS));
	/* the table itself unreadable: nothing changes */
	struct offcpu_req t0 = { L.table, 256, -1, 0, 0, NULL };
	CHECK(offcpu_decode(&oc, &t0, 1, 200 * MS, hit, 16) == -1 && oc.st.unreadable == 4);
}

/* The budget: stacks that do not fit wait for a later stop, the start rotating so each gets its
 * turn; their time is owed meanwhile and given when read. */
static void test_budget(void)
{
	static struct offcpu oc;
	struct offcpu_layout L;
	uint8_t table[256];
	struct offcpu_hit hit[16];
	layout(&L);
	offcpu_init(&oc, &L, 0x100, 0, 10 * MS); /* room for one 0x100-byte stack a stop */
	entry(table, 0, 2, "a", SLEEPING, 1, 0x100000 + 16384 - 0x100);
	entry(table, 1, 3, "b", SLEEPING, 1, 0x200000 + 16384 - 0x100);
	entry(table, 2, 4, "c", SLEEPING, 1, 0x300000 + 16384 - 0x100);
	entry(table, 3, 5, "d", SLEEPING, 1, 0x400000 + 16384 - 0x100);
	stop(&oc, table, 1000 * MS, hit, NULL, -1);
	uint64_t got[4] = { 0 };
	for (int k = 1; k <= 40; k++) {
		int n = stop(&oc, table, 1000 * MS + k * 10 * MS, hit, NULL, -1);
		CHECK(n == 1);
		for (int i = 0; i < n; i++) got[hit[i].slot] += hit[i].weight;
	}
	for (int i = 0; i < 4; i++) CHECK(got[i] >= 36 && got[i] <= 40); /* each its 40 periods, the last few still owed */
	CHECK(oc.st.deferred == 40 * 3);
}

/* One stop: plan, "read" the slice it asked for out of the whole table, decode. */
static int stop_slice(struct offcpu *oc, uint8_t *table, int64_t now, struct offcpu_hit *hit, struct offcpu_req *req,
		      int *nreq_out)
{
	vcpus(oc, table, now);
	int nreq = offcpu_plan(oc, req, 16);
	for (int i = 0; i < nreq; i++) req[i].data = req[i].slot < 0 ? table + (req[i].addr - 0x1000) : stackbytes;
	*nreq_out = nreq;
	return offcpu_decode(oc, req, nreq, now, hit, 16);
}

/* Two entries a stop: the first stop a census of the whole table, then the slices take turns
 * (0-1, 2-3, 0-1, ...), each entry's time owed from its own previous visit, so a sleeper seen
 * every other stop weighs the two periods between; at the end each sleeper is given the time since
 * its last visit under the stack that visit walked (never walked: the time is dropped, counted). */
static void test_slices(void)
{
	static struct offcpu oc;
	struct offcpu_layout L;
	uint8_t table[256];
	struct offcpu_hit hit[16];
	struct offcpu_req req[16];
	int nreq;
	layout(&L);
	offcpu_init(&oc, &L, 16384, 2, 10 * MS);
	entry(table, 0, 2, "a", RUNNING, 1, 0x103f00);
	entry(table, 1, 3, "b", SLEEPING, 1, 0x203f00);
	entry(table, 2, 4, "c", SLEEPING, 1, 0x303f00);
	entry(table, 3, 0, "", FREE, 0, 0);
	CHECK(stop_slice(&oc, table, 100 * MS, hit, req, &nreq) == 0 && nreq == 1);
	CHECK(req[0].addr == 0x1000 && req[0].len == 256); /* the census: all four */
	CHECK(stop_slice(&oc, table, 110 * MS, hit, req, &nreq) == 1 && nreq == 2); /* 0-1: b's stack */
	CHECK(req[0].addr == 0x1000 && req[0].len == 128 && hit[0].slot == 1 && hit[0].weight == 1);
	CHECK(stop_slice(&oc, table, 120 * MS, hit, req, &nreq) == 1 && nreq == 2); /* 2-3: c's */
	CHECK(req[0].addr == 0x1080 && req[0].len == 128 && hit[0].slot == 2 && hit[0].weight == 2);
	CHECK(stop_slice(&oc, table, 130 * MS, hit, req, &nreq) == 1 && hit[0].slot == 1 && hit[0].weight == 2);
	CHECK(stop_slice(&oc, table, 140 * MS, hit, req, &nreq) == 1 && hit[0].slot == 2 && hit[0].weight == 2);
	CHECK(stop_slice(&oc, table, 150 * MS, hit, req, &nreq) == 1 && hit[0].slot == 1 && hit[0].weight == 2);
	/* the end, at 165 ms: each sleeper is given its time since its last visit under that visit's
	 * stack -- once one was walked (kept); here none was: c's 25 ms since 140, b's 15 since 150
	 * dropped, counted */
	CHECK(offcpu_flush(&oc, 165 * MS, hit, 16) == 0 && oc.st.dropped_ns == (uint64_t)(40 * MS));
	stop_slice(&oc, table, 170 * MS, hit, req, &nreq);  /* 2-3: c owes 5 ms, given as 1 period */
	oc.t[hit[0].slot].kept = 1;                           /* as offcpu_io.c does for each walk it keeps */
	stop_slice(&oc, table, 180 * MS, hit, req, &nreq);  /* 0-1: b owes 15, given as 2 */
	oc.t[hit[0].slot].kept = 1;
	uint64_t w0 = oc.st.weight;
	/* at 195: b -5 + 15 ms (1 period), c -5 + 25 (2); cap 1 a call, then the rest */
	CHECK(offcpu_flush(&oc, 195 * MS, hit, 1) == 1 && hit[0].slot == 1 && hit[0].weight == 1 && !hit[0].stack);
	CHECK(offcpu_flush(&oc, 195 * MS, hit, 16) == 1 && hit[0].slot == 2 && hit[0].weight == 2);
	CHECK(offcpu_flush(&oc, 195 * MS, hit, 16) == 0 && oc.st.held == 2 && oc.st.weight == w0 + 3);
	/* a slice of 3 over 4 entries: the census, then 0-2, then 3 alone, then 0-2 */
	offcpu_init(&oc, &L, 16384, 3, 10 * MS);
	stop_slice(&oc, table, 100 * MS, hit, req, &nreq);
	CHECK(req[0].addr == 0x1000 && req[0].len == 256);
	stop_slice(&oc, table, 110 * MS, hit, req, &nreq);
	CHECK(req[0].addr == 0x1000 && req[0].len == 192);
	stop_slice(&oc, table, 120 * MS, hit, req, &nreq);
	CHECK(req[0].addr == 0x10c0 && req[0].len == 64);
	stop_slice(&oc, table, 130 * MS, hit, req, &nreq);
	CHECK(req[0].addr == 0x1000 && nreq == 3);
}

/* A task that comes and goes: each visit's state takes the interval before it, so blocked and
 * runnable time add up to the time it was not running, none dropped for a change of state; the
 * time a vCPU was seen running it is owed nothing (the vCPUs' samples have that time). */
static void test_changing_state(void)
{
	static struct offcpu oc;
	struct offcpu_layout L;
	uint8_t table[256];
	struct offcpu_hit hit[16];
	struct offcpu_req req[16];
	int nreq;
	static const int seq[] = { SLEEPING, RUNNABLE, SLEEPING, RUNNING, SLEEPING, SLEEPING, RUNNABLE, RUNNABLE };
	uint64_t by[OC_NCLASS] = { 0 };
	layout(&L);
	offcpu_init(&oc, &L, 16384, 0, 10 * MS);
	for (int i = 0; i < 4; i++) entry(table, i, 0, "", FREE, 0, 0);
	entry(table, 1, 3, "w", SLEEPING, 1, 0x203f00);
	stop_slice(&oc, table, 100 * MS, hit, req, &nreq);
	for (int k = 0; k < 8; k++) {
		entry(table, 1, 3, "w", seq[k], 1, 0x203f00); /* RUNNING: on a vCPU at this stop (vcpus) */
		int n = stop_slice(&oc, table, (110 + 10 * k) * MS, hit, req, &nreq);
		for (int h = 0; h < n; h++) by[hit[h].cls] += hit[h].weight;
	}
	CHECK(by[OC_BLOCKED] == 4 && by[OC_RUNNABLE] == 3 && oc.st.dropped_ns == 0);
}

/* How far a stack is read: the whole window (here to the stack's top) until a walk says how far it
 * goes, then that plus the margin; a walk that wanted more than a shortened read is taken back --
 * its weight owed again, the whole window read next time. */
static void test_span(void)
{
	static struct offcpu oc;
	struct offcpu_layout L;
	uint8_t table[256];
	struct offcpu_hit hit[16];
	struct offcpu_req req[16];
	int nreq;
	layout(&L);
	offcpu_init(&oc, &L, 16384, 0, 10 * MS);
	for (int i = 0; i < 4; i++) entry(table, i, 0, "", FREE, 0, 0);
	entry(table, 1, 3, "w", SLEEPING, 1, 0x200000);        /* 16 KiB above it: the window's worth */
	stop_slice(&oc, table, 100 * MS, hit, req, &nreq);
	CHECK(stop_slice(&oc, table, 110 * MS, hit, req, &nreq) == 1 && hit[0].stack->len == OFFCPU_WINDOW);
	CHECK(offcpu_walked(&oc, &hit[0], 0x200000 + 300, 0) == 0);
	CHECK(stop_slice(&oc, table, 120 * MS, hit, req, &nreq) == 1 && hit[0].stack->len == 368); /* 300 + 64, to 16 */
	CHECK(offcpu_walked(&oc, &hit[0], 0x200000 + 368, 1) == 1); /* wanted more: taken back */
	CHECK(oc.st.short_reads == 1 && oc.st.samples == 1 && oc.st.weight == 1);
	CHECK(stop_slice(&oc, table, 130 * MS, hit, req, &nreq) == 1 && hit[0].stack->len == OFFCPU_WINDOW);
	CHECK(hit[0].weight == 2); /* the period taken back, and this one */
	/* a new sp forgets the span */
	CHECK(offcpu_walked(&oc, &hit[0], 0x200000 + 100, 0) == 0);
	entry(table, 1, 3, "w", SLEEPING, 1, 0x200100);
	stop_slice(&oc, table, 140 * MS, hit, req, &nreq);          /* read at the old sp: stale */
	CHECK(oc.st.stale == 1);
	CHECK(stop_slice(&oc, table, 150 * MS, hit, req, &nreq) == 1 && hit[0].stack->len == OFFCPU_WINDOW &&
	      hit[0].stack->addr == 0x200100);
}

static uint64_t symbol(Elf *e, const char *name, uint64_t *size)
{
	GElf_Sym y;
	if (elfsec_symbol(e, name, &y) < 0) return 0;
	if (size) *size = y.st_size;
	return y.st_value;
}

/* Each architecture's build of our kernel: the table (MAX_TASKS = 64 tasks), the members at
 * offsets inside the struct, the states, and a resume address inside swtch, past its stores. */
static void test_layout_of_our_kernels(void)
{
	static const char *const kernels[] = { KERNEL_X86, KERNEL_A64, KERNEL_RV64 };
	for (size_t k = 0; k < sizeof kernels / sizeof kernels[0]; k++) {
		uint8_t *buf = NULL;
		size_t len;
		char err[256];
		elf_version(EV_CURRENT);
		CHECK(file_read(kernels[k], 1u << 30, &buf, &len, err, sizeof err) == 0);
		Elf *e = buf ? elf_memory((char *)buf, len) : NULL;
		struct offcpu_layout L;
		CHECK(e && offcpu_testkernel_layout(e, &L, err, sizeof err) == 0);
		uint64_t swtch_size = 0, swtch = e ? symbol(e, "swtch", &swtch_size) : 0;
		CHECK(L.table == (e ? symbol(e, "tasks", NULL) : 1) && L.count == 64 && L.stride >= 64 && L.stride % 8 == 0);
		CHECK(L.state_size == 4 && L.name_len == 16 && L.pid_off + 4 <= L.stride && L.sp_off + 8 <= L.stride);
		CHECK(L.stack_off + 8 <= L.stride && L.stack_size_off + 8 <= L.stride && L.sp_off % 8 == 0);
		CHECK(L.cls[0] == OC_NONE && L.idle_kind == 0); /* TASK_FREE, KIND_IDLE: the first enumerators */
		int running = 0, runnable = 0, blocked = 0;
		for (int i = 0; i < 16; i++) {
			running += L.cls[i] == OC_RUNNING;
			runnable += L.cls[i] == OC_RUNNABLE;
			blocked += L.cls[i] == OC_BLOCKED;
		}
		CHECK(running == 1 && runnable == 1 && blocked == 2); /* SLEEPING and BLOCKED both wait */
		CHECK(swtch && L.resume_pc > swtch + 8 && L.resume_pc < swtch + (swtch_size ? swtch_size : 64)); /* x86: no .size */
		if (e) elf_end(e);
		free(buf);
	}
	/* not our kernel: one line saying what is missing */
	uint8_t *buf = NULL;
	size_t len;
	char err[256];
	struct offcpu_layout L;
	CHECK(file_read(TASK_SHAPES_ELF, 1u << 30, &buf, &len, err, sizeof err) == 0);
	Elf *e = buf ? elf_memory((char *)buf, len) : NULL;
	CHECK(e && offcpu_testkernel_layout(e, &L, err, sizeof err) == -1 && strstr(err, "task table"));
	if (e) elf_end(e);
	free(buf);
}

void test_offcpu(void)
{
	test_layout_of_our_kernels();
	test_weights();
	test_stale();
	test_budget();
	test_slices();
	test_changing_state();
	test_span();
}
