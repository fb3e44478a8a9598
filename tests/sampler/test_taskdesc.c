/* SPDX-License-Identifier: MIT */
/* test_taskdesc.c: the task description's parser and printer -- each shape's struct, the line rules,
 * every error's one line, the limits, the canonical round trip and the buffers' caps. */
#include "check.h"
#include "../../sampler/taskdesc.h"
#include <stdlib.h>

#define FIELDS "pid = pid\nname = name\n"

static char err[512];

static int parse(const char *s, struct taskdesc *d)
{
	return taskdesc_parse(s, strlen(s), d, err, sizeof err);
}

/* The message for s (which must fail), "(parsed)" if it did not. */
static const char *fails(const char *s)
{
	struct taskdesc d;
	return parse(s, &d) == 0 ? "(parsed)" : err;
}

/* The current expression of s, printed canonically ("(error)" if s fails). */
static const char *canon(const char *s)
{
	static char out[1024];
	struct taskdesc d;
	if (parse(s, &d)) return "(error)";
	taskdesc_expr(&d.cur, out, sizeof out);
	return out;
}

static int starts(const char *s, const char *prefix)
{
	return strncmp(s, prefix, strlen(prefix)) == 0;
}

static int printable_line(const char *s)
{
	for (; *s; s++)
		if ((unsigned char)*s < 0x20 || (unsigned char)*s >= 0x7f) return 0;
	return 1;
}

static struct td_step member(int kind, const char *name)
{
	struct td_step s;
	memset(&s, 0, sizeof s);
	s.kind = kind;
	strcpy(s.name, name);
	return s;
}

static struct td_step index_of(int idx, uint64_t num, const char *reg)
{
	struct td_step s;
	memset(&s, 0, sizeof s);
	s.kind = TD_INDEX;
	s.idx = idx;
	s.num = num;
	if (reg) strcpy(s.name, reg);
	return s;
}

static struct td_expr expr_of(int form, const char *var, const char *reg, const char *type)
{
	struct td_expr e;
	memset(&e, 0, sizeof e);
	e.form = form;
	strcpy(e.var, var);
	strcpy(e.reg, reg);
	strcpy(e.type, type);
	return e;
}

static struct td_path path_of(const char *a, const char *b)
{
	struct td_path p;
	memset(&p, 0, sizeof p);
	if (a) strcpy(p.m[p.n++], a);
	if (b) strcpy(p.m[p.n++], b);
	return p;
}

/* d is exactly the expression want with fields pid and name (no tgid), every other byte zero. */
static int same_desc(const struct taskdesc *d, const struct td_expr *want)
{
	struct td_path pid = path_of("pid", NULL), name = path_of("name", NULL), none = path_of(NULL, NULL);
	return !memcmp(&d->cur, want, sizeof *want) && !memcmp(&d->pid, &pid, sizeof pid) &&
	       !memcmp(&d->name, &name, sizeof name) && !memcmp(&d->tgid, &none, sizeof none);
}

