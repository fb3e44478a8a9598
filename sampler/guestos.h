/* SPDX-License-Identifier: MIT */
/* guestos.h: which task is current on a vCPU -- each guest OS's facts behind one small interface. */
#ifndef GUESTOS_H
#define GUESTOS_H
#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Every kernel keeps a pointer to the running task where a CPU can find it: at an offset from a
 * per-CPU base register (x86 Linux and our kernel: gs_base, tp), in a per-CPU variable whose
 * CPU offset a register holds (arm64 Linux: TPIDR_EL1), in a global array indexed by the CPU
 * (xv6's cpus[]), or in a register itself (riscv64 Linux: tp). The task's identity sits at fixed
 * offsets in its struct. An OS file finds those places in the image (Linux: BTF through libbpf;
 * any kernel with DWARF, ours included: a task description, taskdesc.h, resolved through libdw);
 * task.c and plan.c read them the same way for all. No hook in the guest.
 */

enum { OS_NONE = 0, OS_LINUX = 1, OS_TESTKERNEL = 2, OS_DESC = 3, OS_AUTO = 255 }; /* the capture's task_os */
extern const char *const guestos_names[4];

/* How the task pointer's address follows from cur_off and the register (guestos.cur_how). */
enum {
	CR_BASE = 0,  /* register (a kernel pointer: task_pcpu_base) + cur_off */
	CR_RAW,       /* register (any value: a per-CPU offset) + cur_off */
	CR_INDEX,     /* cur_off + register * cur_stride, the register < cur_count */
	CR_NONE,      /* cur_off (+ vCPU number * cur_stride with cur_by_cpu, below cur_count): no register */
	CR_TASK,      /* the register is the task pointer itself (cur_off 0) */
};

#define TASK_COMM_LEN 16

struct guestos {
	int os;                  /* OS_*: OS_NONE = attribution off (why says why) */
	char what[200];          /* where the facts came from: "BTF, 6.1 layout (current_task)" */
	int cur_how;             /* CR_*: where the current-task pointer is */
	uint64_t cur_off;        /* ...at the per-CPU base + cur_off (CR_BASE; see CR_*) */
	char cur_reg[32];        /* the register a description names ("": the arch's per-CPU base) */
	uint64_t cur_stride;     /* CR_INDEX, CR_NONE with cur_by_cpu: bytes from one CPU's to the next */
	uint64_t cur_count;      /* ...the CPUs the array holds */
	int cur_by_cpu;          /* CR_NONE: indexed by the vCPU's number */
	int cur_linked;          /* cur_off holds a link-time address: the KASLR slide is added */
	uint32_t pid_off;        /* pid in the task struct: an integer of pid_size bytes */
	uint32_t tgid_off;       /* thread-group id (== pid_off where the OS has none), tgid_size */
	uint8_t pid_size;        /* 1, 2, 4 or 8 (0: 4, Linux's and our kernel's); a value outside
				  * 0..INT32_MAX is no pid: the sample is unattributed */
	uint8_t tgid_size;       /* the same for tgid */
	uint8_t pid_unsigned;    /* the field is unsigned (an 8-byte usize: its top bit is value) */
	uint8_t tgid_unsigned;
	uint32_t comm_off;       /* name, comm_len bytes (NUL-padded) */
	uint32_t comm_len;       /* <= TASK_COMM_LEN */
	const char *cur_sym;     /* non-NULL: cur_off is still to be set to this per-CPU variable's
				  * runtime address (arm64 Linux's __entry_task: its per-CPU data is
				  * not zero-based, the base register holds an offset to add to it) */
	char why[200];           /* with OS_NONE: one line saying why attribution is off */
	/* aarch64 Linux's exception frame (struct pt_regs, from BTF whatever os says): the entry
	 * links its frame record `stackframe` into the chain; the interrupted x30 and sp are then
	 * at these offsets from the record. pt_valid 0: unknown. */
	int pt_valid;
	int32_t pt_lr;           /* regs[30] - stackframe */
	int32_t pt_sp;           /* sp - stackframe */
};

/* Fill os from an ELF image (a vmlinux, a vmlinuz payload, our kernel): want is OS_AUTO or the
 * OS --os forces. Never fails: os->os = OS_NONE and os->why explain what was missing. */
void guestos_from_elf(struct guestos *os, Elf *elf, int want);
/* The Linux facts from raw BTF bytes (the image's .BTF section, or read from the guest). */
int guestos_linux_btf(struct guestos *os, const void *btf, size_t len);
struct btf;
/* The byte offset of member `name` in BTF struct/union type id, looking through anonymous members
 * (depth: 0); *size gets its size and *type (may be NULL) its type id. -1 if absent. Shared by
 * everything that reads a Linux layout from BTF (os_linux.c, modules.c). */
long guestos_btf_member(const struct btf *b, unsigned id, const char *name, long long *size, unsigned *type,
			int depth);
/* Our test kernel's facts from its DWARF: the built-in description TESTKERNEL_TASKS (struct
 * cpu.current through the per-CPU base, struct task.pid/.name) resolved as any other. */
#define TESTKERNEL_TASKS "current = ((struct cpu *)$percpu)->current\npid = pid\nname = name\n"
int guestos_testkernel_dwarf(struct guestos *os, Elf *elf);
struct taskdesc;
/* A task description resolved through the image's DWARF (libdw), once: os gets OS_DESC and the
 * places (cur_*, pid/tgid/comm). -1 with one line in err (a missing variable, struct or member;
 * a second pointer to read; a field of the wrong type), os untouched. */
int guestos_desc_dwarf(struct guestos *os, Elf *elf, const struct taskdesc *d, char *err, size_t cap);

#endif
