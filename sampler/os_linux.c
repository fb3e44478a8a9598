/* SPDX-License-Identifier: MIT */
/* os_linux.c: a Linux guest's current task -- per-CPU offset and task_struct fields from BTF (libbpf). */
#include "guestos.h"
#include <bpf/btf.h>
#include <bpf/libbpf.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

/*
 * x86_64 Linux: the kernel GS base is the CPU's per-CPU base, and the per-CPU section is
 * zero-based, so a per-CPU variable's offset in BTF's ".data..percpu" DATASEC is its offset from
 * that base. The current task is the per-CPU `current_task` (<= 6.1) or the `current_task`
 * member of the per-CPU `pcpu_hot` (6.2 on). task_struct's pid, tgid and comm come from BTF too:
 * their offsets differ from build to build, so nothing here is hard-coded.
 */

static int quiet(enum libbpf_print_level level, const char *fmt, va_list ap)
{
	(void)level;
	(void)fmt;
	(void)ap;
	return 0;
}

long guestos_btf_member(const struct btf *b, __u32 id, const char *name, __s64 *size, __u32 *type, int depth)
{
	const struct btf_type *t = btf__type_by_id(b, id);
	while (t && (btf_is_mod(t) || btf_is_typedef(t))) t = btf__type_by_id(b, t->type);
	if (!t || !(btf_is_struct(t) || btf_is_union(t)) || depth > 8) return -1;
	const struct btf_member *m = btf_members(t);
	for (int i = 0; i < btf_vlen(t); i++) {
		const char *n = btf__name_by_offset(b, m[i].name_off);
		long bit = (long)btf_member_bit_offset(t, (__u32)i);
		if (n && *n) {
			if (!strcmp(n, name) && bit % 8 == 0) {
				*size = btf__resolve_size(b, m[i].type);
				if (type) *type = m[i].type;
				return bit / 8;
			}
		} else { /* anonymous struct or union: its members are ours */
			long inner = guestos_btf_member(b, m[i].type, name, size, type, depth + 1);
			if (inner >= 0) return bit / 8 + inner;
		}
	}
	return -1;
}

static long member_off(const struct btf *b, __u32 id, const char *name, __s64 *size, int depth)
{
	return guestos_btf_member(b, id, name, size, NULL, depth);
}

/* A per-CPU variable's offset and BTF type id from the ".data..percpu" DATASEC; -1 if absent. */
static long percpu_var(const struct btf *b, const char *name, __u32 *type)
{
	int id = btf__find_by_name_kind(b, ".data..percpu", BTF_KIND_DATASEC);
	if (id < 0) return -1;
	const struct btf_type *t = btf__type_by_id(b, (__u32)id);
	const struct btf_var_secinfo *v = btf_var_secinfos(t);
	for (int i = 0; i < btf_vlen(t); i++) {
		const struct btf_type *var = btf__type_by_id(b, v[i].type);
		const char *n = var && btf_is_var(var) ? btf__name_by_offset(b, var->name_off) : NULL;
		if (n && !strcmp(n, name)) { /* (a bad name offset gives NULL: found by fuzz_btf) */
			*type = var->type;
			return (long)v[i].offset;
		}
	}
	return -1;
}

static int off(struct guestos *os, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	vsnprintf(os->why, sizeof os->why, fmt, ap);
	va_end(ap);
	os->os = OS_NONE;
	return -1;
}

/* arm64's struct pt_regs: where regs[30] and sp lie from the `stackframe` record the exception
 * entry links into the frame-record chain (kernel_entry: `stp x29, x22, [sp, #S_STACKFRAME]`). */
