/* SPDX-License-Identifier: MIT */
/* qperf_peer.c: the bench's TCG-plugin peer -- a minimal sampler written from qperf's documented method (not its code). */
/*
 * qperf samples a guest from inside QEMU: a TCG plugin that checks, as the guest executes, whether
 * a vCPU's wall-clock deadline has passed, and if so records where that vCPU is. This is the
 * method in its three forms, for bench/throughput_bench.py to measure what each costs the guest:
 *
 *   mode=insn   a callback on every executed instruction reads the clock (qperf's own)
 *   mode=tb     the same check once per executed translation block
 *   mode=count  no clock: a sample every `every` executed instructions (counted per block)
 *
 * Arguments: mode=insn|tb|count, hz=N (insn, tb; default 100), every=N (count; default 10^7),
 * out=PATH (at exit: "vcpu samples" lines, then "pc count" lines, pcs sorted). Each vCPU keeps
 * its own deadline and table (callbacks of different vCPUs run on their own threads).
 * Built against QEMU 10.0's qemu-plugin.h (bench/plugin_header.py); never part of `make test`.
 */
#include <qemu-plugin.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

QEMU_PLUGIN_EXPORT int qemu_plugin_version = QEMU_PLUGIN_VERSION;

#define MAX_VCPUS 64
#define TABLE 65536 /* pcs a vCPU's table holds (open addressing; the rest counted as lost) */

enum { M_INSN, M_TB, M_COUNT };

struct slot { uint64_t pc, n; };
struct vcpu {
	int64_t next_ns;       /* the next deadline (insn, tb) */
	uint64_t insns, next;  /* executed instructions and the next sample's count (count) */
	uint64_t samples, lost;
	struct slot *t;
	char pad[64];          /* vCPUs' hot fields on their own cache lines */
};

struct tbinfo { uint64_t pc, n; };

static int mode = M_INSN;
static int64_t period_ns = 10000000;
static uint64_t every = 10000000;
static const char *out_path;
static struct vcpu vcpus[MAX_VCPUS];

static int64_t now_ns(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static void record(struct vcpu *v, uint64_t pc)
{
	if (!v->t && !(v->t = calloc(TABLE, sizeof *v->t))) {
		v->lost++;
		return;
	}
	v->samples++;
	for (uint64_t i = (pc * 0x9e3779b97f4a7c15ull) >> 48, k = 0; k < TABLE; i = (i + 1) % TABLE, k++) {
		if (v->t[i].n && v->t[i].pc != pc) continue;
		v->t[i].pc = pc;
		v->t[i].n++;
		return;
	}
	v->lost++;
}

/* insn and tb: the deadline check, the vaddr as the callback's data */
static void on_exec(unsigned int cpu, void *udata)
{
	struct vcpu *v = &vcpus[cpu % MAX_VCPUS];
	int64_t t = now_ns();
	if (t < v->next_ns) return;
	if (v->next_ns) record(v, (uint64_t)(uintptr_t)udata);
	v->next_ns = (v->next_ns && t - v->next_ns < period_ns ? v->next_ns : t) + period_ns;
}

/* count: the block's instructions added, a sample at each multiple of `every` */
static void on_block(unsigned int cpu, void *udata)
{
	const struct tbinfo *b = udata;
	struct vcpu *v = &vcpus[cpu % MAX_VCPUS];
	v->insns += b->n;
	if (!v->next) v->next = every;
	if (v->insns >= v->next) {
		record(v, b->pc);
		v->next += every;
	}
}

static void on_translate(qemu_plugin_id_t id, struct qemu_plugin_tb *tb)
{
	(void)id;
	size_t n = qemu_plugin_tb_n_insns(tb);
	if (mode == M_INSN) {
		for (size_t i = 0; i < n; i++) {
			struct qemu_plugin_insn *in = qemu_plugin_tb_get_insn(tb, i);
			qemu_plugin_register_vcpu_insn_exec_cb(in, on_exec, QEMU_PLUGIN_CB_NO_REGS,
							       (void *)(uintptr_t)qemu_plugin_insn_vaddr(in));
		}
	} else if (mode == M_TB) {
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_exec, QEMU_PLUGIN_CB_NO_REGS,
						     (void *)(uintptr_t)qemu_plugin_tb_vaddr(tb));
	} else {
		struct tbinfo *b = malloc(sizeof *b); /* one a translation, kept for the run (a bench) */
		if (!b) return;
		b->pc = qemu_plugin_tb_vaddr(tb);
		b->n = n;
		qemu_plugin_register_vcpu_tb_exec_cb(tb, on_block, QEMU_PLUGIN_CB_NO_REGS, b);
	}
}

static int by_pc(const void *a, const void *b)
{
	const struct slot *x = a, *y = b;
	return x->pc < y->pc ? -1 : x->pc > y->pc;
}

static void at_exit(qemu_plugin_id_t id, void *p)
{
	(void)id;
	(void)p;
	FILE *f = out_path ? fopen(out_path, "w") : NULL;
	if (!f) return;
	struct slot *all = calloc((size_t)TABLE * 4, sizeof *all);
	size_t n = 0;
	for (int c = 0; c < MAX_VCPUS; c++) {
		struct vcpu *v = &vcpus[c];
		if (v->samples || v->lost) fprintf(f, "vcpu %d samples %" PRIu64 " lost %" PRIu64 "\n", c, v->samples, v->lost);
		for (size_t i = 0; v->t && all && i < TABLE; i++) {
			if (!v->t[i].n) continue;
			size_t j = 0;
			while (j < n && all[j].pc != v->t[i].pc) j++; /* a bench's few thousand pcs */
			if (j == n && n < (size_t)TABLE * 4) all[n++] = (struct slot){ v->t[i].pc, 0 };
			if (j < n) all[j].n += v->t[i].n;
		}
	}
	if (all) qsort(all, n, sizeof *all, by_pc);
	for (size_t i = 0; i < n; i++) fprintf(f, "%" PRIx64 " %" PRIu64 "\n", all[i].pc, all[i].n);
	fclose(f);
	free(all);
}

QEMU_PLUGIN_EXPORT int qemu_plugin_install(qemu_plugin_id_t id, const qemu_info_t *info, int argc, char **argv)
{
	(void)info;
	for (int i = 0; i < argc; i++) {
		const char *a = argv[i];
		if (!strcmp(a, "mode=insn")) mode = M_INSN;
		else if (!strcmp(a, "mode=tb")) mode = M_TB;
		else if (!strcmp(a, "mode=count")) mode = M_COUNT;
		else if (!strncmp(a, "hz=", 3) && atoi(a + 3) > 0) period_ns = 1000000000 / atoi(a + 3);
		else if (!strncmp(a, "every=", 6) && strtoull(a + 6, NULL, 10) > 0) every = strtoull(a + 6, NULL, 10);
		else if (!strncmp(a, "out=", 4)) out_path = a + 4;
		else {
			fprintf(stderr, "qperf_peer: unknown argument '%s' (mode=insn|tb|count, hz=N, every=N, out=PATH)\n", a);
			return -1;
		}
	}
	qemu_plugin_register_vcpu_tb_trans_cb(id, on_translate);
	qemu_plugin_register_atexit_cb(id, at_exit, NULL);
	return 0;
}