/* The four shapes, their structs byte for byte (the header's examples). */
static void test_shapes(void)
{
	struct taskdesc d;
	struct td_expr e;

	e = expr_of(TD_REG_STRUCT, "", "gs_base", "struct cpu");
	e.nsteps = 1;
	e.steps[0] = member(TD_ARROW, "current");
	CHECK(parse("current = ((struct cpu *)$gs_base)->current\n" FIELDS, &d) == 0 && same_desc(&d, &e));
	CHECK(d.line[0] == 1 && d.line[1] == 2 && d.line[2] == 0 && d.line[3] == 3 && err[0] == 0);

	e = expr_of(TD_VAR, "current_proc", "", "");
	CHECK(parse("current = current_proc\n" FIELDS, &d) == 0 && same_desc(&d, &e));

	e = expr_of(TD_VAR, "cpus", "", "");
	e.nsteps = 2;
	e.steps[0] = index_of(TD_IDX_REG, 0, "tp");
	e.steps[1] = member(TD_MEMBER, "proc");
	CHECK(parse("current = cpus[$tp].proc\n" FIELDS, &d) == 0 && same_desc(&d, &e));
	e.steps[0] = index_of(TD_IDX_CPU, 0, NULL);
	CHECK(parse("current = cpus[cpu].proc\n" FIELDS, &d) == 0 && same_desc(&d, &e));
	e.steps[0] = index_of(TD_IDX_NUM, 3, NULL);
	CHECK(parse("current = cpus[3].proc\n" FIELDS, &d) == 0 && same_desc(&d, &e));
	e.steps[0] = index_of(TD_IDX_NUM, 0x1f, NULL);
	CHECK(parse("current = cpus[0x1F].proc\n" FIELDS, &d) == 0 && same_desc(&d, &e));

	e = expr_of(TD_REG_TASK, "", "tp", "struct task_struct");
	CHECK(parse("current = (struct task_struct *)$tp\n" FIELDS, &d) == 0 && same_desc(&d, &e));
	e = expr_of(TD_REG_TASK, "", "percpu", "task_t");
	CHECK(parse("current = (task_t *)$percpu\n" FIELDS, &d) == 0 && same_desc(&d, &e));

	e = expr_of(TD_REG_PLUS_VAR, "__entry_task", "TPIDR_EL1", "struct task_struct");
	CHECK(parse("current = *(struct task_struct **)($TPIDR_EL1 + &__entry_task)\n" FIELDS, &d) == 0 &&
	      same_desc(&d, &e));

	/* Steps of every kind after a cast and inside the per-CPU form. */
	e = expr_of(TD_REG_STRUCT, "", "sscratch", "union pcpu");
	e.nsteps = 4;
	e.steps[0] = member(TD_ARROW, "hot");
	e.steps[1] = member(TD_MEMBER, "u");
	e.steps[2] = index_of(TD_IDX_NUM, 0, NULL);
	e.steps[3] = member(TD_ARROW, "task");
	CHECK(parse("current = ((union pcpu *)$sscratch)->hot.u[0]->task\n" FIELDS, &d) == 0 && same_desc(&d, &e));
	e = expr_of(TD_REG_PLUS_VAR, "hot", "percpu", "task_t");
	e.nsteps = 2;
	e.steps[0] = member(TD_MEMBER, "s");
	e.steps[1] = index_of(TD_IDX_CPU, 0, NULL);
	CHECK(parse("current = *(task_t **)($percpu + &hot.s[cpu])\n" FIELDS, &d) == 0 && same_desc(&d, &e));

	/* Spaces and tabs anywhere between tokens, none needed; the type keeps one space. */
	e = expr_of(TD_REG_STRUCT, "", "gs_base", "struct cpu");
	e.nsteps = 1;
	e.steps[0] = member(TD_ARROW, "current");
	CHECK(parse("current=((struct\t  cpu*)$gs_base)->current\n" FIELDS, &d) == 0 && same_desc(&d, &e));
	CHECK(parse("current = ( ( struct cpu * ) $gs_base ) -> current\n" FIELDS, &d) == 0 && same_desc(&d, &e));

	/* Fields: dotted paths, tgid optional. */
	CHECK(parse("current = c\npid = p.pid\ntgid = a.b.tgid\nname = comm\n", &d) == 0);
	struct td_path p = path_of("p", "pid"), c = path_of("comm", NULL);
	CHECK(!memcmp(&d.pid, &p, sizeof p) && !memcmp(&d.name, &c, sizeof c));
	CHECK(d.tgid.n == 3 && !strcmp(d.tgid.m[0], "a") && !strcmp(d.tgid.m[1], "b") && !strcmp(d.tgid.m[2], "tgid"));
	CHECK(d.line[0] == 1 && d.line[1] == 2 && d.line[2] == 3 && d.line[3] == 4);
}

