/* SPDX-License-Identifier: MIT */
/* fuzz_taskdesc.c: libFuzzer harness -- task descriptions: one printable line per error within its cap,
 * and every description that parses printed canonically and parsed back to the same struct. */
#include "../sampler/taskdesc.h"
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

static char text[4 * (TD_LINE_MAX + 2)], again[sizeof text];

/* err after a parse with cap bytes of room in a buffer of size: a string within cap, one line of
 * printable ASCII, nothing written past cap. */
static void check_err(const char *err, size_t cap, size_t size, int rc)
{
	const char *nul = memchr(err, 0, cap);
	if (!nul) abort();
	for (const char *c = err; c < nul; c++)
		if ((unsigned char)*c < 0x20 || (unsigned char)*c >= 0x7f) abort();
	for (size_t i = cap; i < size; i++)
		if (err[i] != 'Z') abort();
	if (rc == 0 && err[0]) abort();              /* success leaves err empty */
	if (rc == -1 && cap > 1 && !err[0]) abort(); /* a failure says why */
	if (rc != 0 && rc != -1) abort();
}

/* Two descriptions equal but for their line numbers. */
static int same(const struct taskdesc *a, const struct taskdesc *b)
{
	return !memcmp(&a->cur, &b->cur, sizeof a->cur) && !memcmp(&a->pid, &b->pid, sizeof a->pid) &&
	       !memcmp(&a->tgid, &b->tgid, sizeof a->tgid) && !memcmp(&a->name, &b->name, sizeof a->name);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static struct taskdesc d, r, t;
	char err[256], tiny[16];
	memset(err, 'Z', sizeof err);
	int rc = taskdesc_parse((const char *)data, size, &d, err, sizeof err - 40);
	check_err(err, sizeof err - 40, sizeof err, rc);
	if (rc && strncmp(err, "line ", 5) && strncmp(err, "no `", 4) && strncmp(err, "the description is ", 19))
		abort(); /* a line's error, a missing key's or the size's */
	/* A small cap: the same answer, the message cut within it. */
	size_t cap = 1 + size % (sizeof tiny - 1);
	memset(tiny, 'Z', sizeof tiny);
	if (taskdesc_parse((const char *)data, size, &t, tiny, cap) != rc) abort();
	check_err(tiny, cap, sizeof tiny, rc);
	if (strlen(err) < cap ? strcmp(tiny, err) != 0 : strncmp(tiny, err, cap > 6 ? cap - 6 : cap - 1) != 0)
		abort(); /* the same message, cut (and marked "[...]" where there is room) */
	if (rc) return 0;
	if (!same(&d, &t) || memcmp(d.line, t.line, sizeof d.line)) abort();

	/* Lines where the keys were (tgid's only if given), inside the text, one key each. */
	for (int k = 0; k < 4; k++) {
		if (d.line[k] < 0 || (size_t)d.line[k] > size || (k == 2 ? !!d.line[k] != (d.tgid.n > 0) : !d.line[k]))
			abort();
		for (int j = 0; j < k; j++)
			if (d.line[k] && d.line[k] == d.line[j]) abort();
	}
	/* The canonical text: its length as returned, each line within TD_LINE_MAX; read back the same. */
	int n = taskdesc_format(&d, text, sizeof text);
	if (n < 0 || (size_t)n >= sizeof text || (size_t)n != strlen(text)) abort();
	for (const char *l = text, *nl; (nl = strchr(l, '\n')); l = nl + 1)
		if (nl - l > TD_LINE_MAX) abort();
	if (taskdesc_parse(text, (size_t)n, &r, err, sizeof err) != 0 || !same(&d, &r)) abort();
	if (r.line[0] != 1 || r.line[1] != 2 || r.line[3] != (d.tgid.n ? 4 : 3)) abort();
	if (taskdesc_format(&r, again, sizeof again) != n || strcmp(text, again)) abort();
	/* Cut printing: the same length, what fits a prefix of the whole. */
	char cut[24];
	int e = taskdesc_expr(&d.cur, cut, cap);
	if (e != taskdesc_expr(&d.cur, NULL, 0) || strlen(cut) != ((size_t)e < cap ? (size_t)e : cap - 1) ||
	    strncmp(cut, text + 10, strlen(cut)))
		abort();
	if (taskdesc_path(&d.pid, cut, cap) != taskdesc_path(&d.pid, NULL, 0) || taskdesc_format(&d, cut, cap) != n ||
	    strncmp(cut, text, strlen(cut)))
		abort();
	return 0;
}
