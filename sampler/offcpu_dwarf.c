/* SPDX-License-Identifier: MIT */
/* offcpu_dwarf.c: our test kernel's task table for record --off-cpu, found through its DWARF (libdw) and its ELF symbols. */
#include "offcpu_dwarf.h"
#include "dwtop.h"
#include "elfsec.h"
#include <dwarf.h>
#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * The names are the kernel's (kernel/sched.h): `struct task tasks[MAX_TASKS]` with pid, name,
 * state (enum task_state), kind (enum task_kind), rsp (the saved stack pointer), stack and
 * stack_size; TASK_RUNNING, TASK_RUNNABLE, TASK_SLEEPING, TASK_BLOCKED and KIND_IDLE; and
 * swtch_resume_pc, a .rodata word holding where a switched-out task resumes (switch.S). Every
 * offset, size and value comes from the image, none is written here.
 */
struct found {
	const char *name;
	int tag;
	Dwarf_Die die;
	int ok;
};

static int match_top(Dwarf_Die *d, void *arg)
{
	struct found *q = arg;
	const char *n = dwarf_diename(d);
	if (dwarf_tag(d) != q->tag || !n || strcmp(n, q->name) || dwarf_hasattr(d, DW_AT_declaration) ||
	    (q->tag == DW_TAG_variable && !dwarf_hasattr(d, DW_AT_location)))
		return 0;
	q->die = *d;
	return q->ok = 1;
}

/* The first top-level DIE of tag and name (a defining one: no DW_AT_declaration) in any unit. */
static int find_top(Dwarf *dw, struct found *q)
{
	return dw_each_top(dw, match_top, q);
}

static int type_of(Dwarf_Die *d, Dwarf_Die *out)
{
	Dwarf_Attribute a;
	Dwarf_Die t;
	return dwarf_attr_integrate(d, DW_AT_type, &a) && dwarf_formref_die(&a, &t) && dwarf_peel_type(&t, out) == 0 ? 0
																   : -1;
}

/* A member of struct st: its offset and byte size (an array's: its element count in *count). */
static int member(Dwarf_Die *st, const char *name, uint32_t *off, uint32_t *size, uint32_t *count)
{
	Dwarf_Die m;
	if (dwarf_child(st, &m) != 0) return -1;
	do {
		const char *n = dwarf_diename(&m);
		Dwarf_Attribute a;
		Dwarf_Word o;
		Dwarf_Die t;
		if (dwarf_tag(&m) != DW_TAG_member || !n || strcmp(n, name)) continue;
		if (!dwarf_attr(&m, DW_AT_data_member_location, &a) || dwarf_formudata(&a, &o) != 0 || type_of(&m, &t) < 0)
			return -1;
		*off = (uint32_t)o;
		int sz = dwarf_bytesize(&t);
		if (dwarf_tag(&t) == DW_TAG_array_type) {
			Dwarf_Die e;
			if (type_of(&t, &e) < 0 || dwarf_bytesize(&e) != 1) return -1;
			sz = dwarf_aggregate_size(&t, &o) == 0 ? (int)o : -1;
		}
		if (sz <= 0) return -1;
		*size = (uint32_t)sz;
		if (count) *count = (uint32_t)sz;
		return 0;
	} while (dwarf_siblingof(&m, &m) == 0);
	return -1;
}

/* The value of enumerator name in enum type e; -1 if absent. */
static int enumerator(Dwarf_Die *e, const char *name, int64_t *val)
{
	Dwarf_Die c;
	if (dwarf_child(e, &c) != 0) return -1;
	do {
		const char *n = dwarf_diename(&c);
		Dwarf_Attribute a;
		Dwarf_Sword v;
		if (dwarf_tag(&c) == DW_TAG_enumerator && n && !strcmp(n, name) && dwarf_attr(&c, DW_AT_const_value, &a) &&
		    dwarf_formsdata(&a, &v) == 0) {
			*val = v;
			return 0;
		}
	} while (dwarf_siblingof(&c, &c) == 0);
	return -1;
}

/* The 8-byte value of the data symbol name (its bytes in the ELF file). */
static int symbol_word(Elf *elf, const char *name, uint64_t *val)
{
	GElf_Sym s;
	GElf_Shdr dh;
	Elf_Scn *ds = elfsec_symbol(elf, name, &s) == 0 && s.st_size == 8 ? elf_getscn(elf, s.st_shndx) : NULL;
	Elf_Data *dd = ds && gelf_getshdr(ds, &dh) ? elf_getdata(ds, NULL) : NULL;
	if (!dd || dh.sh_type != SHT_PROGBITS || s.st_value < dh.sh_addr || s.st_value + 8 > dh.sh_addr + dd->d_size)
		return -1;
	const uint8_t *p = (const uint8_t *)dd->d_buf + (s.st_value - dh.sh_addr);
	uint64_t v = 0;
	for (int k = 7; k >= 0; k--) v = v << 8 | p[k]; /* little-endian: all three arches */
	*val = v;
	return 0;
}