/* Comments, blank lines, CRLF, any order, no final newline. */
static void test_lines(void)
{
	struct taskdesc d;
	static const char text[] =
		"# the test kernel\n"
		"\n"
		"   \t\n"
		"name = name   # the task's name\r\n"
		"\tpid=pid#id\r\n"
		"# current = nothing = here\n"
		"current = ((struct cpu *)$percpu)->current";
	struct td_expr e = expr_of(TD_REG_STRUCT, "", "percpu", "struct cpu");
	e.nsteps = 1;
	e.steps[0] = member(TD_ARROW, "current");
	CHECK(parse(text, &d) == 0 && same_desc(&d, &e));
	CHECK(d.line[0] == 7 && d.line[1] == 5 && d.line[2] == 0 && d.line[3] == 4);
	/* The built-in description of guestos.h's TESTKERNEL_TASKS is this one. */
	CHECK(parse("current = ((struct cpu *)$percpu)->current\npid = pid\nname = name\n", &d) == 0 &&
	      same_desc(&d, &e));
	/* A comment may hold anything, `=` and non-printable bytes included. */
	CHECK(parse("current = x # \x01\xff = [\n" FIELDS, &d) == 0);
	/* A CR elsewhere than before the newline is a byte like any other. */
	CHECK_STR(fails("current = x\r\r\n" FIELDS), "line 1: unexpected `\\x0d`");
	/* Nothing but comments. */
	CHECK_STR(fails(""), "no `current = ...` line");
	CHECK_STR(fails("# nothing\n\n"), "no `current = ...` line");
}

