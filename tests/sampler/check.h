/* SPDX-License-Identifier: MIT */
/* check.h: the tiny assertion harness shared by the sampler's C unit tests. */
#ifndef CHECK_H
#define CHECK_H
#include <stdio.h>
#include <string.h>

extern int check_passed, check_failed;

/* Count one assertion; on failure print where and what. */
#define CHECK(cond) do { \
	if (cond) check_passed++; \
	else { check_failed++; fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)
#define CHECK_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	if (a_ && b_ && strcmp(a_, b_) == 0) check_passed++; \
	else { check_failed++; fprintf(stderr, "%s:%d: FAIL: \"%s\" != \"%s\"\n", __FILE__, __LINE__, \
		a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } \
} while (0)

/* One entry point per test file. */
void test_rsp(void);
void test_unwind(void);
void test_pace(void);
void test_capture(void);
void test_arch(void);
void test_symbols(void);
void test_report(void);
void test_cli(void);
void test_sample(void);
void test_qmp(void);
void test_vmlinuz(void);
void test_orc(void);
void test_cfi(void);
void test_plan(void);
void test_gdb(void);
void test_guard(void);
void test_stats(void);
void test_kaslr(void);
void test_modules(void);
void test_kofile(void);
void test_task(void);
void test_strict(void);
void test_output(void);
void test_top(void);
void test_topview(void);
void test_insn(void);
void test_progress(void);
void test_kallsyms(void);
void test_kcache(void);
void test_summary(void);
void test_messages(void);
void test_slice(void);
void test_hash(void);

#endif
