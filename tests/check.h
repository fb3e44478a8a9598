/* SPDX-License-Identifier: MIT */
/* check.h: the one assertion harness of every C test program (sampler, kernel host tests). */
#ifndef CHECK_H
#define CHECK_H
#include <stdio.h>
#include <string.h>

/*
 * Each program defines the two counters once (int check_passed, check_failed;), its checks count
 * into them, and main ends with `return check_summary();` -- the "N passed, N failed" line
 * `make test` and `make check` print. The sampler's tests find this file by -Itests
 * (sampler/sampler.mk); the kernel's include it as "../check.h".
 */
extern int check_passed, check_failed;

/* Count one assertion; on failure print where and what. */
#define CHECK(cond) do { \
	if (cond) check_passed++; \
	else { check_failed++; fprintf(stderr, "%s:%d: FAIL: %s\n", __FILE__, __LINE__, #cond); } \
} while (0)
/* The same for two strings that must be equal (NULL never is): both are printed on failure. */
#define CHECK_STR(a, b) do { \
	const char *a_ = (a), *b_ = (b); \
	if (a_ && b_ && strcmp(a_, b_) == 0) check_passed++; \
	else { check_failed++; fprintf(stderr, "%s:%d: FAIL: \"%s\" != \"%s\"\n", __FILE__, __LINE__, \
		a_ ? a_ : "(null)", b_ ? b_ : "(null)"); } \
} while (0)

/* Print "N passed, N failed"; main's exit status (1 if any check failed). */
static inline int check_summary(void)
{
	printf("%d passed, %d failed\n", check_passed, check_failed);
	return check_failed ? 1 : 0;
}

#endif