/* Each error: one line, "line N: " when it is a line's, the exact text for most. */
static void test_errors(void)
{
	/* The keys and lines. */
	CHECK_STR(fails("current = c\nname = n\n"), "no `pid = ...` line");
	CHECK_STR(fails("current = c\npid = p\n"), "no `name = ...` line");
	CHECK_STR(fails(FIELDS), "no `current = ...` line");
	CHECK_STR(fails(FIELDS "comm = comm\n"), "line 3: unknown key `comm` (the keys are current, pid, tgid and name)");
	CHECK_STR(fails(FIELDS "Name = x\n"), "line 3: unknown key `Name` (the keys are current, pid, tgid and name)");
	CHECK_STR(fails(FIELDS "pid = p\n"), "line 3: a second `pid` line (the first is line 1)");
	CHECK_STR(fails("current = a\n\ncurrent = b\n"), "line 3: a second `current` line (the first is line 1)");
	CHECK_STR(fails("current\n"), "line 1: expected `key = value`, found `current`");
	CHECK_STR(fails("pid # = x\n"), "line 1: expected `key = value`, found `pid`");
	CHECK_STR(fails("pid =   # none\n"), "line 1: `pid =` has no value");
	CHECK_STR(fails("current=\n"), "line 1: `current =` has no value");
	CHECK_STR(fails(" = x\n"), "line 1: no key before `=`");
	CHECK_STR(fails("a b = x\n"), "line 1: unknown key `a b` (the keys are current, pid, tgid and name)");

	/* The expression's shapes. */
	CHECK_STR(fails("current = cpus[1).proc\n"), "line 1: expected `]` after the index, found `)`");
	CHECK_STR(fails("current = cpus[1\n"), "line 1: expected `]` after the index, found the end of the line");
	CHECK_STR(fails("current = $tp\n"), "line 1: a register needs a cast: (TYPE *)$REG, found `$tp`");
	CHECK_STR(fails("current = (struct t *)$tp->x\n"),
		  "line 1: found `->` after (TYPE *)$REG: the cast binds looser, so parenthesise it: ((TYPE *)$REG)->member");
	CHECK_STR(fails("current = (struct t *)$tp.x\n"),
		  "line 1: found `.` after (TYPE *)$REG: the cast binds looser, so parenthesise it: ((TYPE *)$REG)->member");
	CHECK(starts(fails("current = (struct t *)$tp[0]\n"), "line 1: found `[` after (TYPE *)$REG"));
	CHECK_STR(fails("current = ((struct t *)$tp).x\n"), "line 1: expected `->member` after ((TYPE *)$REG), found `.`");
	CHECK_STR(fails("current = ((struct t *)$tp)\n"),
		  "line 1: expected `->member` after ((TYPE *)$REG), found the end of the line");
	CHECK_STR(fails("current = *(struct t **)($r + &v).x\n"),
		  "line 1: expected the end of the line after *(TYPE **)($REG + &VAR), found `.`");
	CHECK_STR(fails("current = *(struct t *)($r + &v)\n"),
		  "line 1: expected `**` after the type in *(TYPE **), found `)`");
	CHECK_STR(fails("current = ((struct t *)$tp)->a b\n"),
		  "line 1: expected `.member`, `->member`, `[index]` or the end of the line, found `b`");
	CHECK_STR(fails("current = *(5 **)($r + &v)\n"),
		  "line 1: expected a type (struct NAME, union NAME or a typedef name), found `5`");
	CHECK_STR(fails("current = (struct *)$r\n"), "line 1: expected a name after `struct`, found `*`");
	CHECK_STR(fails("current = struct\n"), "line 1: `struct` is a keyword, not a name");
	CHECK_STR(fails("current = cpus[i]\n"), "line 1: expected a number, `cpu` or $REG as the index, found `i`");
	CHECK_STR(fails("current = a b\n"),
		  "line 1: expected `.member`, `->member`, `[index]` or the end of the line, found `b`");
	CHECK_STR(fails("current = 5\n"),
		  "line 1: expected VAR, (TYPE *)$REG, ((TYPE *)$REG)->MEMBER or *(TYPE **)($REG + &VAR), found `5`");
	static const char *const broken[] = {
		"current = (struct t *)$r )", "current = (struct t)$r", "current = (struct t *)r", "current = (3 *)$r",
		"current = ((struct t *)$r->x", "current = ((struct t *)$r)->", "current = ((struct t *)$r)->5",
		"current = *struct t", "current = *(t **)$r", "current = *(t **)($r &v)", "current = *(t **)($r + v)",
		"current = *(t **)(v + &$r)", "current = *(t **)($r + &v", "current = *(t **)($r + &v) x",
		"current = *(t ***)($r + &v)", "current = (union *)$r", "current = (struct union *)$r",
		"current = a.", "current = a->", "current = a[", "current = a[]", "current = a..b", "current = a[cpu",
		"current = a[$]", "current = a.union", "current = a + b", "current = &a", "current = a = b",
		"current = ()", "current = (", "current = *", "current = a]",
	};
	for (size_t i = 0; i < sizeof broken / sizeof *broken; i++) {
		const char *m = fails(broken[i]);
		CHECK(starts(m, "line 1: ") && printable_line(m));
		if (!starts(m, "line 1: ")) fprintf(stderr, "  %s -> %s\n", broken[i], m);
	}

	/* The lexer. */
	CHECK_STR(fails("current = a@b\n"), "line 1: unexpected `@`");
	CHECK_STR(fails("current = a-b\n"), "line 1: unexpected `-` (the only `-` read is `->`)");
	CHECK_STR(fails("current = a[$]\n"), "line 1: `$` needs a register name after it, found `$]`");
	CHECK_STR(fails("current = a[010]\n"), "line 1: a number with a leading 0: `010` (write it in decimal or 0x hex)");
	CHECK_STR(fails("current = a[12ab]\n"), "line 1: bad number `12ab`");
	CHECK_STR(fails("current = a[0x]\n"), "line 1: bad number `0x`");
	CHECK_STR(fails("current = a[0xfg]\n"), "line 1: bad number `0xfg`");
	CHECK_STR(fails("current = a[18446744073709551616]\n"),
		  "line 1: number too large (more than 64 bits): `18446744073709551616`");
	CHECK(starts(fails("current = a[0x10000000000000000]\n"), "line 1: number too large"));
	CHECK_STR(fails("current = a\xc3\xa9\n"), "line 1: unexpected `\\xc3`");
	CHECK_STR(fails("current = a\x0b\n"), "line 1: unexpected `\\x0b`");
	CHECK_STR(fails("current = a`\\\n"), "line 1: unexpected `\\x60`");

	/* Fields. */
	CHECK_STR(fails("current = c\npid = p->pid\n"),
		  "line 2: a field is a member path such as `p.pid` (no pointers, no index), found `->`");
	CHECK(starts(fails("current = c\npid = p[0]\n"), "line 2: a field is a member path"));
	CHECK_STR(fails("current = c\npid = (struct t *)$r\n"),
		  "line 2: expected a member name (a field is a path such as `p.pid`), found `(`");
	CHECK(starts(fails("current = c\npid = p.\n"), "line 2: expected a member name"));
	CHECK(starts(fails("current = c\npid = p q\n"), "line 2: expected `.member` or the end of the line, found `q`"));
	CHECK(starts(fails("current = c\npid = $r\n"), "line 2: expected a member name"));
	CHECK(starts(fails("current = c\nname = 7\n"), "line 2: expected a member name"));
	CHECK(starts(fails("current = c\ntgid = struct\n"), "line 2: `struct` is a keyword"));
}

