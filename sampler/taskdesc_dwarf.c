/* SPDX-License-Identifier: MIT */
/* taskdesc_dwarf.c: a task description (taskdesc.h) resolved to addresses and offsets through the image's DWARF (libdw). */
#include "guestos.h"
#include "taskdesc.h"
#include "dwtop.h"
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * Done once, at start, as a debugger would: the names the description gives are looked up in
 * the image's DWARF, every step of the expression moves a constant offset (a member, an array
 * element) or marks the one part that varies by CPU (an index by `cpu` or a register), and the
 * expression must end on the task pointer -- the only pointer a sample reads. What it cannot
 * resolve, or would resolve to a second read, is refused with the line it came from.
 */

struct rctx {
	Dwarf *dw;
	char *err;
	size_t cap;
	int line;
};

static int fail(struct rctx *c, const char *fmt, ...)
{
	int n = c->line ? snprintf(c->err, c->cap, "line %d: ", c->line) : 0;
	if (n < 0 || (size_t)n >= c->cap) n = 0;
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(c->err + n, c->cap - (size_t)n, fmt, ap);
	va_end(ap);
	return -1;
}

static int tag_of(Dwarf_Die *d)
{
	return dwarf_tag(d);
}

static int is_aggregate(Dwarf_Die *d)
{
	int t = tag_of(d);
	return t == DW_TAG_structure_type || t == DW_TAG_union_type || t == DW_TAG_class_type;
}

/* t's type with typedefs and qualifiers peeled off, in out; -1 if it has none. */
static int peel(Dwarf_Die *t, Dwarf_Die *out)
{
	return dwarf_peel_type(t, out) == 0 ? 0 : -1;
}

/* A type as C spells it, for messages: "struct cpu", "int", "char [16]", "struct proc *". */
static void type_name(Dwarf_Die *t, char *out, size_t cap, int depth)
{
	Dwarf_Die p, sub;
	Dwarf_Attribute a;
	const char *n = dwarf_diename(t);
	int tag = tag_of(t);
	if (depth > 4) { snprintf(out, cap, "..."); return; }
	if (tag == DW_TAG_structure_type || tag == DW_TAG_union_type || tag == DW_TAG_class_type) {
		snprintf(out, cap, "%s %s", tag == DW_TAG_union_type ? "union" : tag == DW_TAG_class_type ? "class" : "struct",
			 n ? n : "(anonymous)");
		return;
	}
	if (n) { snprintf(out, cap, "%s", n); return; }
	char inner[96] = "void";
	if (dwarf_attr(t, DW_AT_type, &a) && dwarf_formref_die(&a, &p)) type_name(&p, inner, sizeof inner, depth + 1);
	if (tag == DW_TAG_pointer_type) snprintf(out, cap, "%s *", inner);
	else if (tag == DW_TAG_array_type) {
		Dwarf_Word cnt = 0;
		if (dwarf_child(t, &sub) == 0) {
			if (dwarf_attr(&sub, DW_AT_count, &a) && dwarf_formudata(&a, &cnt) == 0) {}
			else if (dwarf_attr(&sub, DW_AT_upper_bound, &a) && dwarf_formudata(&a, &cnt) == 0) cnt++;
		}
		snprintf(out, cap, "%s [%" PRIu64 "]", inner, (uint64_t)cnt);
	} else if (tag == DW_TAG_const_type) snprintf(out, cap, "const %s", inner);
	else if (tag == DW_TAG_volatile_type) snprintf(out, cap, "volatile %s", inner);
	else snprintf(out, cap, "%s", inner);
}

/* A DIE's name, following DW_AT_specification (a C definition names its extern declaration). */
static const char *die_name(Dwarf_Die *d)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(d, DW_AT_name, &a) ? dwarf_formstring(&a) : NULL;
}

static int die_type(Dwarf_Die *d, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	return dwarf_attr_integrate(d, DW_AT_type, &a) && dwarf_formref_die(&a, out) ? 0 : -1;
}

