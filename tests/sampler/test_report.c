/* SPDX-License-Identifier: MIT */
/* test_report.c: the report and folded writers on fixed samples (golden text). */
#include "check.h"
#include "../../sampler/writer.h"
#include <stdlib.h>

#define K 0xffffffff80000000ull

static void symtab(struct symtab *t)
{
	memset(t, 0, sizeof *t);
	syms_add(t, K + 0x1000, 0x100, "memcpy");
	syms_add(t, K + 0x2000, 0x100, "copy_round");
	syms_add(t, K + 0x3000, 0x100, "work_main");
	syms_add(t, K + 0x4000, 0x100, "spin");
	syms_finish(t);
}

static struct sample mk(int cpu, uint64_t leaf, uint64_t c1, uint64_t c2)
{
	struct sample s = { .cpu = (uint16_t)cpu, .n = 3 };
	s.frames[0] = leaf;
	s.frames[1] = c1;
	s.frames[2] = c2;
	return s;
}

static char *run(struct writer *w, FILE *f, char **buf, size_t *len, int ncpu)
{
	/* 5 samples in memcpy at two offsets from one call site, 3 in spin, 2 at an unknown pc. */
	struct sample s[] = {
		mk(0, K + 0x101a, K + 0x2044, K + 0x3010), mk(0, K + 0x103e, K + 0x2044, K + 0x3010),
		mk(1, K + 0x1020, K + 0x2044, K + 0x3010), mk(1, K + 0x101a, K + 0x2044, K + 0x3010),
		mk(0, K + 0x1030, K + 0x2044, K + 0x3010), mk(0, K + 0x4008, K + 0x3020, 0),
		mk(1, K + 0x4008, K + 0x3020, 0), mk(1, K + 0x400c, K + 0x3020, 0),
		mk(0, 0x1234, K + 0x3030, 0), mk(0, 0x1234, K + 0x3030, 0),
	};
	for (size_t i = 0; i < sizeof s / sizeof s[0]; i++) {
		if (s[i].frames[2] == 0) s[i].n = 2;
		CHECK(w->add(w, &s[i]) == 0);
	}
	struct run_info ri = { ncpu, 100, 2000000000LL, 10, 1, 0, NULL, NULL, NULL, NULL, NULL };
	CHECK(w->finish(w, &ri) == 0);
	w->free(w);
	fclose(f);
	(void)len;
	return *buf;
}

static void test_report_golden(void)
{
	struct symtab t;
	char *buf;
	size_t len;
	symtab(&t);
	FILE *f = open_memstream(&buf, &len);
	run(report_writer_new(f, &t, 8, 0), f, &buf, &len, 2);
	CHECK_STR(buf,
		  "profiled 2000 ms\n"
		  "10 samples on 2 cpus, 1 dropped, source gdbstub 100 Hz\n"
		  "50.0% 5 memcpy+0x1a..0x3e\n"
		  "        <- copy_round+0x44\n"
		  "        <- work_main+0x10\n"
		  "30.0% 3 spin+0x8..0xc\n"
		  "        <- work_main+0x20\n"
		  "20.0% 2 0x1234\n"
		  "        <- work_main+0x30\n");
	free(buf);

	/* --chains 1: the rest is counted, not silently dropped. */
	f = open_memstream(&buf, &len);
	run(report_writer_new(f, &t, 1, 0), f, &buf, &len, 2);
	CHECK(strstr(buf, "(2 more chains not shown)\n") != NULL);
	CHECK(strstr(buf, "spin") == NULL);
	free(buf);
	syms_free(&t);
}

static void test_folded_golden(void)
{
	struct symtab t;
	char *buf;
	size_t len;
	symtab(&t);
	FILE *f = open_memstream(&buf, &len);
	run(fold_writer_new(f, &t, TF_CPU), f, &buf, &len, 2);
	CHECK_STR(buf,
		  "cpu0;work_main;0x1234 2\n"
		  "cpu0;work_main;copy_round;memcpy 3\n"
		  "cpu0;work_main;spin 1\n"
		  "cpu1;work_main;copy_round;memcpy 2\n"
		  "cpu1;work_main;spin 2\n");
	free(buf);
	syms_free(&t);
}

/* A user-mode sample is one [user] frame under its task and its pc under cpuN; a firmware one
 * (riscv64 M-mode) one [firmware] frame under either root -- never its pc, never a caller. */
static void test_folded_modes(void)
{
	struct symtab t;
	symtab(&t);
	for (int tf = 0; tf < 2; tf++) {
		char *buf;
		size_t len;
		FILE *f = open_memstream(&buf, &len);
		struct writer *w = fold_writer_new(f, &t, tf ? TF_COMM : TF_CPU);
		struct sample s[3] = { mk(0, K + 0x4008, K + 0x3020, 0), mk(0, 0x5ba6, 0, 0), mk(1, 0x80000408, K + 0x3020, 0) };
		s[0].n = s[2].n = 2;
		s[1].n = 1;
		s[1].flags = SF_USER;
		s[2].flags = SF_FIRMWARE;
		for (int i = 0; i < 3; i++) {
			s[i].has_task = 1;
			snprintf(s[i].task.comm, sizeof s[i].task.comm, "chain");
			CHECK(w->add(w, &s[i]) == 0);
		}
		struct run_info ri = { 2, 100, 2000000000LL, 3, 0, 0, NULL, NULL, NULL, NULL, NULL };
		CHECK(w->finish(w, &ri) == 0);
		w->free(w);
		fclose(f);
		CHECK_STR(buf, tf ? "chain;[firmware] 1\nchain;[user] 1\nchain;work_main;spin 1\n"
				  : "cpu0;0x5ba6 1\ncpu0;work_main;spin 1\ncpu1;[firmware] 1\n");
		free(buf);
	}
	syms_free(&t);
}

static void test_empty(void)
{
	char *buf;
	size_t len;
	FILE *f = open_memstream(&buf, &len);
	struct writer *w = report_writer_new(f, NULL, 8, 0);
	struct run_info ri = { 1, 100, 1000000000LL, 0, 0, 42, NULL, NULL, NULL, NULL, NULL };
	CHECK(w->finish(w, &ri) == 0);
	w->free(w);
	fclose(f);
	CHECK(strstr(buf, "0 samples on 1 cpus, 0 dropped") != NULL);
	CHECK(strstr(buf, "all 42 were idle") != NULL);
	free(buf);
}

void test_report(void)
{
	test_report_golden();
	test_folded_golden();
	test_folded_modes();
	test_empty();
}
