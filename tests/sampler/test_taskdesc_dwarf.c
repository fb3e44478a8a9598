/* SPDX-License-Identifier: MIT */
/* test_taskdesc_dwarf.c: task descriptions resolved through DWARF -- every shape on an image of other kernels'
 * layouts (data/task_shapes.c), each refusal with its line, our kernel's built-in one, and task_where. */
#include "check.h"
#include "../../sampler/guestos.h"
#include "../../sampler/taskdesc.h"
#include "../../sampler/task.h"
#include "../../sampler/elfsec.h"
#include "../../sampler/files.h"
#include <gelf.h>
#include <stdlib.h>

static uint8_t *shapes_buf, *kern_buf;

static Elf *open_elf(const char *path, uint8_t **buf)
{
	size_t len;
	char err[256];
	elf_version(EV_CURRENT);
	if (file_read(path, 1u << 30, buf, &len, err, sizeof err) < 0) {
		fprintf(stderr, "test_taskdesc_dwarf: %s\n", err);
		return NULL;
	}
	return elf_memory((char *)*buf, len);
}

/* A symbol's address from the image's symbol table (what the DWARF must agree with). */
static uint64_t sym(Elf *e, const char *name)
{
	GElf_Sym y;
	return elfsec_symbol(e, name, &y) == 0 ? y.st_value : 0;
}

/* Parse and resolve text; 0 on success (os filled), -1 with err. */
static int resolve(Elf *e, const char *text, struct guestos *os, char *err, size_t cap)
{
	struct taskdesc d;
	memset(os, 0, sizeof *os);
	if (taskdesc_parse(text, strlen(text), &d, err, cap) < 0) return -2; /* the parser's, not ours */
	return guestos_desc_dwarf(os, e, &d, err, cap);
}

static void test_shapes(Elf *e)
{
	struct guestos os;
	char err[512];
	uint64_t cpus = sym(e, "cpus"), area = sym(e, "pcpu_area"), cur = sym(e, "current_proc");
	CHECK(cpus && area && cur);

	/* xv6: cpus[$tp].proc -- the array, its stride and length, struct proc's pid and name */
	CHECK(resolve(e, "current = cpus[$tp].proc\npid = pid\nname = name\n", &os, err, sizeof err) == 0);
	CHECK(os.os == OS_DESC && os.cur_how == CR_INDEX && !strcmp(os.cur_reg, "tp") && os.cur_linked);
	CHECK(os.cur_off == cpus + 8 && os.cur_stride == 16 && os.cur_count == 4);
	CHECK(os.pid_off == 36 && os.tgid_off == 36 && os.comm_off == 20 && os.comm_len == 16);
	CHECK_STR(os.what, "cpus[$tp].proc; struct proc pid +36 name +20");

	/* ...the same array by the vCPU's number: no register at all */
	CHECK(resolve(e, "current = cpus[cpu].proc\npid = pid\nname = name\n", &os, err, sizeof err) == 0);
	CHECK(os.cur_how == CR_NONE && os.cur_by_cpu && !os.cur_reg[0] && os.cur_off == cpus + 8 && os.cur_count == 4);
	/* ...one element, fixed */
	CHECK(resolve(e, "current = cpus[2].proc\npid = pid\nname = name\n", &os, err, sizeof err) == 0);
	CHECK(os.cur_how == CR_NONE && !os.cur_by_cpu && os.cur_off == cpus + 2 * 16 + 8);
	/* a uniprocessor's global */
	CHECK(resolve(e, "current = current_proc\npid = pid\nname = name\n", &os, err, sizeof err) == 0);
	CHECK(os.cur_how == CR_NONE && !os.cur_by_cpu && os.cur_off == cur && os.cur_count == 1);

	/* a register pointing at the per-CPU struct; the arch's own register: cur_reg stays empty */
	CHECK(resolve(e, "current = ((struct cpu *)$percpu)->proc\npid = pid\nname = name\n", &os, err, sizeof err) == 0);
	CHECK(os.cur_how == CR_BASE && !os.cur_reg[0] && os.cur_off == 8 && !os.cur_linked);
	CHECK(resolve(e, "current = ((struct cpu *)$sscratch)->proc\npid = pid\nname = name\n", &os, err, sizeof err) == 0);
	CHECK(os.cur_how == CR_BASE && !strcmp(os.cur_reg, "sscratch"));

	/* the register is the task (riscv64 Linux's tp) */
	CHECK(resolve(e, "current = (struct proc *)$tp\npid = pid\nname = name\n", &os, err, sizeof err) == 0);
	CHECK(os.cur_how == CR_TASK && !strcmp(os.cur_reg, "tp") && os.cur_off == 0 && os.pid_off == 36);

	/* a per-CPU variable at the register's offset, a typedef'd task with nested and anonymous
	 * members; a name longer than TASK_COMM_LEN is read to TASK_COMM_LEN */
	CHECK(resolve(e, "current = *(thread_t **)($TPIDR_EL1 + &pcpu_area.cur)\npid = ids.tid\ntgid = ids.ptid\n"
			 "name = comm\n", &os, err, sizeof err) == 0);
	CHECK(os.cur_how == CR_RAW && !strcmp(os.cur_reg, "TPIDR_EL1") && os.cur_off == area + 24 && os.cur_linked);
	CHECK(os.pid_off == 8 && os.tgid_off == 12 && os.comm_off == 16 && os.comm_len == TASK_COMM_LEN);
	CHECK(resolve(e, "current = *(struct thread **)($x + &pcpu_area.cur)\npid = ids.tid\nname = comm\n", &os, err,
		      sizeof err) == 0);
	/* the task struct only declared in the unit of the variable: completed from the one defining it */
	CHECK(resolve(e, "current = cpus2[cpu].cur\npid = id\nname = label\n", &os, err, sizeof err) == 0);
	CHECK(os.pid_off == 8 && os.comm_off == 12 && os.comm_len == 8);
	CHECK(resolve(e, "current = *(struct proc **)($x + &pcpu_area.procs[1])\npid = pid\nname = name\n", &os, err,
		      sizeof err) == 0 && os.cur_off == area + 32 + 8);

	/* ids of 8 (signed and not) and 2 bytes: the size and the signedness from DWARF */
	CHECK(resolve(e, "current = cpus[cpu].proc\npid = state\nname = name\n", &os, err, sizeof err) == 0);
	CHECK(os.pid_off == 0 && os.pid_size == 8 && !os.pid_unsigned && os.tgid_size == 8);
	CHECK(resolve(e, "current = *(thread_t **)($x + &pcpu_area.cur)\npid = uid\ntgid = sid\nname = comm\n", &os,
		      err, sizeof err) == 0);
	CHECK(os.pid_size == 8 && os.pid_unsigned && os.tgid_size == 2 && !os.tgid_unsigned && os.tgid_off == 48);
}