/* TD_TEXT_MAX, TD_LINE_MAX, TD_NAME_MAX, TD_STEPS_MAX, NUL bytes. */
static void test_limits(void)
{
	struct taskdesc d;
	char *big = malloc(TD_TEXT_MAX + 2);
	static const char head[] = "current = c\n" FIELDS;
	/* A text of exactly TD_TEXT_MAX bytes (comment lines), then one more. */
	memcpy(big, head, sizeof head - 1);
	for (size_t i = sizeof head - 1; i < TD_TEXT_MAX; i++) big[i] = i % 100 == 99 ? '\n' : '#';
	CHECK(taskdesc_parse(big, TD_TEXT_MAX, &d, err, sizeof err) == 0);
	big[TD_TEXT_MAX] = '\n';
	CHECK(taskdesc_parse(big, TD_TEXT_MAX + 1, &d, err, sizeof err) == -1);
	CHECK_STR(err, "the description is 65537 bytes, more than 65536");

	/* A NUL byte: in a value, in a comment, on the last line (the parse is of len bytes, not a string). */
	static const char nul1[] = "current = c\0x\n" FIELDS, nul2[] = "current = c\npid = p\nname = n # \0",
		nul3[] = "current = c\npid = p\nname = n\n\0";
	CHECK(taskdesc_parse(nul1, sizeof nul1 - 1, &d, err, sizeof err) == -1);
	CHECK_STR(err, "line 1: a NUL byte");
	CHECK(taskdesc_parse(nul2, sizeof nul2 - 1, &d, err, sizeof err) == -1);
	CHECK_STR(err, "line 3: a NUL byte");
	CHECK(taskdesc_parse(nul3, sizeof nul3 - 1, &d, err, sizeof err) == -1);
	CHECK_STR(err, "line 4: a NUL byte");
	CHECK(taskdesc_parse(nul3, sizeof nul3 - 2, &d, err, sizeof err) == 0); /* without it: fine */

	/* A line of TD_LINE_MAX bytes (its CRLF not counted), and one longer. */
	char line[TD_LINE_MAX + 64];
	memset(line, 0, sizeof line);
	strcpy(line, "current = c #");
	memset(line + strlen(line), 'x', TD_LINE_MAX - strlen(line));
	strcat(line, "\r\n" FIELDS);
	CHECK(parse(line, &d) == 0);
	line[TD_LINE_MAX] = 'x';
	CHECK_STR(fails(line), "line 1: longer than 512 bytes: `current = c #xxxxxxxxxxx...`");

	/* Names of TD_NAME_MAX - 1 bytes, and longer; a type with its keyword. */
	char n63[64], n64[65], n56[57], n57[58], buf[512];
	memset(n63, 'a', 63), n63[63] = 0;
	memset(n64, 'b', 64), n64[64] = 0;
	memset(n56, 'c', 56), n56[56] = 0;
	memset(n57, 'd', 57), n57[57] = 0;
	snprintf(buf, sizeof buf, "current = %s.%s\n" FIELDS, n63, n63);
	CHECK(parse(buf, &d) == 0 && !strcmp(d.cur.var, n63) && !strcmp(d.cur.steps[0].name, n63));
	snprintf(buf, sizeof buf, "current = a.%s\n" FIELDS, n64);
	CHECK_STR(fails(buf), "line 1: name too long (at most 63 bytes): `bbbbbbbbbbbbbbbbbbbbbbbb...`");
	snprintf(buf, sizeof buf, "current = (t *)$%s\n" FIELDS, n64);
	CHECK(starts(fails(buf), "line 1: name too long (at most 63 bytes): `$bbbb"));
	snprintf(buf, sizeof buf, "current = (t *)$%s\n" FIELDS, n63);
	CHECK(parse(buf, &d) == 0 && !strcmp(d.cur.reg, n63));
	snprintf(buf, sizeof buf, "current = (struct %s *)$r\n" FIELDS, n56);
	CHECK(parse(buf, &d) == 0 && strlen(d.cur.type) == 63 && starts(d.cur.type, "struct ccc"));
	snprintf(buf, sizeof buf, "current = (struct %s *)$r\n" FIELDS, n57);
	CHECK_STR(fails(buf), "line 1: type name too long (at most 63 bytes): `struct ddddddddddddddddd...`");
	snprintf(buf, sizeof buf, "current = c\npid = %s\nname = x.%s\n", n63, n64);
	CHECK(starts(fails(buf), "line 3: name too long"));

	/* TD_STEPS_MAX steps and path members, and one more. */
	CHECK(parse("current = a.b[1]->c[cpu].d[$r].e.f\n" FIELDS, &d) == 0 && d.cur.nsteps == 8);
	CHECK_STR(fails("current = a.b[1]->c[cpu].d[$r].e.f.g\n" FIELDS),
		  "line 1: more than 8 steps (`.member`, `->member`, `[index]`)");
	CHECK(parse("current = ((t *)$r)->a.b.c.d.e.f.g.h\n" FIELDS, &d) == 0 && d.cur.nsteps == 8);
	CHECK(starts(fails("current = ((t *)$r)->a.b.c.d.e.f.g.h.i\n" FIELDS), "line 1: more than 8 steps"));
	CHECK(parse("current = *(t **)($r + &v.a.b.c.d.e.f.g)\n" FIELDS, &d) == 0 && d.cur.nsteps == 7);
	CHECK(parse("current = *(t **)($r + &v.a.b.c.d.e.f.g.h)\n" FIELDS, &d) == 0 && d.cur.nsteps == 8);
	CHECK(starts(fails("current = *(t **)($r + &v.a.b.c.d.e.f.g.h.i)\n" FIELDS), "line 1: more than 8 steps"));
	CHECK(parse("current = c\npid = a.b.c.d.e.f.g.h\nname = n\n", &d) == 0 && d.pid.n == 8 && !strcmp(d.pid.m[7], "h"));
	CHECK_STR(fails("current = c\npid = a.b.c.d.e.f.g.h.i\nname = n\n"), "line 2: more than 8 members in the field path");

	/* Numbers: the largest, hex with leading zeros, 0. */
	CHECK(parse("current = a[18446744073709551615][0xFFFFFFFFFFFFFFFF][0x0000000000000000001][0]\n" FIELDS, &d) == 0);
	CHECK(d.cur.steps[0].num == UINT64_MAX && d.cur.steps[1].num == UINT64_MAX && d.cur.steps[2].num == 1 &&
	      d.cur.steps[3].num == 0 && d.cur.steps[3].idx == TD_IDX_NUM);

	/* A line that fits as written but not canonically ("tgid=" becomes "tgid = "): refused, so a
	 * parsed description always prints back to one that parses. */
	char path[600];
	size_t o = 0;
	for (int i = 0; i < 8; i++) o += (size_t)snprintf(path + o, sizeof path - o, "%s%.*s", i ? "." : "", i < 7 ? 63 : 59, n63);
	CHECK(o == 507);
	char text[800];
	snprintf(text, sizeof text, "current = c\npid = p\nname = n\ntgid=%s\n", path);
	CHECK_STR(fails(text), "line 4: too long: written canonically (taskdesc_format) the line is over 512 bytes");
	snprintf(text, sizeof text, "current = c\npid = p\nname = n\ntgid=%s\n", path + 2); /* 2 bytes shorter: fits */
	CHECK(parse(text, &d) == 0 && d.tgid.n == 8);
	free(big);
}

