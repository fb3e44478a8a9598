/* SPDX-License-Identifier: MIT */
/* task.c: per-sample task attribution, the same for every guest OS -- what to read, what it means. */
#include "task.h"
#include "bytes.h"
#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const guestos_names[4] = { "none", "linux", "testkernel", "described" };

uint64_t task_pcpu_base(uint64_t a, uint64_t b, uint64_t lo)
{
	if (task_ptr_ok(a, lo)) return a;
	if (task_ptr_ok(b, lo)) return b;
	return 0;
}

int task_ptr_ok(uint64_t ptr, uint64_t lo)
{
	return ptr && ptr >= lo && !(ptr & 7);
}

uint64_t task_where(const struct guestos *os, int cpu, uint64_t val, uint64_t alt, uint64_t lo)
{
	uint64_t base;
	switch (os->cur_how) {
	case CR_BASE:
		base = os->cur_reg[0] ? (task_ptr_ok(val, lo) ? val : 0) : task_pcpu_base(val, alt, lo);
		return base ? base + os->cur_off : 0;
	case CR_RAW:
		return val ? val + os->cur_off : 0; /* 0: not read (a real offset of 0 is a zero-based area: CR_BASE) */
	case CR_INDEX:
		return val < os->cur_count ? os->cur_off + val * os->cur_stride : 0;
	case CR_NONE:
		if (!os->cur_by_cpu) return os->cur_off;
		return cpu >= 0 && (uint64_t)cpu < os->cur_count ? os->cur_off + (uint64_t)cpu * os->cur_stride : 0;
	case CR_TASK:
		return task_ptr_ok(val, lo) ? val : 0;
	}
	return 0;
}

static uint32_t int_size(uint8_t size)
{
	return size ? size : 4;
}

/* A pid-like field of size bytes (1, 2, 4, 8; little-endian): its value if it is one a pid can
 * be (0..INT32_MAX, the capture's s32), else -1. */
static int32_t pid_value(const uint8_t *p, uint8_t size, int is_unsigned)
{
	uint32_t n = int_size(size);
	uint64_t v = 0;
	for (uint32_t i = 0; i < n; i++) v |= (uint64_t)p[i] << (8 * i);
	if (!is_unsigned && n < 8 && (v >> (8 * n - 1)) & 1) return -1; /* negative */
	return v <= INT32_MAX ? (int32_t)v : -1;
}

void task_span(const struct guestos *os, uint32_t *lo, uint32_t *len)
{
	uint32_t a = os->pid_off, b = os->pid_off + int_size(os->pid_size);
	if (os->tgid_off < a) a = os->tgid_off;
	if (os->tgid_off + int_size(os->tgid_size) > b) b = os->tgid_off + int_size(os->tgid_size);
	if (os->comm_off < a) a = os->comm_off;
	if (os->comm_off + os->comm_len > b) b = os->comm_off + os->comm_len;
	*lo = a;
	*len = b - a;
}

int task_decode(const struct guestos *os, uint64_t ptr, const uint8_t *span, uint32_t len, struct task_id *id)
{
	uint32_t lo, want;
	task_span(os, &lo, &want);
	if (len < want) return -1;
	memset(id, 0, sizeof *id);
	id->ptr = ptr;
	id->pid = pid_value(span + (os->pid_off - lo), os->pid_size, os->pid_unsigned);
	id->tgid = pid_value(span + (os->tgid_off - lo), os->tgid_size, os->tgid_unsigned);
	memcpy(id->comm, span + (os->comm_off - lo), os->comm_len);
	if (os->comm_len == TASK_COMM_LEN) id->comm[TASK_COMM_LEN - 1] = 0; /* the guest NUL-terminates */
	if (id->pid < 0 || id->tgid < 0 || !id->comm[0]) return -1;
	return 0;
}

static size_t slot(uint64_t ptr)
{
	return (size_t)((ptr * 0x9e3779b97f4a7c15ull) >> 40) & (TASKCACHE_SLOTS - 1);
}

const struct task_id *taskcache_get(const struct taskcache *c, uint64_t ptr, int64_t now_ns)
{
	if (!c->e) return NULL;
	for (size_t j = slot(ptr); c->e[j].read_ns; j = (j + 1) & (TASKCACHE_SLOTS - 1))
		if (c->e[j].id.ptr == ptr) return now_ns - c->e[j].read_ns <= TASK_VALID_NS ? &c->e[j].id : NULL;
	return NULL;
}