struct type_q {
	int tag;          /* DW_TAG_structure_type, DW_TAG_union_type, or 0: a typedef or any named type */
	const char *name;
	Dwarf_Die found;
	int typedef_seen;
};

static int type_each(Dwarf_Die *d, void *arg)
{
	struct type_q *q = arg;
	const char *n = dwarf_diename(d);
	if (!n || strcmp(n, q->name)) return 0;
	int t = tag_of(d);
	if (q->tag) {
		if (t != q->tag || dwarf_hasattr(d, DW_AT_declaration)) return 0;
	} else if (t == DW_TAG_typedef) {
		Dwarf_Die p;
		if (peel(d, &p) < 0 || dwarf_hasattr(&p, DW_AT_declaration)) return 0; /* an opaque typedef */
	} else if (!is_aggregate(d) || dwarf_hasattr(d, DW_AT_declaration)) {
		return 0;
	}
	q->found = *d;
	return 1;
}

/* The type a cast names ("struct cpu", "union u", "task_t"), peeled to its struct or union. */
static int find_type(struct rctx *c, const char *text, Dwarf_Die *out)
{
	struct type_q q = { 0, text, { 0 }, 0 };
	if (!strncmp(text, "struct ", 7)) { q.tag = DW_TAG_structure_type; q.name = text + 7; }
	else if (!strncmp(text, "union ", 6)) { q.tag = DW_TAG_union_type; q.name = text + 6; }
	if (!dw_each_top(c->dw, type_each, &q))
		return fail(c, "`%s`: no such type in the image's DWARF (or only declared there)", text);
	if (peel(&q.found, out) < 0 || !is_aggregate(out))
		return fail(c, "`%s` is not a struct or union", text);
	return 0;
}

/* A struct only declared where it is used (`struct task;` in a header) completed from the unit
 * that defines it. */
static int complete(struct rctx *c, Dwarf_Die *t)
{
	const char *n = dwarf_diename(t);
	if (!dwarf_hasattr(t, DW_AT_declaration)) return 0;
	if (!n) return fail(c, "an anonymous struct is only declared in the image's DWARF");
	struct type_q q = { tag_of(t), n, { 0 }, 0 };
	if (!dw_each_top(c->dw, type_each, &q)) return fail(c, "`%s` is only declared in the image's DWARF, never defined", n);
	*t = q.found;
	return 0;
}

struct var_q {
	const char *name;
	int n;               /* definitions at distinct addresses */
	uint64_t addr;
	Dwarf_Die die;
	int declared;        /* a declaration without a location was seen */
};

static int var_each(Dwarf_Die *d, void *arg)
{
	struct var_q *q = arg;
	if (tag_of(d) != DW_TAG_variable) return 0;
	const char *n = die_name(d);
	if (!n || strcmp(n, q->name)) return 0;
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;
	if (!dwarf_attr(d, DW_AT_location, &a) || dwarf_getlocation(&a, &ops, &nops) != 0 || nops != 1 ||
	    ops[0].atom != DW_OP_addr) {
		q->declared = 1;
		return 0;
	}
	if (q->n && ops[0].number == q->addr) return 0;
	if (!q->n) {
		q->addr = ops[0].number;
		q->die = *d;
	}
	q->n++;
	return 0;
}

/* A global variable: its link-time address and its type. */
static int find_var(struct rctx *c, const char *name, uint64_t *addr, Dwarf_Die *type)
{
	struct var_q q = { name, 0, 0, { 0 }, 0 };
	dw_each_top(c->dw, var_each, &q);
	if (!q.n)
		return fail(c, q.declared ? "`%s` has no fixed address in the image's DWARF (not a global, or "
				"optimised out)" : "`%s`: no such global variable in the image's DWARF", name);
	if (q.n > 1)
		return fail(c, "`%s` names %d variables at different addresses (a static in several files)", name, q.n);
	if (die_type(&q.die, type) < 0) return fail(c, "`%s` has no type in the image's DWARF", name);
	*addr = q.addr;
	return 0;
}