/* Quotes of the input are bounded and escaped, whatever the line holds. */
static void test_excerpts(void)
{
	char hostile[TD_LINE_MAX + 1];
	strcpy(hostile, "current = a[");
	size_t n = strlen(hostile);
	for (int i = 0; n < TD_LINE_MAX; i++) hostile[n++] = (char)(i % 255 + 1 == '\n' ? 'x' : i % 255 + 1);
	hostile[n] = 0;
	const char *m = fails(hostile);
	CHECK(starts(m, "line 1: ") && printable_line(m) && strlen(m) < 200);

	char name[TD_LINE_MAX + 1];
	memset(name, 'k', TD_LINE_MAX - 4);
	strcpy(name + TD_LINE_MAX - 4, " = 1");
	m = fails(name);
	CHECK(starts(m, "line 1: unknown key `kkkkkkkkkkkkkkkkkkkkkkkk...`") && strlen(m) < 120);

	char num[TD_LINE_MAX + 1];
	strcpy(num, "current = a[");
	memset(num + 12, '9', 400);
	strcpy(num + 412, "]");
	CHECK_STR(fails(num), "line 1: number too large (more than 64 bits): `999999999999999999999999...`");

	/* Each quoted byte of at most 24: here all escaped (4 bytes each). */
	char esc[64];
	snprintf(esc, sizeof esc, "current = c\n%s = x\n", "\x01\x02\x03\x04\x05\x06\x07\x08\x0e\x0f\x10\x11\x12"
		 "\x13\x14\x15\x16\x17\x18\x19\x1a\x1b\x1c\x1d\x1e\x1f");
	m = fails(esc);
	CHECK(starts(m, "line 2: unknown key `\\x01\\x02") && strstr(m, "\\x1d...`") && !strstr(m, "\\x1e"));
	CHECK_STR(fails("current = c\nx\x7f = 1\n"), "line 2: unknown key `x\\x7f` (the keys are current, pid, tgid and name)");
	CHECK_STR(fails("current = c\n\xef\xbb\xbfpid = 1\n"),
		  "line 2: unknown key `\\xef\\xbb\\xbfpid` (the keys are current, pid, tgid and name)");
}