int taskcache_put(struct taskcache *c, const struct task_id *id, int64_t now_ns)
{
	if (!c->e && !(c->e = calloc(TASKCACHE_SLOTS, sizeof *c->e))) return 0;
	if (now_ns <= 0) now_ns = 1;
	if (c->n >= TASKCACHE_SLOTS / 2) { /* full: start over (the live tasks come back as misses) */
		memset(c->e, 0, TASKCACHE_SLOTS * sizeof *c->e);
		c->n = 0;
	}
	size_t j = slot(id->ptr);
	while (c->e[j].read_ns && c->e[j].id.ptr != id->ptr) j = (j + 1) & (TASKCACHE_SLOTS - 1);
	int changed = c->e[j].read_ns && memcmp(&c->e[j].id, id, sizeof *id) != 0;
	if (!c->e[j].read_ns) c->n++;
	c->e[j].read_ns = now_ns;
	c->e[j].id = *id;
	return changed;
}

void taskcache_free(struct taskcache *c)
{
	free(c->e);
	c->e = NULL;
	c->n = 0;
}

void task_comm_format(const char comm[TASK_COMM_LEN], char out[TASK_COMM_LEN * 4 + 1])
{
	size_t o = 0;
	for (int i = 0; i < TASK_COMM_LEN && comm[i]; i++) {
		unsigned char c = (unsigned char)comm[i];
		if (c >= 0x20 && c < 0x7f) out[o++] = (char)c;
		else o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
	}
	out[o] = 0;
}

const char *const task_format_names[4] = { "comm", "comm-pid", "pid", "cpu" };

void task_root(int tf, const struct task_id *id, int has_task, char *out, size_t cap)
{
	char c[TASK_COMM_LEN * 4 + 1];
	if (!has_task) {
		snprintf(out, cap, "[unknown]");
		return;
	}
	task_comm_format(id->comm, c);
	char e[sizeof c * 4]; /* a ';' would split the folded frame: \x3b, as the analysis prints it */
	size_t k = 0;
	for (const char *q = c; *q; q++) k += (size_t)(*q == ';' ? snprintf(e + k, 5, "\\x3b") : (e[k] = *q, 1));
	e[k] = 0;
	if (tf == TF_COMM_PID) snprintf(out, cap, "%s-%d", e, id->pid);
	else if (tf == TF_PID) snprintf(out, cap, "%d", id->pid);
	else snprintf(out, cap, "%s", e);
}

int task_filter_pids(struct task_filter *f, const char *p)
{
	f->npids = 0;
	if (!*p) return -1;
	while (*p) {
		char *e;
		errno = 0;
		long a = strtol(p, &e, 10), b = a;
		if (e == p || !isdigit((unsigned char)*p) || a > INT32_MAX || errno) return -1;
		if (*e == '-') {
			const char *q = e + 1;
			if (!isdigit((unsigned char)*q)) return -1;
			b = strtol(q, &e, 10);
			if (e == q || b < a || b > INT32_MAX || errno) return -1;
		}
		if ((*e && *e != ',') || f->npids == TASK_FILTER_MAX) return -1;
		f->lo[f->npids] = (int32_t)a;
		f->hi[f->npids++] = (int32_t)b;
		p = *e ? e + 1 : e;
		if (*e == ',' && !*p) return -1;
	}
	return 0;
}

static void task_filter_free_re(struct task_filter *f)
{
	if (f->has_re) {
		regfree((regex_t *)f->re);
		free(f->re);
	}
	f->re = NULL;
	f->has_re = 0;
}

/*
 * What --comm may cost. glibc's regcomp copies a bounded repeat's operand once per count and
 * builds automata quadratic in the copies: 'a{1,32767}' took ~8 GB and 35 s. The text matched is a
 * task name, at most TASK_COMM_LEN - 1 bytes, each shown in at most 4 characters (\xNN): a repeat
 * count above TASK_RE_COUNT_MAX cannot be what anyone means, and the copies a pattern expands to
 * (nested repeats multiply) are bounded by TASK_RE_COPIES_MAX (~0.1 s and a few MB to compile).
 */
#define TASK_RE_COUNT_MAX ((TASK_COMM_LEN - 1) * 4)
#define TASK_RE_COPIES_MAX 4096
#define TASK_RE_DEPTH_MAX 32

/* The end of the bracket expression starting at re ('['), or NULL if unterminated. */
static const char *re_bracket_end(const char *re)
{
	const char *p = re + 1;
	if (*p == '^') p++;
	if (*p == ']') p++; /* a ']' first is a member */
	for (; *p; p++) {
		if (*p == '[' && (p[1] == ':' || p[1] == '.' || p[1] == '=')) { /* [:alpha:] [.x.] [=x=] */
			char k = p[1];
			const char *q = p + 2;
			while (*q && !(q[0] == k && q[1] == ']')) q++;
			if (!*q) return NULL;
			p = q + 1;
		} else if (*p == ']') {
			return p;
		}
	}
	return NULL;
}

