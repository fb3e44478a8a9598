/* SPDX-License-Identifier: MIT */
/* guestos.h: which task is current on a vCPU -- each guest OS's facts behind one small interface. */
#ifndef GUESTOS_H
#define GUESTOS_H
#include <gelf.h>
#include <stddef.h>
#include <stdint.h>

/*
 * Every kernel we know keeps a per-CPU pointer to the running task at a fixed offset from the
 * CPU's kernel GS base, and the task's identity at fixed offsets in its struct. An OS file finds
 * those offsets in the image (Linux: BTF through libbpf; our test kernel: DWARF through libdw);
 * task.c does the rest the same way for all of them. No hook in the guest.
 */

enum { OS_NONE = 0, OS_LINUX = 1, OS_TESTKERNEL = 2, OS_AUTO = 255 }; /* also the capture's task_os */
extern const char *const guestos_names[3];

#define TASK_COMM_LEN 16

struct guestos {
	int os;                  /* OS_*: OS_NONE = attribution off (why says why) */
	char what[96];           /* where the facts came from: "BTF, 6.1 layout (current_task)" */
	uint64_t cur_off;        /* current-task pointer at kernel GS base + cur_off */
	uint32_t pid_off;        /* s32 pid in the task struct */
	uint32_t tgid_off;       /* s32 thread-group id (== pid_off where the OS has none) */
	uint32_t comm_off;       /* name, comm_len bytes (NUL-padded) */
	uint32_t comm_len;       /* <= TASK_COMM_LEN */
	const char *cur_sym;     /* non-NULL: cur_off is still to be set to this per-CPU variable's
				  * runtime address (arm64 Linux's __entry_task: its per-CPU data is
				  * not zero-based, the base register holds an offset to add to it) */
	int pcpu_raw;            /* the base register's value is that offset (arm64 TPIDR_EL1 =
				  * __per_cpu_offset[cpu]), not itself a kernel pointer */
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
/* Our test kernel's facts from its DWARF (struct cpu.current, struct task.pid/.name). */
int guestos_testkernel_dwarf(struct guestos *os, Elf *elf);

#endif