/* Member `name` of struct/union st, looking through anonymous members: offset and type. 0 found,
 * -1 absent, -2 a bit-field. */
static int member(Dwarf_Die *st, const char *name, uint64_t *off, Dwarf_Die *type, int depth)
{
	Dwarf_Die m;
	if (depth > 8 || dwarf_child(st, &m) != 0) return -1;
	do {
		if (tag_of(&m) != DW_TAG_member) continue;
		Dwarf_Attribute a;
		Dwarf_Word mo = 0;
		if (dwarf_attr(&m, DW_AT_data_member_location, &a) && dwarf_formudata(&a, &mo) != 0) {
			Dwarf_Op *ops; /* DWARF 2's form: DW_OP_plus_uconst N */
			size_t nops;
			if (dwarf_getlocation(&a, &ops, &nops) != 0 || nops != 1 || ops[0].atom != DW_OP_plus_uconst)
				continue;
			mo = ops[0].number;
		}
		Dwarf_Die t, pt;
		if (!dwarf_attr(&m, DW_AT_type, &a) || !dwarf_formref_die(&a, &t)) continue;
		const char *n = dwarf_diename(&m);
		if (n && !strcmp(n, name)) {
			if (dwarf_hasattr(&m, DW_AT_bit_size) || dwarf_hasattr(&m, DW_AT_data_bit_offset)) return -2;
			*off = mo;
			*type = t;
			return 0;
		}
		uint64_t o2;
		if (!n && peel(&t, &pt) == 0 && is_aggregate(&pt) && member(&pt, name, &o2, type, depth + 1) == 0) {
			*off = mo + o2;
			return 0;
		}
	} while (dwarf_siblingof(&m, &m) == 0);
	return -1;
}

/* Step into member `name` of *t (a struct or union once peeled). */
static int step_member(struct rctx *c, Dwarf_Die *t, const char *name, uint64_t *off)
{
	Dwarf_Die p, mt;
	char tn[128];
	if (peel(t, &p) < 0 || !is_aggregate(&p)) {
		type_name(t, tn, sizeof tn, 0);
		return fail(c, "`.%s`: `%s` is not a struct or union", name, tn);
	}
	if (complete(c, &p) < 0) return -1;
	uint64_t mo;
	int r = member(&p, name, &mo, &mt, 0);
	type_name(&p, tn, sizeof tn, 0);
	if (r == -2) return fail(c, "`%s.%s` is a bit-field", tn, name);
	if (r < 0) return fail(c, "`%s` has no member `%s`", tn, name);
	*off += mo;
	*t = mt;
	return 0;
}

/* An array's element type, stride and length (one dimension, bounded). */
static int array_info(struct rctx *c, Dwarf_Die *arr, Dwarf_Die *elem, uint64_t *stride, uint64_t *count)
{
	Dwarf_Die sub, next;
	Dwarf_Attribute a;
	Dwarf_Word n = 0, size;
	char tn[128];
	type_name(arr, tn, sizeof tn, 0);
	if (die_type(arr, elem) < 0 || dwarf_child(arr, &sub) != 0) return fail(c, "`%s`: an array without an element type", tn);
	next = sub;
	if (dwarf_siblingof(&next, &next) == 0 && tag_of(&next) == DW_TAG_subrange_type)
		return fail(c, "`%s`: arrays of more than one dimension are not supported", tn);
	if (dwarf_attr(&sub, DW_AT_count, &a) && dwarf_formudata(&a, &n) == 0) {}
	else if (dwarf_attr(&sub, DW_AT_upper_bound, &a) && dwarf_formudata(&a, &n) == 0) n++;
	else return fail(c, "`%s`: the array's length is not in the DWARF", tn);
	if (dwarf_aggregate_size(elem, &size) != 0 || !size) return fail(c, "`%s`: its elements have no size", tn);
	*stride = size;
	*count = n;
	return 0;
}