static void ptregs_frame(struct guestos *os, const struct btf *b)
{
	os->pt_valid = 0;
	int id = btf__find_by_name_kind(b, "pt_regs", BTF_KIND_STRUCT);
	if (id < 0) return;
	__s64 fsz = 0, rsz = 0, ssz = 0;
	long frame = member_off(b, (__u32)id, "stackframe", &fsz, 0), regs = member_off(b, (__u32)id, "regs", &rsz, 0);
	long sp = member_off(b, (__u32)id, "sp", &ssz, 0);
	if (frame < 0 || regs < 0 || sp < 0 || fsz != 16 || rsz != 31 * 8 || ssz != 8) return; /* not arm64's */
	os->pt_lr = (int32_t)(regs + 30 * 8 - frame);
	os->pt_sp = (int32_t)(sp - frame);
	os->pt_valid = 1;
}

int guestos_linux_btf(struct guestos *os, const void *data, size_t len)
{
	libbpf_set_print(quiet);
	struct btf *b = btf__new(data, (__u32)len);
	if (!b || libbpf_get_error(b)) return off(os, "the image's BTF does not parse (libbpf)");
	int rc = -1;
	ptregs_frame(os, b);
	int task = btf__find_by_name_kind(b, "task_struct", BTF_KIND_STRUCT);
	if (task < 0) {
		off(os, "the image's BTF has no struct task_struct");
		goto out;
	}
	__s64 psz = 0, tsz = 0, csz = 0;
	long pid = member_off(b, (__u32)task, "pid", &psz, 0), tgid = member_off(b, (__u32)task, "tgid", &tsz, 0);
	long comm = member_off(b, (__u32)task, "comm", &csz, 0);
	if (pid < 0 || tgid < 0 || comm < 0 || psz != 4 || tsz != 4 || csz < 1) {
		off(os, "task_struct in BTF lacks pid, tgid or comm in a layout gdbsample knows");
		goto out;
	}
	__u32 vt = 0;
	long cur = percpu_var(b, "current_task", &vt);
	const char *how = "current_task";
	os->cur_sym = NULL;
	os->cur_how = CR_BASE;
	if (cur < 0 && os->pt_valid && percpu_var(b, "__entry_task", &vt) >= 0) {
		/* arm64: __switch_to keeps the per-CPU __entry_task equal to current in kernel and
		 * user mode alike (SP_EL0 holds current only in the kernel). Its address is not in
		 * BTF: the caller finds it in the entry code's text (a64_sp_el0_source). */
		if (btf__resolve_size(b, vt) != 8) {
			off(os, "the per-CPU __entry_task in BTF is not a pointer");
			goto out;
		}
		cur = 0;
		how = "__entry_task";
		os->cur_sym = "__entry_task";
		os->cur_how = CR_RAW;
	} else if (cur < 0) {
		long hot = percpu_var(b, "pcpu_hot", &vt);
		__s64 sz = 0;
		long in = hot < 0 ? -1 : member_off(b, vt, "current_task", &sz, 0);
		if (in < 0 || sz != 8) {
			off(os, "BTF names neither the per-CPU current_task (<= 6.1) nor pcpu_hot.current_task "
			    "(6.2 on): a kernel layout gdbsample does not know");
			goto out;
		}
		cur = hot + in;
		how = "pcpu_hot.current_task";
	} else if (btf__resolve_size(b, vt) != 8) {
		off(os, "the per-CPU current_task in BTF is not a pointer");
		goto out;
	}
	os->os = OS_LINUX;
	os->cur_off = (uint64_t)cur;
	os->pid_off = (uint32_t)pid;
	os->tgid_off = (uint32_t)tgid;
	os->comm_off = (uint32_t)comm;
	os->comm_len = csz > TASK_COMM_LEN ? TASK_COMM_LEN : (uint32_t)csz;
	if (os->cur_sym)
		snprintf(os->what, sizeof os->what, "linux: BTF, per-CPU %s, task_struct pid +%ld comm +%ld", how, pid,
			 comm);
	else
		snprintf(os->what, sizeof os->what, "linux: BTF, per-CPU %s at +0x%lx, task_struct pid +%ld comm +%ld",
			 how, cur, pid, comm);
	os->why[0] = 0;
	rc = 0;
out:
	btf__free(b);
	return rc;
}