int offcpu_testkernel_layout(Elf *elf, struct offcpu_layout *L, char *err, size_t cap)
{
	memset(L, 0, sizeof *L);
	L->idle_kind = -1;
	Dwarf *dw = dwarf_begin_elf(elf, DWARF_C_READ, NULL);
	if (!dw) return offcpu_fail(err, cap, "the image has no DWARF");
	int rc = -1;
	struct found tasks = { "tasks", DW_TAG_variable, { 0 }, 0 }, st = { "task_state", DW_TAG_enumeration_type, { 0 }, 0 },
		     kind = { "task_kind", DW_TAG_enumeration_type, { 0 }, 0 };
	Dwarf_Die arr, elem;
	Dwarf_Attribute a;
	Dwarf_Op *ops;
	size_t nops;
	Dwarf_Word total;
	uint32_t u, pid_size, sp_size, lo_size, sz_size;
	if (!find_top(dw, &tasks) || type_of(&tasks.die, &arr) < 0 || dwarf_tag(&arr) != DW_TAG_array_type ||
	    type_of(&arr, &elem) < 0 || dwarf_tag(&elem) != DW_TAG_structure_type) {
		offcpu_fail(err, cap, "no task table (an array `tasks` of struct task) in its DWARF");
		goto out;
	}
	if (!dwarf_attr(&tasks.die, DW_AT_location, &a) || dwarf_getlocation(&a, &ops, &nops) != 0 || nops != 1 ||
	    ops[0].atom != DW_OP_addr) {
		offcpu_fail(err, cap, "the task table `tasks` has no fixed address in its DWARF");
		goto out;
	}
	L->table = ops[0].number;
	int stride = dwarf_bytesize(&elem);
	if (stride <= 0 || dwarf_aggregate_size(&arr, &total) != 0 || total % (Dwarf_Word)stride) {
		offcpu_fail(err, cap, "the task table's size is not in its DWARF");
		goto out;
	}
	L->stride = (uint32_t)stride;
	L->count = (uint32_t)(total / (Dwarf_Word)stride);
	if (member(&elem, "pid", &L->pid_off, &pid_size, NULL) < 0 || pid_size != 4 ||
	    member(&elem, "name", &L->name_off, &u, &L->name_len) < 0 ||
	    member(&elem, "state", &L->state_off, &L->state_size, NULL) < 0 ||
	    member(&elem, "kind", &L->kind_off, &L->kind_size, NULL) < 0 ||
	    member(&elem, "rsp", &L->sp_off, &sp_size, NULL) < 0 || sp_size != 8 ||
	    member(&elem, "stack", &L->stack_off, &lo_size, NULL) < 0 || lo_size != 8 ||
	    member(&elem, "stack_size", &L->stack_size_off, &sz_size, NULL) < 0 || sz_size != 8 ||
	    L->state_size > 8 || L->kind_size > 8) {
		offcpu_fail(err, cap, "struct task lacks pid, name, state, kind, rsp, stack or stack_size as the test kernel has them");
		goto out;
	}
	static const struct { const char *name; int cls; } states[] = {
		{ "TASK_RUNNING", OC_RUNNING }, { "TASK_RUNNABLE", OC_RUNNABLE },
		{ "TASK_SLEEPING", OC_BLOCKED }, { "TASK_BLOCKED", OC_BLOCKED },
	};
	if (!find_top(dw, &st) || !find_top(dw, &kind)) {
		offcpu_fail(err, cap, "no enum task_state or task_kind in its DWARF");
		goto out;
	}
	for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
		int64_t v;
		if (enumerator(&st.die, states[i].name, &v) < 0 || v < 0 || v >= (int64_t)sizeof L->cls) {
			offcpu_fail(err, cap, "enum task_state has no %s below 16", states[i].name);
			goto out;
		}
		L->cls[v] = (uint8_t)states[i].cls;
	}
	if (enumerator(&kind.die, "KIND_IDLE", &L->idle_kind) < 0) {
		offcpu_fail(err, cap, "enum task_kind has no KIND_IDLE");
		goto out;
	}
	if (symbol_word(elf, "swtch_resume_pc", &L->resume_pc) < 0) {
		offcpu_fail(err, cap, "no swtch_resume_pc (where a switched-out task resumes) in its symbols");
		goto out;
	}
	rc = 0;
out:
	dwarf_end(dw);
	return rc;
}