/* Where the walk of an expression stands. */
struct walk {
	Dwarf_Die type;   /* the type at the current place */
	uint64_t off;     /* its constant address (or offset from the register's) */
	int var;          /* 0, TD_IDX_CPU or TD_IDX_REG: the one part that varies by CPU */
	char reg[TD_NAME_MAX];
	uint64_t stride, count;
};

static int walk_steps(struct rctx *c, struct walk *w, const struct td_step *s, int n, int var_ok)
{
	for (int k = 0; k < n; k++) {
		if (s[k].kind == TD_MEMBER) {
			if (step_member(c, &w->type, s[k].name, &w->off) < 0) return -1;
			continue;
		}
		if (s[k].kind == TD_ARROW)
			return fail(c, "`->%s` reads a pointer before the task's: a description may read one pointer only "
				    "(the task's; use `.` into a struct, `[i]` into an array)", s[k].name);
		Dwarf_Die p, elem;
		char tn[128];
		if (peel(&w->type, &p) < 0 || tag_of(&p) != DW_TAG_array_type) {
			type_name(&w->type, tn, sizeof tn, 0);
			return fail(c, "`[...]`: `%s` is not an array (indexing a pointer would read a second pointer)", tn);
		}
		uint64_t stride, count;
		if (array_info(c, &p, &elem, &stride, &count) < 0) return -1;
		if (s[k].idx == TD_IDX_NUM) {
			if (s[k].num >= count)
				return fail(c, "index %" PRIu64 " is past the array's %" PRIu64 " elements", s[k].num, count);
			w->off += s[k].num * stride;
		} else {
			if (!var_ok) return fail(c, "an index by `cpu` or a register is for a global array (`cpus[cpu]`), "
						  "not inside a register's struct");
			if (w->var) return fail(c, "only one index may vary by CPU");
			w->var = s[k].idx;
			snprintf(w->reg, sizeof w->reg, "%s", s[k].idx == TD_IDX_REG ? s[k].name : "");
			w->stride = stride;
			w->count = count;
		}
		w->type = elem;
	}
	return 0;
}

/* The walk must end on a pointer to a struct or union: the task's type. */
static int task_type_at(struct rctx *c, Dwarf_Die *t, Dwarf_Die *task, const char *expr)
{
	Dwarf_Die p, q;
	char tn[128];
	type_name(t, tn, sizeof tn, 0);
	if (peel(t, &p) < 0 || tag_of(&p) != DW_TAG_pointer_type)
		return fail(c, "`%s` is a `%s`, not a pointer to the task", expr, tn);
	if (die_type(&p, &q) < 0 || peel(&q, task) < 0 || !is_aggregate(task))
		return fail(c, "`%s` is a `%s`, not a pointer to a struct", expr, tn);
	return complete(c, task);
}

/* A field path in the task struct: its offset and type. */
static int field(struct rctx *c, Dwarf_Die *task, const struct td_path *p, uint64_t *off, Dwarf_Die *type)
{
	*type = *task;
	*off = 0;
	for (int k = 0; k < p->n; k++)
		if (step_member(c, type, p->m[k], off) < 0) return -1;
	return 0;
}

/* A pid or tgid field: an integer (or enum) of 1, 2, 4 or 8 bytes -- Rust kernels' ids are often
 * a u64 or usize -- at *off; *size its bytes, *is_unsigned from its DWARF encoding. */
