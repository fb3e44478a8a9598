/* SPDX-License-Identifier: MIT */
/* test_offcpu_list.c: record --off-cpu over a list of tasks (Linux's, from init_task) -- the walk that finds it, the visits each stop predicts, a list that changes under them -- on literals. */
#include "check.h"
#include "../../sampler/offcpu.h"
#include "../../sampler/bytes.h"
#include <string.h>

#define MS 1000000LL
#define NT 8           /* tasks the fake guest has room for; task i lives at BASE + i * 0x1000 */
#define BASE 0xffff888000100000ull
#define LINK 16        /* the list_head (next, prev) in each task */
#define POISON2 (OFFCPU_LIST_POISON + 0x122)

/* A task of 128 bytes: state at 0, on_cpu at 4, stack at 8, tasks at 16, pid at 32, tgid at 36,
 * comm at 40 (16), sp at 64, thread_node at 72, group_leader at 88, signal at 96 (its
 * thread_head at +0x10 of the struct it points to). */
#define TNODE 72
#define SIG(g) (0xffff888000900000ull + (uint64_t)(g) * 0x100)
static uint8_t mem[NT][128];

static uint64_t addr(int i)
{
	return BASE + (uint64_t)i * 0x1000;
}

static void task(int i, int pid, const char *comm, uint32_t state, int on_cpu)
{
	uint8_t *e = mem[i];
	memset(e, 0, sizeof mem[i]);
	put_le32(e, state);
	put_le32(e + 4, (uint32_t)on_cpu);
	put_le64(e + 8, 0xffffc90000000000ull + (uint64_t)i * 0x10000);
	put_le32(e + 32, (uint32_t)pid);
	put_le32(e + 36, (uint32_t)pid);
	memcpy(e + 40, comm, strlen(comm));
	put_le64(e + 64, 0xffffc90000000000ull + (uint64_t)i * 0x10000 + 0x3e00);
	/* its own group, alone in it */
	put_le64(e + TNODE, SIG(i) + 0x10);
	put_le64(e + TNODE + 8, SIG(i) + 0x10);
	put_le64(e + 88, addr(i));
	put_le64(e + 96, SIG(i));
}

/* Task i a thread of leader's group, the group's threads (leader first) in order[] (n). */
static void group(int leader, const int *order, int n)
{
	uint64_t head = SIG(leader) + 0x10;
	for (int k = 0; k < n; k++) {
		put_le64(mem[order[k]] + TNODE, k + 1 < n ? addr(order[k + 1]) + TNODE : head);
		put_le64(mem[order[k]] + TNODE + 8, k ? addr(order[k - 1]) + TNODE : head);
		put_le64(mem[order[k]] + 88, addr(leader));
		put_le64(mem[order[k]] + 96, SIG(leader));
	}
}

/* The circular list through the tasks in order[] (order[0] the head), n of them. */
static void link_list(const int *order, int n)
{
	for (int k = 0; k < n; k++) {
		put_le64(mem[order[k]] + LINK, addr(order[(k + 1) % n]) + LINK);
		put_le64(mem[order[k]] + LINK + 8, addr(order[(k + n - 1) % n]) + LINK);
	}
}

static void layout(struct offcpu_layout *L)
{
	memset(L, 0, sizeof *L);
	L->mode = OL_LIST;
	L->table = addr(0);
	L->stride = 128;
	L->link_off = LINK;
	L->nblocks = 2;
	L->blocks[0].off = 0, L->blocks[0].len = 56;
	L->blocks[1].off = 64, L->blocks[1].len = 40;
	L->thread_off = TNODE, L->leader_off = 88, L->signal_off = 96, L->thread_head_off = 0x10;
	L->state_off = 0, L->state_size = 4;
	L->on_cpu_off = 4;
	L->stack_off = 8;
	L->stack_size_off = OFFCPU_NO_OFF;
	L->stack_size = 16384;
	L->pid_off = 32, L->tgid_off = 36;
	L->name_off = 40, L->name_len = 16;
	L->sp_off = 64;
	L->linux_state = 1;
	L->idle_kind = -1;
	L->resume_pc = 0xffffffff81000010ull;
}

static uint8_t bufs[OFFCPU_MAX_VISITS * 128];
static uint8_t stackbytes[4096];

/* One trip: plan, "read" from mem (an entry's blocks land at their dst; a task index past NT
 * is unreadable), decode at now. */
