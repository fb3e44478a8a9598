/* SPDX-License-Identifier: MIT */
/* taskdesc.c: a task description's text (taskdesc.h) read into its struct and printed back -- syntax only. */
#include "taskdesc.h"
#include "err.h"
#include "textnum.h"
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * A line is split at its first `=` (after the comment is cut off) into a key and a value; the
 * value is read by a tiny lexer and a recursive descent over the four EXPR shapes (or a FIELD
 * path). A line is refused if its canonical form (taskdesc_format's) would be longer than
 * TD_LINE_MAX, so every description that parses prints back to one that parses.
 */

#define EXCERPT 24                       /* input bytes quoted in a message, at most */
#define QUOTED (EXCERPT * 4 + 6)         /* ...escaped, in backticks, "..." after a cut */

enum { T_END, T_NAME, T_REG, T_NUM, T_LP, T_RP, T_STAR, T_LB, T_RB, T_DOT, T_ARROW, T_AMP, T_PLUS };

struct tok {
	int kind;
	const char *at;       /* the token's text (a register's with its `$`) */
	size_t len;
	const char *name;     /* T_NAME, T_REG: the name (a register's without `$`) */
	size_t nlen;
	uint64_t num;         /* T_NUM */
};

/* One line being read: its value's unread bytes, the current token, where an error goes. */
struct ps {
	const char *p, *end;
	struct tok t;
	int line;             /* 0: a message tied to no line */
	int failed;           /* the first error is the one kept */
	char *err;
	size_t cap;
};

/* s[0..n) in backticks, at most EXCERPT bytes of it; bytes outside printable ASCII, the backtick
 * and the backslash as \xNN (the quote stays one unambiguous line), "..." when cut. */
static const char *quote(char out[QUOTED], const char *s, size_t n)
{
	size_t o = 0;
	out[o++] = '`';
	for (size_t i = 0; i < n && i < EXCERPT; i++) {
		unsigned char c = (unsigned char)s[i];
		if (c >= 0x20 && c < 0x7f && c != '`' && c != '\\') out[o++] = (char)c;
		else o += (size_t)snprintf(out + o, 5, "\\x%02x", c);
	}
	if (n > EXCERPT) {
		memcpy(out + o, "...", 3);
		o += 3;
	}
	out[o++] = '`';
	out[o] = 0;
	return out;
}

/* What the current token is, for "found ...". */
static const char *found(const struct ps *ps, char out[QUOTED])
{
	if (ps->t.kind == T_END) return "the end of the line";
	return quote(out, ps->t.at, ps->t.len);
}

/* The first error: one line in err ("line N: " when tied to a line), always NUL-terminated. -1. */
__attribute__((format(printf, 2, 3)))
static int fail(struct ps *ps, const char *fmt, ...)
{
	if (ps->failed++ || !ps->err || !ps->cap) return -1;
	int k = ps->line ? snprintf(ps->err, ps->cap, "line %d: ", ps->line) : 0;
	if (k >= 0 && (size_t)k < ps->cap) {
		va_list ap;
		va_start(ap, fmt);
		int n = vsnprintf(ps->err + k, ps->cap - (size_t)k, fmt, ap);
		va_end(ap);
		k = n < 0 ? n : k + n;
	}
	err_mark_cut(ps->err, ps->cap, k);
	return -1;
}

static int is_space(char c)
{
	return c == ' ' || c == '\t';
}

static int is_alpha(char c)
{
	return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_';
}

static int is_alnum(char c)
{
	return is_alpha(c) || (c >= '0' && c <= '9');
}

/* The identifier at p (before end): its length, 0 if none. */
static size_t ident_len(const char *p, const char *end)
{
	size_t n = 0;
	if (p < end && is_alpha(*p))
		for (n = 1; p + n < end && is_alnum(p[n]); n++)
			;
	return n;
}

/* A number token t (the whole run of [0-9A-Za-z_] at t->at): decimal without a leading 0, or 0x hex. */
static int lex_num(struct ps *ps, struct tok *t)
{
	char q[QUOTED];
	const char *s = t->at;
	size_t n = t->len;
	int hex = n > 2 && s[0] == '0' && (s[1] == 'x' || s[1] == 'X');
	const char *d = hex ? s + 2 : s;
	size_t dn = hex ? n - 2 : n;
	if (hex ? textnum_hex(d, dn, UINT64_MAX, &t->num) == 0 : textnum_dec(d, dn, UINT64_MAX, &t->num) == 0) {
		if (!hex && n > 1 && s[0] == '0')
			return fail(ps, "a number with a leading 0: %s (write it in decimal or 0x hex)", quote(q, s, n));
		return 0;
	}
	for (size_t i = 0; i < dn; i++) {
		char c = d[i];
		if (!(c >= '0' && c <= '9') && !(hex && ((c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'))))
			return fail(ps, "bad number %s", quote(q, s, n));
	}
	return fail(ps, "number too large (more than 64 bits): %s", quote(q, s, n));
}

/* The next token into ps->t; -1 (and the message) on a byte or word the grammar has no place for. */
static int lex(struct ps *ps)
{
	static const char punct[] = "()*[].&+";
	static const int kinds[] = { T_LP, T_RP, T_STAR, T_LB, T_RB, T_DOT, T_AMP, T_PLUS };
	struct tok *t = &ps->t;
	char q[QUOTED];
	while (ps->p < ps->end && is_space(*ps->p)) ps->p++;
	memset(t, 0, sizeof *t);
	t->at = ps->p;
	if (ps->p == ps->end) return 0; /* T_END */
	char c = *ps->p;
	const char *pc = strchr(punct, c);
	if (c && pc) {
		t->kind = kinds[pc - punct];
		t->len = 1;
	} else if (c == '-') {
		if (ps->p + 1 == ps->end || ps->p[1] != '>')
			return fail(ps, "unexpected %s (the only `-` read is `->`)", quote(q, ps->p, 1));
		t->kind = T_ARROW;
		t->len = 2;
	} else if (is_alpha(c) || c == '$') {
		int reg = c == '$';
		t->kind = reg ? T_REG : T_NAME;
		t->name = ps->p + reg;
		t->nlen = ident_len(t->name, ps->end);
		t->len = t->nlen + (size_t)reg;
		if (!t->nlen) {
			size_t n = (size_t)(ps->end - ps->p);
			return fail(ps, "`$` needs a register name after it, found %s", quote(q, ps->p, n < 2 ? n : 2));
		}
		if (t->nlen > TD_NAME_MAX - 1)
			return fail(ps, "name too long (at most %d bytes): %s", TD_NAME_MAX - 1, quote(q, t->at, t->len));
	} else if (c >= '0' && c <= '9') {
		t->kind = T_NUM;
		for (t->len = 1; ps->p + t->len < ps->end && is_alnum(ps->p[t->len]); t->len++)
			;
		if (lex_num(ps, t) < 0) return -1;
	} else {
		return fail(ps, "unexpected %s", quote(q, ps->p, 1));
	}
	ps->p += t->len;
	return 0;
}

/* The current token is kind (then the next is read), else "expected WHAT, found ...". */
static int expect(struct ps *ps, int kind, const char *what)
{
	char q[QUOTED];
	if (ps->t.kind != kind) return fail(ps, "expected %s, found %s", what, found(ps, q));
	return lex(ps);
}

static int is_keyword(const struct tok *t)
{
	return t->kind == T_NAME && ((t->nlen == 6 && !memcmp(t->name, "struct", 6)) ||
				     (t->nlen == 5 && !memcmp(t->name, "union", 5)));
}

/* A name (a variable's or a member's) into out, WHAT naming it in the message if there is none. */
static int name(struct ps *ps, char out[TD_NAME_MAX], const char *what)
{
	char q[QUOTED];
	if (ps->t.kind != T_NAME) return fail(ps, "expected %s, found %s", what, found(ps, q));
	if (is_keyword(&ps->t)) return fail(ps, "%s is a keyword, not a name", quote(q, ps->t.at, ps->t.len));
	memcpy(out, ps->t.name, ps->t.nlen);
	return lex(ps);
}

/* A register ($REG) into out, without its `$`. */
static int reg(struct ps *ps, char out[TD_NAME_MAX], const char *what)
{
	char q[QUOTED];
	if (ps->t.kind != T_REG) return fail(ps, "expected %s, found %s", what, found(ps, q));
	memcpy(out, ps->t.name, ps->t.nlen);
	return lex(ps);
}

/* TYPE: `struct NAME`, `union NAME` or a typedef name, stored with one space. */
static int type(struct ps *ps, char out[TD_NAME_MAX])
{
	char q[QUOTED];
	if (ps->t.kind != T_NAME)
		return fail(ps, "expected a type (struct NAME, union NAME or a typedef name), found %s", found(ps, q));
	if (!is_keyword(&ps->t)) return name(ps, out, "a type");
	struct tok kw = ps->t;
	if (lex(ps) < 0) return -1;
	if (ps->t.kind != T_NAME || is_keyword(&ps->t))
		return fail(ps, "expected a name after `%.*s`, found %s", (int)kw.nlen, kw.name, found(ps, q));
	if (kw.nlen + 1 + ps->t.nlen > TD_NAME_MAX - 1) {
		char full[TD_NAME_MAX * 2 + 8];
		int n = snprintf(full, sizeof full, "%.*s %.*s", (int)kw.nlen, kw.name, (int)ps->t.nlen, ps->t.name);
		return fail(ps, "type name too long (at most %d bytes): %s", TD_NAME_MAX - 1, quote(q, full, (size_t)n));
	}
	memcpy(out, kw.name, kw.nlen);
	out[kw.nlen] = ' ';
	memcpy(out + kw.nlen + 1, ps->t.name, ps->t.nlen);
	return lex(ps);
}

static int is_step(int kind)
{
	return kind == T_DOT || kind == T_ARROW || kind == T_LB;
}

/* [INDEX]: a number, `cpu` or $REG (the `[` already read). */
static int index_step(struct ps *ps, struct td_step *s)
{
	char q[QUOTED];
	s->kind = TD_INDEX;
	if (ps->t.kind == T_NUM) {
		s->idx = TD_IDX_NUM;
		s->num = ps->t.num;
	} else if (ps->t.kind == T_NAME && ps->t.nlen == 3 && !memcmp(ps->t.name, "cpu", 3)) {
		s->idx = TD_IDX_CPU;
	} else if (ps->t.kind == T_REG) {
		s->idx = TD_IDX_REG;
		memcpy(s->name, ps->t.name, ps->t.nlen);
	} else {
		return fail(ps, "expected a number, `cpu` or $REG as the index, found %s", found(ps, q));
	}
	if (lex(ps) < 0) return -1;
	return expect(ps, T_RB, "`]` after the index");
}

/* STEPS: `.member`, `->member`, `[INDEX]`, as many as follow (TD_STEPS_MAX in all). */
static int steps(struct ps *ps, struct td_expr *e)
{
	while (is_step(ps->t.kind)) {
		if (e->nsteps == TD_STEPS_MAX)
			return fail(ps, "more than %d steps (`.member`, `->member`, `[index]`)", TD_STEPS_MAX);
		struct td_step *s = &e->steps[e->nsteps++];
		int kind = ps->t.kind;
		if (lex(ps) < 0) return -1;
		if (kind == T_LB) {
			if (index_step(ps, s) < 0) return -1;
			continue;
		}
		s->kind = kind == T_DOT ? TD_MEMBER : TD_ARROW;
		if (name(ps, s->name, kind == T_DOT ? "a member name after `.`" : "a member name after `->`") < 0)
			return -1;
	}
	return 0;
}

/* The end of the value after a whole expression; AFTER says what was read. */
static int at_end(struct ps *ps, const char *after)
{
	char q[QUOTED];
	if (ps->t.kind != T_END) return fail(ps, "expected the end of the line after %s, found %s", after, found(ps, q));
	return 0;
}

/* VAR STEPS. */
static int var_expr(struct ps *ps, struct td_expr *e)
{
	char q[QUOTED];
	e->form = TD_VAR;
	if (name(ps, e->var, "a variable") < 0 || steps(ps, e) < 0) return -1;
	if (ps->t.kind != T_END)
		return fail(ps, "expected `.member`, `->member`, `[index]` or the end of the line, found %s", found(ps, q));
	return 0;
}

/* (TYPE *)$REG, the `(` already read. */
static int cast(struct ps *ps, struct td_expr *e)
{
	if (type(ps, e->type) < 0 || expect(ps, T_STAR, "`*` after the type") < 0 ||
	    expect(ps, T_RP, "`)` after `(TYPE *`") < 0)
		return -1;
	return reg(ps, e->reg, "a register ($REG) after the cast");
}

/* ((TYPE *)$REG)->MEMBER STEPS or (TYPE *)$REG, at the first `(`. */
static int cast_expr(struct ps *ps, struct td_expr *e)
{
	char q[QUOTED];
	if (lex(ps) < 0) return -1;
	if (ps->t.kind == T_LP) {
		e->form = TD_REG_STRUCT;
		if (lex(ps) < 0 || cast(ps, e) < 0 || expect(ps, T_RP, "`)` after `((TYPE *)$REG`") < 0) return -1;
		if (ps->t.kind != T_ARROW)
			return fail(ps, "expected `->member` after ((TYPE *)$REG), found %s", found(ps, q));
		if (steps(ps, e) < 0) return -1;
		if (ps->t.kind != T_END)
			return fail(ps, "expected `.member`, `->member`, `[index]` or the end of the line, found %s",
				    found(ps, q));
		return 0;
	}
	if (ps->t.kind != T_NAME)
		return fail(ps, "expected a type or `(` after `(`, found %s", found(ps, q));
	e->form = TD_REG_TASK;
	if (cast(ps, e) < 0) return -1;
	if (is_step(ps->t.kind))
		return fail(ps, "found %s after (TYPE *)$REG: the cast binds looser, so parenthesise it: "
			    "((TYPE *)$REG)->member", found(ps, q));
	return at_end(ps, "(TYPE *)$REG");
}

/* *(TYPE **)($REG + &VAR STEPS), at the `*`. */
static int percpu_expr(struct ps *ps, struct td_expr *e)
{
	e->form = TD_REG_PLUS_VAR;
	if (lex(ps) < 0 || expect(ps, T_LP, "`(` after `*`") < 0 || type(ps, e->type) < 0 ||
	    expect(ps, T_STAR, "`**` after the type in *(TYPE **)") < 0 ||
	    expect(ps, T_STAR, "`**` after the type in *(TYPE **)") < 0 ||
	    expect(ps, T_RP, "`)` after `*(TYPE **`") < 0 || expect(ps, T_LP, "`(` after `*(TYPE **)`") < 0 ||
	    reg(ps, e->reg, "a register ($REG) in *(TYPE **)($REG + &VAR)") < 0 ||
	    expect(ps, T_PLUS, "`+` after the register") < 0 || expect(ps, T_AMP, "`&` before the variable") < 0 ||
	    name(ps, e->var, "a variable after `&`") < 0 || steps(ps, e) < 0 ||
	    expect(ps, T_RP, "`)` closing ($REG + &VAR") < 0)
		return -1;
	return at_end(ps, "*(TYPE **)($REG + &VAR)");
}

/* EXPR: one of the four shapes, told apart by the first token. */
static int expr(struct ps *ps, struct td_expr *e)
{
	char q[QUOTED];
	switch (ps->t.kind) {
	case T_NAME: return var_expr(ps, e);
	case T_LP: return cast_expr(ps, e);
	case T_STAR: return percpu_expr(ps, e);
	case T_REG: return fail(ps, "a register needs a cast: (TYPE *)$REG, found %s", found(ps, q));
	default:
		return fail(ps, "expected VAR, (TYPE *)$REG, ((TYPE *)$REG)->MEMBER or *(TYPE **)($REG + &VAR), found %s",
			    found(ps, q));
	}
}

/* FIELD: NAME (`.` NAME)*, TD_STEPS_MAX names at most. */
static int field(struct ps *ps, struct td_path *p)
{
	char q[QUOTED];
	for (;;) {
		if (p->n == TD_STEPS_MAX) return fail(ps, "more than %d members in the field path", TD_STEPS_MAX);
		if (name(ps, p->m[p->n++], "a member name (a field is a path such as `p.pid`)") < 0) return -1;
		if (ps->t.kind == T_END) return 0;
		if (ps->t.kind != T_DOT) {
			if (ps->t.kind == T_ARROW || ps->t.kind == T_LB)
				return fail(ps, "a field is a member path such as `p.pid` (no pointers, no index), found %s",
					    found(ps, q));
			return fail(ps, "expected `.member` or the end of the line, found %s", found(ps, q));
		}
		if (lex(ps) < 0) return -1;
	}
}

static const char *const keys[4] = { "current", "pid", "tgid", "name" };

/* The line's key (trimmed): its index in keys, -1 if none. */
static int key_of(const char *s, size_t n)
{
	for (int i = 0; i < 4; i++)
		if (strlen(keys[i]) == n && !memcmp(s, keys[i], n)) return i;
	return -1;
}

static struct td_path *path_of(struct taskdesc *d, int k)
{
	return k == 1 ? &d->pid : k == 2 ? &d->tgid : &d->name;
}

/* The printed length of key k's line, without its newline. */
static size_t canonical_len(struct taskdesc *d, int k)
{
	int n = k == 0 ? taskdesc_expr(&d->cur, NULL, 0) : taskdesc_path(path_of(d, k), NULL, 0);
	return strlen(keys[k]) + 3 + (size_t)n;
}

/* One line, s..e without its `\n`. */
static int one_line(struct ps *ps, struct taskdesc *d, const char *s, const char *e)
{
	char q[QUOTED];
	if (memchr(s, 0, (size_t)(e - s))) return fail(ps, "a NUL byte");
	if (e > s && e[-1] == '\r') e--; /* CRLF */
	if (e - s > TD_LINE_MAX) return fail(ps, "longer than %d bytes: %s", TD_LINE_MAX, quote(q, s, (size_t)(e - s)));
	const char *hash = memchr(s, '#', (size_t)(e - s));
	if (hash) e = hash;
	while (s < e && is_space(*s)) s++;
	while (e > s && is_space(e[-1])) e--;
	if (s == e) return 0;
	const char *eq = memchr(s, '=', (size_t)(e - s));
	if (!eq) return fail(ps, "expected `key = value`, found %s", quote(q, s, (size_t)(e - s)));
	const char *ke = eq, *v = eq + 1;
	while (ke > s && is_space(ke[-1])) ke--;
	while (v < e && is_space(*v)) v++;
	if (ke == s) return fail(ps, "no key before `=`");
	int k = key_of(s, (size_t)(ke - s));
	if (k < 0) return fail(ps, "unknown key %s (the keys are current, pid, tgid and name)", quote(q, s, (size_t)(ke - s)));
	if (d->line[k]) return fail(ps, "a second `%s` line (the first is line %d)", keys[k], d->line[k]);
	if (v == e) return fail(ps, "`%s =` has no value", keys[k]);
	ps->p = v;
	ps->end = e;
	if (lex(ps) < 0 || (k == 0 ? expr(ps, &d->cur) : field(ps, path_of(d, k))) < 0) return -1;
	if (canonical_len(d, k) > TD_LINE_MAX)
		return fail(ps, "too long: written canonically (taskdesc_format) the line is over %d bytes", TD_LINE_MAX);
	d->line[k] = ps->line;
	return 0;
}

int taskdesc_parse(const char *text, size_t len, struct taskdesc *d, char *err, size_t cap)
{
	struct ps ps = { .err = err, .cap = cap };
	memset(d, 0, sizeof *d);
	if (err && cap) err[0] = 0;
	if (len > TD_TEXT_MAX) return fail(&ps, "the description is %zu bytes, more than %d", len, TD_TEXT_MAX);
	const char *p = text, *stop = len ? text + len : text;
	while (p < stop) {
		const char *nl = memchr(p, '\n', (size_t)(stop - p));
		ps.line++;
		if (one_line(&ps, d, p, nl ? nl : stop) < 0) return -1;
		p = nl ? nl + 1 : stop;
	}
	ps.line = 0;
	static const int required[] = { 0, 1, 3 };
	for (int i = 0; i < 3; i++)
		if (!d->line[required[i]]) return fail(&ps, "no `%s = ...` line", keys[required[i]]);
	return 0;
}

/* Printing: what fits of the text, always NUL-terminated (cap > 0), and the length it needs. */
struct out {
	char *s;
	size_t cap, n;
};

static void put(struct out *o, const char *s, size_t n)
{
	if (o->cap && o->n < o->cap - 1) {
		size_t k = o->cap - 1 - o->n;
		if (k > n) k = n;
		memcpy(o->s + o->n, s, k);
		o->s[o->n + k] = 0;
	}
	o->n += n;
}

static void puts_(struct out *o, const char *s)
{
	put(o, s, strlen(s));
}

/* A name from a struct: at most TD_NAME_MAX - 1 bytes, whether or not NUL-terminated. */
static void put_name(struct out *o, const char s[TD_NAME_MAX])
{
	put(o, s, strnlen(s, TD_NAME_MAX - 1));
}

static void put_steps(struct out *o, const struct td_expr *e)
{
	int n = e->nsteps < 0 ? 0 : e->nsteps > TD_STEPS_MAX ? TD_STEPS_MAX : e->nsteps;
	for (int i = 0; i < n; i++) {
		const struct td_step *s = &e->steps[i];
		char num[24];
		switch (s->kind) {
		case TD_MEMBER: puts_(o, "."); put_name(o, s->name); break;
		case TD_ARROW: puts_(o, "->"); put_name(o, s->name); break;
		case TD_INDEX:
			puts_(o, "[");
			if (s->idx == TD_IDX_CPU) puts_(o, "cpu");
			else if (s->idx == TD_IDX_REG) puts_(o, "$"), put_name(o, s->name);
			else snprintf(num, sizeof num, "%" PRIu64, s->num), puts_(o, num);
			puts_(o, "]");
			break;
		}
	}
}

static void put_expr(struct out *o, const struct td_expr *e)
{
	switch (e->form) {
	case TD_VAR:
		put_name(o, e->var);
		put_steps(o, e);
		break;
	case TD_REG_STRUCT:
		puts_(o, "((");
		put_name(o, e->type);
		puts_(o, " *)$");
		put_name(o, e->reg);
		puts_(o, ")");
		put_steps(o, e);
		break;
	case TD_REG_TASK:
		puts_(o, "(");
		put_name(o, e->type);
		puts_(o, " *)$");
		put_name(o, e->reg);
		break;
	case TD_REG_PLUS_VAR:
		puts_(o, "*(");
		put_name(o, e->type);
		puts_(o, " **)($");
		put_name(o, e->reg);
		puts_(o, " + &");
		put_name(o, e->var);
		put_steps(o, e);
		puts_(o, ")");
		break;
	}
}

static void put_path(struct out *o, const struct td_path *p)
{
	int n = p->n < 0 ? 0 : p->n > TD_STEPS_MAX ? TD_STEPS_MAX : p->n;
	for (int i = 0; i < n; i++) {
		if (i) puts_(o, ".");
		put_name(o, p->m[i]);
	}
}

static struct out out_init(char *s, size_t cap)
{
	struct out o = { s, s ? cap : 0, 0 };
	if (o.cap) s[0] = 0;
	return o;
}

int taskdesc_expr(const struct td_expr *e, char *out, size_t cap)
{
	struct out o = out_init(out, cap);
	put_expr(&o, e);
	return (int)o.n;
}

int taskdesc_path(const struct td_path *p, char *out, size_t cap)
{
	struct out o = out_init(out, cap);
	put_path(&o, p);
	return (int)o.n;
}

int taskdesc_format(const struct taskdesc *d, char *out, size_t cap)
{
	struct out o = out_init(out, cap);
	puts_(&o, "current = ");
	put_expr(&o, &d->cur);
	puts_(&o, "\npid = ");
	put_path(&o, &d->pid);
	if (d->tgid.n > 0) {
		puts_(&o, "\ntgid = ");
		put_path(&o, &d->tgid);
	}
	puts_(&o, "\nname = ");
	put_path(&o, &d->name);
	puts_(&o, "\n");
	return (int)o.n;
}
