/* task.c: per-sample task attribution, the same for every guest OS -- what to read, what it means. */
#include "task.h"
#include <ctype.h>
#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char *const guestos_names[3] = { "none", "linux", "testkernel" };

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

void task_span(const struct guestos *os, uint32_t *lo, uint32_t *len)
{
	uint32_t a = os->pid_off, b = os->pid_off + 4;
	if (os->tgid_off < a) a = os->tgid_off;
	if (os->tgid_off + 4 > b) b = os->tgid_off + 4;
	if (os->comm_off < a) a = os->comm_off;
	if (os->comm_off + os->comm_len > b) b = os->comm_off + os->comm_len;
	*lo = a;
	*len = b - a;
}

static int32_t rd32(const uint8_t *p)
{
	return (int32_t)((uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24);
}

int task_decode(const struct guestos *os, uint64_t ptr, const uint8_t *span, uint32_t len, struct task_id *id)
{
	uint32_t lo, want;
	task_span(os, &lo, &want);
	if (len < want) return -1;
	memset(id, 0, sizeof *id);
	id->ptr = ptr;
	id->pid = rd32(span + (os->pid_off - lo));
	id->tgid = rd32(span + (os->tgid_off - lo));
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

int task_filter_comm(struct task_filter *f, const char *re, char *err, size_t cap)
{
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