/* A "{m}", "{m,}" or "{m,n}" at re: its largest count (m without n) into *count and its length, or
 * 0 if re holds none (a literal '{'). */
static size_t re_interval(const char *re, unsigned long *count)
{
	const char *p = re + 1;
	unsigned long m = 0, n = 0;
	int dm = 0, dn = 0, comma = 0;
	for (; *p >= '0' && *p <= '9'; p++, dm++) m = m < 100000 ? m * 10 + (unsigned long)(*p - '0') : m;
	if (*p == ',') {
		comma = 1;
		for (p++; *p >= '0' && *p <= '9'; p++, dn++) n = n < 100000 ? n * 10 + (unsigned long)(*p - '0') : n;
	}
	if (*p != '}' || (!dm && !dn)) return 0;
	*count = comma && dn ? (n > m ? n : m) : m;
	return (size_t)(p - re) + 1;
}

/* 0 if the ERE re compiles cheaply, else -1 with why. */
static int re_cost(const char *re, char *err, size_t cap)
{
	unsigned long long sum[TASK_RE_DEPTH_MAX + 1] = { 0 }, last[TASK_RE_DEPTH_MAX + 1] = { 0 };
	int d = 0;
	for (const char *p = re; *p; p++) {
		unsigned long long atom = 1;
		if (*p == '\\' && p[1]) {
			p++;
		} else if (*p == '[') {
			const char *e = re_bracket_end(p);
			if (!e) return 0; /* regcomp says what is wrong */
			p = e;
		} else if (*p == '(') {
			if (d == TASK_RE_DEPTH_MAX) {
				snprintf(err, cap, "groups nested deeper than %d", TASK_RE_DEPTH_MAX);
				return -1;
			}
			d++;
			sum[d] = last[d] = 0;
			continue;
		} else if (*p == ')' && d > 0) {
			atom = sum[d] ? sum[d] : 1;
			d--;
		} else if (*p == '|') {
			last[d] = 0;
			continue;
		} else if (*p == '*' || *p == '+' || *p == '?') {
			sum[d] += last[d]; /* at most one more copy */
			continue;
		} else if (*p == '{') {
			unsigned long count;
			size_t len = re_interval(p, &count);
			if (len) {
				if (count > TASK_RE_COUNT_MAX) {
					snprintf(err, cap, "repeat count %lu: at most %d, a task name is %d bytes, %d characters "
						 "escaped", count, TASK_RE_COUNT_MAX, TASK_COMM_LEN - 1, TASK_RE_COUNT_MAX);
					return -1;
				}
				sum[d] += last[d] * count; /* count more copies of the operand */
				last[d] *= count + 1;
				if (sum[d] > TASK_RE_COPIES_MAX) break;
				p += len - 1;
				continue;
			}
		}
		sum[d] += atom;
		last[d] = atom;
		if (sum[d] > TASK_RE_COPIES_MAX) break;
	}
	unsigned long long total = 0;
	for (int i = 0; i <= d; i++) total += sum[i];
	if (total > TASK_RE_COPIES_MAX) {
		snprintf(err, cap, "its repeats expand to more than %d copies", TASK_RE_COPIES_MAX);
		return -1;
	}
	return 0;
}

int task_filter_comm(struct task_filter *f, const char *re, char *err, size_t cap)
{
	if (re_cost(re, err, cap) < 0) return -1;
	regex_t *r = calloc(1, sizeof *r);
	if (!r) {
		snprintf(err, cap, "out of memory");
		return -1;
	}
	int rc = regcomp(r, re, REG_EXTENDED | REG_NOSUB);
	if (rc) {
		char m[96];
		regerror(rc, r, m, sizeof m);
		snprintf(err, cap, "%s", m);
		free(r);
		return -1;
	}
	task_filter_free_re(f);
	f->re = r;
	f->has_re = 1;
	return 0;
}

int task_filter_on(const struct task_filter *f)
{
	return f->npids || f->has_re;
}

int task_filter_match(const struct task_filter *f, const struct task_id *id, int has_task)
{
	if (!task_filter_on(f)) return 1;
	if (!has_task) return 0;
	if (f->npids) {
		int in = 0;
		for (int i = 0; i < f->npids && !in; i++)
			in = (id->pid >= f->lo[i] && id->pid <= f->hi[i]) || (id->tgid >= f->lo[i] && id->tgid <= f->hi[i]);
		if (!in) return 0;
	}
	if (f->has_re) {
		char c[TASK_COMM_LEN * 4 + 1];
		task_comm_format(id->comm, c);
		if (regexec((const regex_t *)f->re, c, 0, NULL, 0) != 0) return 0;
	}
	return 1;
}

void task_filter_free(struct task_filter *f)
{
	task_filter_free_re(f);
	f->npids = 0;
}