/* Each refusal: one line, naming the line of the key it is about and what was wrong. */
static void refused(Elf *e, const char *text, const char *want)
{
	struct guestos os;
	char err[512];
	int rc = resolve(e, text, &os, err, sizeof err);
	CHECK(rc == -1);
	if (rc == -1 && (!strstr(err, want) || strchr(err, '\n'))) {
		fprintf(stderr, "  for %s  got: %s\n", text, err);
		CHECK(0);
	}
}

static void test_refusals(Elf *e)
{
	const char *tail = "\npid = pid\nname = name\n";
	char t[256];
#define R(cur, want) (snprintf(t, sizeof t, "current = %s%s", cur, tail), refused(e, t, want))
	R("nosuch[cpu].proc", "line 1: `nosuch`: no such global variable");
	R("cpus[cpu].nosuch", "line 1: `struct cpu` has no member `nosuch`");
	R("cpus[4].proc", "line 1: index 4 is past the array's 4 elements");
	R("cpuptrs[cpu]->proc", "line 1: `->proc` reads a pointer before the task's");
	R("cpus[cpu].proc[0]", "is not an array");
	R("cpus[cpu][$tp].proc", "is not an array");
	R("multi.c[0][1].proc", "more than one dimension");
	R("not_a_pointer", "line 1: `not_a_pointer` is a `int`, not a pointer to the task");
	R("cpus[cpu]", "is a `struct cpu`, not a pointer to the task");
	R("use_twice", "is a `struct proc * *`, not a pointer to a struct");
	R("(struct nosuch *)$tp", "line 1: `struct nosuch`: no such type");
	R("(union cpu *)$tp", "`union cpu`: no such type");
	R("((struct cpu *)$tp)->intena", "not a pointer to the task");
	R("((struct cpu *)$tp)->proc[0]", "not an array");
	R("*(struct proc **)($x + &pcpu_area.cur)", "points to a `struct thread`, not a `struct proc`");
	R("*(struct proc **)($x + &pcpu_area.pad)", "not a pointer");
	R("*(struct proc **)($x + &pcpu_area.procs[$tp])", "for a global array");
#undef R
	refused(e, "current = *(thread_t **)($x + &pcpu_area.cur)\npid = weight\nname = comm\n",
		"line 2: pid `weight` is a `double`: it must be an integer of 1, 2, 4 or 8 bytes");
	refused(e, "current = cpus[cpu].proc\nname = name\n\npid = kstack\n", "line 4: pid `kstack`");
	refused(e, "current = cpus[cpu].proc\npid = pid\nname = kstack\n", "line 3: name `kstack` is a `void *`: it must be a char array");
	refused(e, "current = cpus[cpu].proc\npid = pid\ntgid = name\nname = name\n", "line 3: tgid `name`");
	refused(e, "current = cpus[cpu].proc\npid = pid\nname = nosuch\n", "line 3: `struct proc` has no member `nosuch`");
	refused(e, "current = *(thread_t **)($x + &pcpu_area.cur)\npid = bits\nname = comm\n", "bit-field");
	refused(e, "current = *(thread_t **)($x + &pcpu_area.cur)\npid = ids\nname = label\n", "pid `ids` is a `struct (anonymous)`");

	/* no DWARF at all: one line, and os untouched */
	struct guestos os = { .os = OS_LINUX };
	struct taskdesc d;
	char err[256];
	CHECK(taskdesc_parse("current = cpus[cpu].proc\npid = pid\nname = name\n", 46, &d, err, sizeof err) == 0);
	CHECK(guestos_desc_dwarf(&os, NULL, &d, err, sizeof err) == -1 && strstr(err, "no DWARF") && os.os == OS_LINUX);
}