/* format(parse(x)) parses to the same struct, prints the same text; the header's examples. */
static void test_round_trip(void)
{
	static const char *const ex[] = {
		"current = current_proc\npid = pid\nname = name\n",
		"current = cpus[$tp].proc\npid = pid\nname = name\n",
		"current = cpus[cpu].proc\npid = p.pid\ntgid = p.tgid\nname = comm\n",
		"current = ((struct cpu *)$gs_base)->current\npid = pid\nname = name\n",
		"current = (struct task_struct *)$tp\npid = pid\ntgid = tgid\nname = comm\n",
		"current = *(struct task_struct **)($TPIDR_EL1 + &__entry_task)\npid = pid\ntgid = tgid\nname = comm\n",
		"current = ((union u *)$percpu)->a[0x10].b->c[cpu][$x0]\npid = a.b.c.d.e.f.g.h\nname = n\n",
		"current = *(task_t **)($sscratch + &v.w[18446744073709551615])\npid = p\nname = n\n",
		"  current=cpus [ 007x ]\n", /* fails: not round-tripped */
		"# comments\r\nname=comm\r\npid=pid # x\r\ncurrent=((struct\tcpu*)$gs_base)->current\r\n",
	};
	int trips = 0;
	for (size_t i = 0; i < sizeof ex / sizeof *ex; i++) {
		struct taskdesc a, b;
		char t1[4096], t2[4096];
		if (taskdesc_parse(ex[i], strlen(ex[i]), &a, err, sizeof err)) continue;
		int n = taskdesc_format(&a, t1, sizeof t1);
		CHECK(n == (int)strlen(t1));
		CHECK(taskdesc_parse(t1, strlen(t1), &b, err, sizeof err) == 0);
		memset(a.line, 0, sizeof a.line);
		memset(b.line, 0, sizeof b.line);
		CHECK(!memcmp(&a, &b, sizeof a));
		taskdesc_format(&b, t2, sizeof t2);
		CHECK_STR(t1, t2);
		trips++;
	}
	CHECK(trips == 9);
	/* The canonical spellings. */
	CHECK_STR(canon("current=((struct  cpu*)$gs_base)  ->current\n" FIELDS), "((struct cpu *)$gs_base)->current");
	CHECK_STR(canon("current = cpus [ $tp ] . proc\n" FIELDS), "cpus[$tp].proc");
	CHECK_STR(canon("current = cpus[0x10].proc\n" FIELDS), "cpus[16].proc");
	CHECK_STR(canon("current = (struct proc*)$tp\n" FIELDS), "(struct proc *)$tp");
	CHECK_STR(canon("current=*(struct task_struct**)($TPIDR_EL1+&__entry_task)\n" FIELDS),
		  "*(struct task_struct **)($TPIDR_EL1 + &__entry_task)");
	struct taskdesc d;
	char t[512];
	CHECK(parse("# x\nname = comm\ntgid=t.tgid\npid = t . pid\ncurrent = (task_t*)$percpu\n", &d) == 0);
	CHECK(taskdesc_format(&d, t, sizeof t) == (int)strlen(t));
	CHECK_STR(t, "current = (task_t *)$percpu\npid = t.pid\ntgid = t.tgid\nname = comm\n");
	CHECK(taskdesc_path(&d.pid, t, sizeof t) == 5);
	CHECK_STR(t, "t.pid");
	/* A description with the longest names and steps prints and parses back. */
	char n63[64], text[2048], t1[4096];
	memset(n63, 'q', 63), n63[63] = 0;
	snprintf(text, sizeof text, "current=*(%s**)($%s+&%s[$%s][$%s][$%s][$%s])\n" FIELDS,
		 n63, n63, n63, n63, n63, n63, n63);
	CHECK(parse(text, &d) == 0 && d.cur.nsteps == 4);
	taskdesc_format(&d, t1, sizeof t1);
	struct taskdesc b;
	CHECK(taskdesc_parse(t1, strlen(t1), &b, err, sizeof err) == 0);
	memset(d.line, 0, sizeof d.line), memset(b.line, 0, sizeof b.line);
	CHECK(!memcmp(&d, &b, sizeof d));
}