static int trip(struct offcpu *oc, int64_t now, struct offcpu_hit *hit, int *nreq_out)
{
	struct offcpu_req req[64];
	int nreq = offcpu_plan(oc, req, 64);
	for (int r = 0; r < nreq; r++) {
		if (req[r].slot >= 0) {
			req[r].data = stackbytes;
			continue;
		}
		uint64_t i = (req[r].addr - BASE) / 0x1000, off = (req[r].addr - BASE) % 0x1000;
		req[r].data = NULL;
		if (req[r].addr >= BASE && i < NT && off + req[r].len <= 128) {
			memcpy(bufs + req[r].dst, mem[i] + off, req[r].len);
			req[r].data = bufs + req[r].dst;
		}
	}
	if (nreq_out) *nreq_out = nreq;
	return offcpu_decode(oc, req, nreq, now, hit, 16);
}

static int slot(const struct offcpu *oc, int i)
{
	for (uint32_t s = 0; s < oc->nslots; s++)
		if (oc->t[s].id.ptr == addr(i)) return (int)s;
	return -1;
}

/* The census finds the list a task a trip; then each stop visits `slice` tasks predicted from the
 * last links, in one trip with the stacks of the ones found waiting; the classes are Linux's. */
static void test_census_and_visits(void)
{
	static struct offcpu oc;
	struct offcpu_layout L;
	struct offcpu_hit hit[16];
	int order[] = { 0, 1, 2, 3, 4 }, nreq;
	layout(&L);
	task(0, 0, "swapper/0", 0, 1);          /* the head: idle */
	task(1, 1, "init", 1, 0);               /* S */
	task(2, 7, "spin", 0, 1);               /* on a CPU */
	task(3, 9, "dd", 2, 0);                 /* D */
	task(4, 11, "kworker/0:1", 0x402, 0);   /* TASK_IDLE: counted as blocked */
	link_list(order, 5);
	offcpu_init(&oc, &L, 16384, 2, 10 * MS);
	int trips = 0;
	while (oc.census && trips < 20) {
		CHECK(trip(&oc, 1 * MS, hit, &nreq) == 0 && nreq == 2); /* one entry's two blocks, no stack yet */
		trips++;
	}
	CHECK(trips == 5 && oc.st.rounds == 1 && oc.nslots == 5 && oc.st.stops == 0);
	CHECK(oc.t[slot(&oc, 1)].cls == OC_BLOCKED && oc.t[slot(&oc, 2)].cls == OC_RUNNING);
	CHECK(oc.t[slot(&oc, 3)].cls == OC_UNINTERRUPTIBLE && oc.t[slot(&oc, 4)].cls == OC_BLOCKED);
	CHECK(oc.t[slot(&oc, 0)].cls == OC_NONE);
	CHECK(oc.t[slot(&oc, 3)].id.pid == 9 && !strcmp(oc.t[slot(&oc, 3)].id.comm, "dd"));
	/* stop 1: the head and init (predicted), init's stack read in the same trip */
	int nh = trip(&oc, 51 * MS, hit, &nreq);
	CHECK(nreq == 2 * 2 + 1 && oc.visit[0] == addr(0) && oc.visit[1] == addr(1));
	CHECK(nh == 1 && hit[0].slot == slot(&oc, 1) && hit[0].cls == OC_BLOCKED && hit[0].weight == 5); /* 50 ms */
	/* stop 2: spin (running: no stack) and dd (D, 50 ms) */
	nh = trip(&oc, 61 * MS, hit, &nreq);
	CHECK(oc.visit[0] == addr(2) && oc.visit[1] == addr(3) && nreq == 2 * 2 + 1);
	CHECK(nh == 1 && hit[0].cls == OC_UNINTERRUPTIBLE && hit[0].weight == 6);
	/* stop 3: the kworker, the round's end (its link leads to the head) */
	nh = trip(&oc, 71 * MS, hit, &nreq);
	CHECK(oc.nvisit == 1 && nh == 1 && hit[0].weight == 7 && oc.st.rounds == 2 && oc.at == 0);
	CHECK(oc.st.relinked == 0 && oc.st.gone == 0 && oc.st.stops == 3);
}

/* A task that exits (prev poisoned, its neighbours relinked) is let go; one forked (at the tail)
 * is found; a visit predicted from a link that changed is cut, and the next stop reads on from
 * the fresh link. */