/* Our kernel's layout, said once as data, resolves as the sampler always found it. */
static void test_builtin(void)
{
	Elf *e = open_elf(A64_KERNEL, &kern_buf);
	CHECK(e != NULL);
	if (!e) return;
	struct guestos os;
	memset(&os, 0, sizeof os);
	CHECK(guestos_testkernel_dwarf(&os, e) == 0);
	CHECK(os.os == OS_TESTKERNEL && os.cur_how == CR_BASE && !os.cur_reg[0] && os.pid_off == os.tgid_off);
	CHECK(os.comm_len == TASK_COMM_LEN && os.cur_off > 0 && os.cur_off < 4096);
	CHECK(!strncmp(os.what, "testkernel: DWARF, ((struct cpu *)$percpu)->current; struct task pid +", 70));
	elf_end(e);
	free(kern_buf);
	/* not our kernel: the reason says what is missing */
	memset(&os, 0, sizeof os);
	e = open_elf(TASK_SHAPES_ELF, &kern_buf);
	CHECK(e && guestos_testkernel_dwarf(&os, e) == -1 && os.os == OS_NONE);
	CHECK_STR(os.why, "not our test kernel: line 1: `struct cpu` has no member `current`");
	if (e) elf_end(e);
	free(kern_buf);
}

static void test_where(void)
{
	const uint64_t UP = 1ull << 63, K = 0xffff888000100000ull;
	struct guestos os = { .cur_how = CR_BASE, .cur_off = 0x40 };
	CHECK(task_where(&os, 0, K, 0, UP) == K + 0x40);
	CHECK(task_where(&os, 0, 0x7f0000001000ull, K, UP) == K + 0x40); /* the arch's alternative (k_gs_base) */
	snprintf(os.cur_reg, sizeof os.cur_reg, "sscratch");
	CHECK(task_where(&os, 0, 0x7f0000001000ull, K, UP) == 0);          /* a named register has none */
	os = (struct guestos){ .cur_how = CR_RAW, .cur_off = 0x1000 };
	CHECK(task_where(&os, 0, 0x30000, 0, UP) == 0x31000 && task_where(&os, 0, 0, 0, UP) == 0);
	os = (struct guestos){ .cur_how = CR_INDEX, .cur_off = 0x80001000, .cur_stride = 16, .cur_count = 4 };
	CHECK(task_where(&os, 0, 3, 0, 0x1000) == 0x80001030 && task_where(&os, 0, 4, 0, 0x1000) == 0);
	os = (struct guestos){ .cur_how = CR_NONE, .cur_off = 0x80001000, .cur_stride = 16, .cur_count = 2, .cur_by_cpu = 1 };
	CHECK(task_where(&os, 1, 0, 0, 0x1000) == 0x80001010 && task_where(&os, 2, 0, 0, 0x1000) == 0);
	os.cur_by_cpu = 0;
	CHECK(task_where(&os, 5, 0, 0, 0x1000) == 0x80001000);
	os = (struct guestos){ .cur_how = CR_TASK };
	CHECK(task_where(&os, 0, 0x80002000, 0, 0x1000) == 0x80002000 && task_where(&os, 0, 0x80002004, 0, 0x1000) == 0);
	CHECK(task_where(&os, 0, 0x800, 0, 0x1000) == 0);
}

void test_taskdesc_dwarf(void)
{
	Elf *e = open_elf(TASK_SHAPES_ELF, &shapes_buf);
	CHECK(e != NULL);
	if (e) {
		test_shapes(e);
		test_refusals(e);
		elf_end(e);
	}
	free(shapes_buf);
	shapes_buf = NULL;
	test_builtin();
	test_where();
}