/* The caps: err, taskdesc_expr's and taskdesc_format's out never written past, always terminated. */
static void test_caps(void)
{
	struct taskdesc d;
	char small[16];
	static const char bad[] = "current = cpus[1).proc\n";
	for (size_t cap = 1; cap < sizeof small; cap++) {
		memset(small, 'Z', sizeof small);
		CHECK(taskdesc_parse(bad, strlen(bad), &d, small, cap) == -1);
		CHECK(memchr(small, 0, cap) != NULL);
		int untouched = 1;
		for (size_t i = cap; i < sizeof small; i++) untouched &= small[i] == 'Z';
		CHECK(untouched);
		CHECK(!strncmp(small, "line 1: expected", strlen(small) < 7 ? strlen(small) : 7) ||
		      strstr(small, "[...]"));
	}
	memset(small, 'Z', sizeof small);
	CHECK(taskdesc_parse(bad, strlen(bad), &d, small, 0) == -1 && small[0] == 'Z'); /* cap 0: nothing */
	CHECK(taskdesc_parse(bad, strlen(bad), &d, NULL, 0) == -1);
	CHECK(taskdesc_parse(NULL, 0, &d, small, sizeof small) == -1 && strlen(small) < sizeof small);
	/* Success empties err. */
	strcpy(err, "stale");
	CHECK(parse("current = c\n" FIELDS, &d) == 0 && err[0] == 0);

	/* The printers: snprintf's length whatever the cap, what fits written and terminated. */
	CHECK(parse("current = ((struct cpu *)$gs_base)->current\n" FIELDS, &d) == 0);
	const char *full = "((struct cpu *)$gs_base)->current";
	for (size_t cap = 0; cap < sizeof small; cap++) {
		memset(small, 'Z', sizeof small);
		CHECK(taskdesc_expr(&d.cur, cap ? small : NULL, cap) == (int)strlen(full));
		if (cap) CHECK(strlen(small) == cap - 1 && !strncmp(small, full, cap - 1));
		int untouched = 1;
		for (size_t i = cap; i < sizeof small; i++) untouched &= small[i] == 'Z';
		CHECK(untouched);
	}
	memset(small, 'Z', sizeof small);
	CHECK(taskdesc_format(&d, small, 10) == (int)strlen("current = \npid = pid\nname = name\n") + (int)strlen(full));
	CHECK_STR(small, "current =");
	CHECK(small[10] == 'Z');
	CHECK(taskdesc_path(&d.name, small, 3) == 4 && !strcmp(small, "na"));
	/* A struct not from the parser: names not terminated, counts out of range -- bounded output. */
	struct taskdesc w;
	memset(&w, 'A', sizeof w);
	w.cur.form = TD_VAR;
	w.cur.nsteps = 1000;
	w.pid.n = -3;
	w.name.n = 99;
	w.tgid.n = 0;
	char big[8192];
	int n = taskdesc_format(&w, big, sizeof big);
	CHECK(n > 0 && n < (int)sizeof big && n == (int)strlen(big));
}

void test_taskdesc(void)
{
	test_shapes();
	test_lines();
	test_errors();
	test_limits();
	test_excerpts();
	test_round_trip();
	test_caps();
}