static void test_a_changing_list(void)
{
	static struct offcpu oc;
	struct offcpu_layout L;
	struct offcpu_hit hit[16];
	int order[] = { 0, 1, 2, 3 };
	layout(&L);
	task(0, 0, "swapper/0", 0, 1);
	task(1, 1, "init", 1, 0);
	task(2, 5, "sh", 1, 0);
	task(3, 6, "sleep", 1, 0);
	link_list(order, 4);
	offcpu_init(&oc, &L, 16384, 4, 10 * MS);
	while (oc.census) CHECK(trip(&oc, 0, hit, NULL) == 0);
	/* sleep exits: its prev poisoned, sh's link now leads to a new task, tail 4 */
	task(4, 8, "cat", 1, 0);
	int order2[] = { 0, 1, 2, 4 };
	link_list(order2, 4);
	put_le64(mem[3] + LINK + 8, POISON2);
	trip(&oc, 10 * MS, hit, NULL); /* visits head, init, sh, sleep (predicted): cut at sleep */
	CHECK(oc.st.relinked == 1 && oc.at == addr(4));
	trip(&oc, 20 * MS, hit, NULL); /* cat, then the round's end: sleep, never met, let go */
	CHECK(oc.visit[0] == addr(4) && oc.st.rounds == 2 && oc.st.gone == 1 && slot(&oc, 3) < 0 && slot(&oc, 4) >= 0);
	/* a visit that finds its task gone (prev poisoned) lets it go and starts again at the head */
	put_le64(mem[4] + LINK + 8, POISON2);
	trip(&oc, 30 * MS, hit, NULL); /* head, init, sh, cat (sh's link still leads to it) */
	CHECK(oc.st.relinked == 1 && oc.st.gone == 2 && slot(&oc, 4) < 0 && oc.at == 0);
	/* an unreadable head: -1, from the head again */
	L.table = BASE + NT * 0x1000ull;
	offcpu_init(&oc, &L, 16384, 4, 10 * MS);
	CHECK(trip(&oc, 0, hit, NULL) == -1 && oc.st.unreadable == 1 && oc.census);
}

/* A process's threads are on its group's list only: the walk goes leader, its threads, then the
 * next process; a thread that exits (its thread_node's prev poisoned) is let go; with no thread
 * lists in the layout only the task list is followed. */
static void test_threads(void)
{
	static struct offcpu oc;
	struct offcpu_layout L;
	struct offcpu_hit hit[16];
	int order[] = { 0, 1, 2 }, threads[] = { 1, 5, 6 }, trips = 0;
	layout(&L);
	task(0, 0, "swapper/0", 0, 1);
	task(1, 20, "server", 1, 0);
	task(5, 21, "worker", 1, 0);
	task(6, 22, "worker", 2, 0);
	task(2, 30, "sh", 1, 0);
	put_le32(mem[5] + 36, 20), put_le32(mem[6] + 36, 20); /* tgid: the leader's pid */
	put_le64(mem[5] + LINK, 0xffff888000dead00ull);       /* a thread's own tasks: stale garbage */
	link_list(order, 3);
	group(1, threads, 3);
	offcpu_init(&oc, &L, 16384, 16, 10 * MS);
	while (oc.census && trips < 20) {
		CHECK(trip(&oc, 0, hit, NULL) == 0);
		CHECK(oc.visit[0] == addr((int[]){ 0, 1, 5, 6, 2 }[trips]));
		trips++;
	}
	CHECK(trips == 5 && oc.nslots == 5 && oc.t[slot(&oc, 6)].cls == OC_UNINTERRUPTIBLE);
	CHECK(oc.t[slot(&oc, 6)].id.pid == 22 && oc.t[slot(&oc, 6)].id.tgid == 20);
	/* a round in one stop, predicted: head, server, worker, worker, sh */
	trip(&oc, 10 * MS, hit, NULL);
	CHECK(oc.nvisit == 5 && oc.visit[2] == addr(5) && oc.visit[4] == addr(2) && oc.st.rounds == 2);
	/* worker 5 exits */
	int rest[] = { 1, 6 };
	group(1, rest, 2);
	put_le64(mem[5] + TNODE + 8, POISON2);
	trip(&oc, 20 * MS, hit, NULL); /* server's fresh link skips 5: cut there, on from 6 */
	CHECK(oc.st.relinked == 1 && oc.at == addr(6));
	trip(&oc, 30 * MS, hit, NULL); /* 6, sh, the round's end: 5 was not met */
	CHECK(oc.st.rounds == 3 && oc.st.gone == 1 && slot(&oc, 5) < 0);
	/* no thread lists: leaders only */
	L.thread_off = OFFCPU_NO_OFF;
	offcpu_init(&oc, &L, 16384, 16, 10 * MS);
	for (trips = 0; oc.census && trips < 20; trips++) trip(&oc, 0, hit, NULL);
	CHECK(trips == 3 && slot(&oc, 6) < 0);
}

void test_offcpu_list(void)
{
	test_threads();
	test_census_and_visits();
	test_a_changing_list();
}
