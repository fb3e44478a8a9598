/* SPDX-License-Identifier: MIT */
/* taskdesc.h: a task description (--tasks FILE) -- how any kernel with DWARF names its current task. */
#ifndef TASKDESC_H
#define TASKDESC_H
#include <stddef.h>
#include <stdint.h>

/*
 * The text (docs/tasks.md): one `key = value` per line, `#` starts a comment, blank lines ignored.
 *
 *   current = EXPR      the running task on a CPU (required)
 *   pid     = FIELD     its id, a 4-byte integer member of the task struct (required)
 *   tgid    = FIELD     its process id (optional: the pid)
 *   name    = FIELD     its name, a char array member (required)
 *
 * FIELD is a member path in the task struct: `pid`, `p.pid`, `comm` (dots step into nested
 * structs and unions; no pointers). EXPR is a gdb expression in one of four shapes:
 *
 *   VAR STEPS                          a global: `current_proc`, `cpus[$tp].proc`, `cpus[cpu].proc`
 *   ((TYPE *)$REG)->MEMBER STEPS       a register holding a per-CPU struct's address:
 *                                      `((struct cpu *)$gs_base)->current`
 *   (TYPE *)$REG                       a register holding the task itself: `(struct task_struct *)$tp`
 *   *(TYPE **)($REG + &VAR STEPS)      a per-CPU variable, the register holding the CPU's offset:
 *                                      `*(struct task_struct **)($TPIDR_EL1 + &__entry_task)`
 *
 * STEPS are `.member`, `->member` and `[INDEX]`; INDEX is a number, `cpu` (the vCPU's number, 0
 * first, as the stub lists them) or `$REG`. TYPE is `struct NAME`, `union NAME` or a typedef name.
 * $REG is a register as the stub's target.xml names it (`$tp`, `$sscratch`, `$TPIDR_EL1`) or
 * `$percpu`, the architecture's per-CPU base register (x86 gs_base, also read as k_gs_base in
 * user mode; aarch64 TPIDR_EL1; riscv64 tp). The parser checks the syntax only; what the names
 * mean -- and whether the expression reads a single pointer -- is for the DWARF resolution
 * (guestos_desc_dwarf in guestos.h).
 */

#define TD_NAME_MAX 64     /* an identifier, register name or type name, with its NUL */
#define TD_STEPS_MAX 8     /* steps in an expression or a field path */
#define TD_TEXT_MAX 65536  /* a description longer than this is refused */
#define TD_LINE_MAX 512    /* ...and so is a line longer than this */

enum { TD_VAR = 1, TD_REG_STRUCT, TD_REG_TASK, TD_REG_PLUS_VAR };  /* td_expr.form */
enum { TD_MEMBER = 1, TD_ARROW, TD_INDEX };                        /* td_step.kind */
enum { TD_IDX_NUM = 1, TD_IDX_CPU, TD_IDX_REG };                   /* td_step.idx */

struct td_step {
	int kind;                 /* TD_MEMBER `.name`, TD_ARROW `->name`, TD_INDEX `[...]` */
	char name[TD_NAME_MAX];   /* the member; for TD_IDX_REG the register (no `$`) */
	int idx;                  /* TD_INDEX: TD_IDX_* */
	uint64_t num;             /* TD_IDX_NUM: the index */
};

struct td_expr {
	int form;                 /* TD_* above */
	char var[TD_NAME_MAX];    /* TD_VAR, TD_REG_PLUS_VAR: the global */
	char reg[TD_NAME_MAX];    /* TD_REG_*: the register, without `$` ("percpu": the arch's) */
	char type[TD_NAME_MAX];   /* TD_REG_*: the cast's type as written: "struct cpu", "task_t" */
	int nsteps;               /* TD_REG_STRUCT: steps[0] is the `->MEMBER` after the cast */
	struct td_step steps[TD_STEPS_MAX];
};

struct td_path {
	int n;                                  /* members, outermost first (>= 1 when set) */
	char m[TD_STEPS_MAX][TD_NAME_MAX];
};

struct taskdesc {
	struct td_expr cur;
	struct td_path pid, tgid, name;         /* tgid.n == 0: not given */
	int line[4];                            /* the line of current, pid, tgid, name (0: absent),
						 * for the resolution's messages */
};

/* Parse a description of len bytes (not NUL-terminated; any bytes). 0 on success; -1 with one
 * line in err ("line 3: expected `]` after the index, found `)`"; excerpts of the input are
 * bounded and non-printable bytes shown as \xNN). */
int taskdesc_parse(const char *text, size_t len, struct taskdesc *d, char *err, size_t cap);
/* The canonical text of d's expression, as taskdesc_parse reads it back; the length written
 * (snprintf's: >= cap if cut). */
int taskdesc_expr(const struct td_expr *e, char *out, size_t cap);
/* ...of a field path ("p.pid"). */
int taskdesc_path(const struct td_path *p, char *out, size_t cap);
/* The whole description in canonical form (current, pid, tgid if given, name; one per line). */
int taskdesc_format(const struct taskdesc *d, char *out, size_t cap);

#endif