static int int_field(struct rctx *c, Dwarf_Die *task, const struct td_path *p, const char *key, uint32_t *off,
		     uint8_t *size, uint8_t *is_unsigned)
{
	uint64_t o;
	Dwarf_Die t, b;
	Dwarf_Word sz = 0, enc = DW_ATE_signed;
	Dwarf_Attribute a;
	char path[256], tn[128];
	if (field(c, task, p, &o, &t) < 0) return -1;
	taskdesc_path(p, path, sizeof path);
	type_name(&t, tn, sizeof tn, 0);
	int base = peel(&t, &b) == 0 && tag_of(&b) == DW_TAG_base_type;
	if (base && dwarf_attr(&b, DW_AT_encoding, &a)) dwarf_formudata(&a, &enc);
	int integer = base ? enc == DW_ATE_signed || enc == DW_ATE_unsigned || enc == DW_ATE_signed_char ||
				     enc == DW_ATE_unsigned_char
			   : tag_of(&b) == DW_TAG_enumeration_type;
	if (!integer || dwarf_aggregate_size(&b, &sz) != 0 || (sz != 1 && sz != 2 && sz != 4 && sz != 8))
		return fail(c, "%s `%s` is a `%s`: it must be an integer of 1, 2, 4 or 8 bytes", key, path, tn);
	if (o > UINT32_MAX - 8) return fail(c, "%s `%s` is too far into the task struct", key, path);
	*off = (uint32_t)o;
	*size = (uint8_t)sz;
	*is_unsigned = enc == DW_ATE_unsigned || enc == DW_ATE_unsigned_char;
	return 0;
}

static int name_field(struct rctx *c, Dwarf_Die *task, const struct td_path *p, uint32_t *off, uint32_t *len)
{
	uint64_t o, stride, count;
	Dwarf_Die t, a, elem, eb;
	Dwarf_Word esz = 0;
	char path[256], tn[128];
	if (field(c, task, p, &o, &t) < 0) return -1;
	taskdesc_path(p, path, sizeof path);
	type_name(&t, tn, sizeof tn, 0);
	if (peel(&t, &a) < 0 || tag_of(&a) != DW_TAG_array_type || array_info(c, &a, &elem, &stride, &count) < 0 ||
	    peel(&elem, &eb) < 0 || tag_of(&eb) != DW_TAG_base_type || dwarf_aggregate_size(&eb, &esz) != 0 || esz != 1 ||
	    !count)
		return fail(c, "name `%s` is a `%s`: it must be a char array in the task struct (a `char *` "
			    "would be a second read)", path, tn);
	if (o > UINT32_MAX - TASK_COMM_LEN) return fail(c, "name `%s` is too far into the task struct", path);
	*off = (uint32_t)o;
	*len = count > TASK_COMM_LEN ? TASK_COMM_LEN : (uint32_t)count;
	return 0;
}

/* The expression: the task pointer's place, and the task's type. */
static int resolve_cur(struct rctx *c, const struct td_expr *e, struct guestos *n, Dwarf_Die *task)
{
	struct walk w;
	char ex[512];
	memset(&w, 0, sizeof w);
	taskdesc_expr(e, ex, sizeof ex);
	const char *reg = !strcmp(e->reg, "percpu") ? "" : e->reg;
	switch (e->form) {
	case TD_VAR: {
		if (find_var(c, e->var, &w.off, &w.type) < 0 || walk_steps(c, &w, e->steps, e->nsteps, 1) < 0 ||
		    task_type_at(c, &w.type, task, ex) < 0)
			return -1;
		n->cur_linked = 1;
		n->cur_off = w.off;
		n->cur_stride = w.stride;
		n->cur_count = w.var ? w.count : 1;
		if (w.var == TD_IDX_REG) {
			n->cur_how = CR_INDEX;
			snprintf(n->cur_reg, sizeof n->cur_reg, "%s", !strcmp(w.reg, "percpu") ? "" : w.reg);
		} else {
			n->cur_how = CR_NONE;
			n->cur_by_cpu = w.var == TD_IDX_CPU;
		}
		return 0;
	}
	case TD_REG_STRUCT:
		if (e->nsteps < 1 || e->steps[0].kind != TD_ARROW) return fail(c, "`%s`: expected `->member`", ex);
		if (find_type(c, e->type, &w.type) < 0) return -1;
		if (step_member(c, &w.type, e->steps[0].name, &w.off) < 0 ||
		    walk_steps(c, &w, e->steps + 1, e->nsteps - 1, 0) < 0 || task_type_at(c, &w.type, task, ex) < 0)
			return -1;
		n->cur_how = CR_BASE;
		n->cur_off = w.off;
		snprintf(n->cur_reg, sizeof n->cur_reg, "%s", reg);
		return 0;
	case TD_REG_TASK:
		if (find_type(c, e->type, task) < 0) return -1;
		n->cur_how = CR_TASK;
		n->cur_off = 0;
		snprintf(n->cur_reg, sizeof n->cur_reg, "%s", reg);
		return 0;
	case TD_REG_PLUS_VAR: {
		Dwarf_Die p, q, pt;
		if (find_type(c, e->type, task) < 0 || find_var(c, e->var, &w.off, &w.type) < 0 ||
		    walk_steps(c, &w, e->steps, e->nsteps, 0) < 0)
			return -1;
		char tn[128], want[128];
		type_name(&w.type, tn, sizeof tn, 0);
		type_name(task, want, sizeof want, 0);
		Dwarf_Word size = 0;
		if (peel(&w.type, &p) < 0) return fail(c, "`%s`: the variable has no type", ex);
		if (tag_of(&p) == DW_TAG_pointer_type) {
			if (die_type(&p, &q) < 0 || peel(&q, &pt) < 0 || !is_aggregate(&pt))
				return fail(c, "`%s` is a `%s`, not a pointer to `%s`", ex, tn, want);
			char got[128];
			type_name(&pt, got, sizeof got, 0);
			if (strcmp(got, want)) return fail(c, "`%s` points to a `%s`, not a `%s`", ex, got, want);
		} else if (tag_of(&p) != DW_TAG_base_type || dwarf_aggregate_size(&p, &size) != 0 || size != 8) {
			return fail(c, "`%s` is a `%s`, not a pointer", ex, tn);
		}
		n->cur_how = CR_RAW;
		n->cur_off = w.off;
		n->cur_linked = 1;
		snprintf(n->cur_reg, sizeof n->cur_reg, "%s", reg);
		return 0;
	}
	}
	return fail(c, "unknown expression shape");
}

int guestos_desc_dwarf(struct guestos *os, Elf *elf, const struct taskdesc *d, char *err, size_t cap)
{
	struct rctx c = { NULL, err, cap, 0 };
	struct guestos n;
	Dwarf_Die task;
	memset(&n, 0, sizeof n);
	c.dw = elf ? dwarf_begin_elf(elf, DWARF_C_READ, NULL) : NULL;
	if (!c.dw) return fail(&c, "the image has no DWARF (build it with -g) to resolve the task description in");
	int rc = -1;
	c.line = d->line[0];
	if (resolve_cur(&c, &d->cur, &n, &task) < 0) goto out;
	c.line = d->line[1];
	if (int_field(&c, &task, &d->pid, "pid", &n.pid_off, &n.pid_size, &n.pid_unsigned) < 0) goto out;
	n.tgid_off = n.pid_off;
	n.tgid_size = n.pid_size;
	n.tgid_unsigned = n.pid_unsigned;
	c.line = d->line[2];
	if (d->tgid.n && int_field(&c, &task, &d->tgid, "tgid", &n.tgid_off, &n.tgid_size, &n.tgid_unsigned) < 0)
		goto out;
	c.line = d->line[3];
	if (name_field(&c, &task, &d->name, &n.comm_off, &n.comm_len) < 0) goto out;
	c.line = 0;
	char ex[256], tn[128], pid[128], name[128];
	taskdesc_expr(&d->cur, ex, sizeof ex);
	type_name(&task, tn, sizeof tn, 0);
	taskdesc_path(&d->pid, pid, sizeof pid);
	taskdesc_path(&d->name, name, sizeof name);
	snprintf(n.what, sizeof n.what, "%s; %s %s +%u %s +%u", ex, tn, pid, n.pid_off, name, n.comm_off);
	n.os = OS_DESC;
	n.pt_valid = os->pt_valid; /* the exception-frame facts are not the description's */
	n.pt_lr = os->pt_lr;
	n.pt_sp = os->pt_sp;
	*os = n;
	rc = 0;
out:
	dwarf_end(c.dw);
	return rc;
}
