/* SPDX-License-Identifier: MIT */
/* unwind.h: the stack walk -- frame-pointer, DWARF CFI and ORC unwinders behind one interface,
 * chosen per frame, over the stack memory read from one vCPU. */
#ifndef UNWIND_H
#define UNWIND_H
#include <stdint.h>

#define UW_NREGS 34          /* DWARF register numbers 0..33 (x86_64 uses 0..16, aarch64 0..33:
			      * 32 the pc, 33 ELR_mode, the exception link register; riscv64 0..31,
			      * and two slots for numbers past them: uw_alias) */
#define UNWIND_MAX_CHUNKS 16 /* stack windows one walk can see */
#define UW_MAX_EXTENTS 4     /* distinct stacks one walk may cross (exception, IRQ, task stack) */
#define UW_MAX_SWITCHES 3    /* stack switches allowed in one walk */

/* The methods, in the order the summary prints them. */
enum uw_method { UM_FP = 0, UM_CFI, UM_ORC, UM_N };
extern const char *const unwind_method_names[UM_N];

/* Why a walk ended; each is counted in the summary, per method. */
enum unwind_stop {
	UW_END = 0,   /* the chain's natural end: a zero frame pointer or return address, an ORC
		       * end-of-stack entry, a CFI frame whose return address is undefined */
	UW_USER,      /* reached the user-mode context an exception or syscall interrupted */
	UW_MAXFRAMES, /* --max-frames reached */
	UW_RANGE,     /* a return address outside the kernel range */
	UW_UNREAD,    /* the next frame lies outside the memory read so far (need more), or needs a
		       * register the stub gives only one by one (aarch64's ELR_EL1) */
	UW_ALIGN,     /* a misaligned frame pointer or stack pointer */
	UW_LOOP,      /* the stack pointer did not move toward the stack base */
	UW_SPAN,      /* the frame left the plausible stack span (or too many stack switches) */
	UW_NOINFO,    /* no method has unwind information for the pc */
	UW_BADRULE,   /* the method's rule needs a register it does not have, or is malformed */
	UW_NSTOPS
};
extern const char *const unwind_stop_names[UW_NSTOPS];

/* Where an exact pc sits relative to its function's frame setup (frame-pointer method only). */
enum unwind_pc {
	PC_BODY = 0,  /* frame set up: fp is this function's frame */
	PC_AT_ENTRY,  /* before `push fp`, or at `ret`: return address at [sp] (or in lr), fp is the
		       * caller's (on aarch64 also between `stp x29, x30` and `mov x29, sp`, and after
		       * the epilogue's `ldp x29, x30`: the caller's sp is then sp + adj) */
	PC_AFTER_PUSH /* after `push fp`, before `mov sp,fp`: return address at [sp+8] */
};

/* Per-architecture facts the walk needs (DWARF register numbers). */
struct uw_arch {
	int sp, fp, ra;       /* stack pointer, frame pointer, return-address column */
	int lr;               /* register holding the return address at a function's entry, -1 if none */
	int fp_prev, fp_ret;  /* frame record: offsets from fp of the saved fp and the return address */
	int nregs;            /* registers numbered 0..nregs-1 */
	int is_x86;           /* 1 on x86_64 (ORC, pt_regs, CPL from cs) */
	int rec_low;          /* the frame record sits at the bottom of its frame (aarch64): from the
			       * record alone the caller's sp is only known to lie above it */
	int nalias;           /* DWARF numbers past the registers kept in slots of their own: */
	const struct uw_alias *alias;
};
/* A DWARF register number past an architecture's registers, kept in a slot of its own (riscv64:
 * 64, the alternate return column of a trap frame; 4096 + 0x141, sepc, read with `p`). */
struct uw_alias {
	int dwarf, slot;
};
extern const struct uw_arch uw_arch_x86_64, uw_arch_aarch64, uw_arch_riscv64; /* arch.c */

/* One frame's registers, by DWARF number. */
struct uw_regs {
	uint64_t r[UW_NREGS];  /* values */
	uint64_t valid;        /* bit n set: r[n] is known */
};

/* A piece of stack memory read from the guest. */
struct unwind_chunk {
	uint64_t addr;        /* guest address of data[0] */
	uint32_t len;         /* bytes valid */
	const uint8_t *data;  /* the bytes */
};

/* A stack region one walk read from: [lo, hi). */
struct uw_extent {
	uint64_t lo, hi;
};

/* One frame: its pc and registers. */
struct uw_frame {
	uint64_t pc;                  /* this frame's pc */
	int exact;                    /* pc is where the frame was interrupted (frame 0, or the
				       * caller of a signal/interrupt frame), not a return address */
	int sp_low;                   /* regs' sp is a lower bound, not the frame's sp (an aarch64
				       * frame-record step): rules based on sp do not apply */
	struct uw_regs regs;          /* this frame's registers (regs.valid says which) */
};

/* The walk's view of stack memory, what it has read of it, and why a step stopped it. */
struct uw_walk {
	const struct uw_arch *arch;   /* register numbers */
	int depth;                    /* index of the frame being stepped from (0 = the stopped pc) */
	uint64_t span;                /* one stack's frames lie within [base, base + span) */
	const struct unwind_chunk *chunks; /* memory available */
	int nchunks;
	int last_chunk;               /* the chunk the previous read came from */
	int next;                     /* extents in use */
	struct uw_extent ext[UW_MAX_EXTENTS]; /* stack read so far, per stack */
	int cur;                      /* extent of the current stack pointer */
	enum unwind_stop stop;        /* set by a step that returns US_STOP */
	uint64_t need;                /* for UW_UNREAD: the address to read */
	uint64_t fetchable;           /* registers not in the frame that another trip can read */
	int need_reg;                 /* for UW_UNREAD: the register to read (-1: memory at need) */
	uint64_t pac_mask;            /* code-pointer bits that hold no address (unwind_in's) */
};

/* What one step returned. */
enum uw_step {
	US_OK = 0,  /* the caller's frame is filled in (pc, regs, exact) */
	US_NOINFO,  /* this method knows nothing about the pc: try the next one */
	US_END,     /* the frame is the outermost one (UW_END) */
	US_USER,    /* the caller is the user-mode context (UW_USER) */
	US_STOP     /* the walk cannot go on: walk->stop says why (and ->need for UW_UNREAD) */
};

/* One unwinding method. */
struct unwinder {
	int method;    /* UM_* */
	void *ctx;     /* its tables */
	/* From frame f to its caller. Returns US_NOINFO without touching anything; reads stack
	 * memory only through uw_read. */
	enum uw_step (*step)(void *ctx, struct uw_walk *w, const struct uw_frame *f, struct uw_frame *caller);
};

/* One walk's inputs. */
struct unwind_in {
	const struct uw_arch *arch;   /* register numbers */
	uint64_t pc;                  /* the stopped pc */
	struct uw_regs regs;          /* the stopped registers */
	uint64_t fetchable;           /* bit n: register n is not in regs but another trip can read
				       * it (a register outside QEMU's `g`: aarch64's ELR_EL1) */
	int user;                     /* the vCPU is in user mode: only the pc is recorded */
	uint64_t pac_mask;            /* bits of a return address that hold no address and may hold a
				       * pointer-authentication code (aarch64: arch_pac_mask), 0 none */
	uint64_t klo, khi;            /* kernel range [klo, khi] that frames must fall in */
	uint64_t span;                /* one stack's frames lie within [sp, sp + span) */
	int max_frames;               /* cap including the pc */
	int nmethods;                 /* methods[] in use, in order of preference */
	const struct unwinder *methods[UM_N];
	int nchunks;                  /* chunks[] in use */
	struct unwind_chunk chunks[UNWIND_MAX_CHUNKS]; /* memory available */
};

/* One walk's result. */
struct unwind_out {
	int n;                  /* frames written: frames[0] = pc, then return addresses */
	enum unwind_stop stop;  /* why it ended */
	int stop_method;        /* method whose step ended it (UM_*), or -1 (before any step) */
	uint64_t need;          /* for UW_UNREAD: the address that must be read to continue */
	int need_reg;           /* ...or the register (DWARF number; -1: it is memory) */
	int nextents;           /* stack regions read */
	struct uw_extent ext[UW_MAX_EXTENTS]; /* ...each [lowest, one past the highest) byte */
	int last_extent;        /* the stack the last frame is on */
	uint64_t exact[4];      /* bit i: frames[i] (i > 0) is an interrupted pc, not a return address */
	uint16_t by_method[UM_N]; /* frames each method produced */
};

/* A return address without its pointer-authentication code: the bits of mask set to ones for
 * an upper-half address (bit 55 set, as the architecture's strip instruction XPACI decides),
 * cleared for a lower-half one. mask 0: unchanged. */
static inline uint64_t uw_strip(uint64_t mask, uint64_t v)
{
	return !mask ? v : (v >> 55) & 1 ? v | mask : v & ~mask;
}
/* Walk; frames must hold in->max_frames entries. */
void unwind_walk(const struct unwind_in *in, uint64_t *frames, struct unwind_out *out);
/* Read a little-endian 64-bit word from the chunks; 0 ok, -1 if not fully covered. */
int unwind_read64_chunks(const struct unwind_chunk *ch, int n, uint64_t addr, uint64_t *val);
/* For a step: read a stack word, recording it in the walk's extents; on failure the walk is
 * set up for US_STOP with UW_UNREAD. */
int uw_read(struct uw_walk *w, uint64_t addr, uint64_t *val);
/* Frame i of out is exact (an interrupted pc)? */
static inline int unwind_is_exact(const uint64_t *exact, int i)
{
	return (int)(exact[i >> 6] >> (i & 63)) & 1;
}

/* The frame-pointer method (unwind_fp.c). pc_kind may be NULL (every pc is PC_BODY). */
struct fp_ctx {
	/* prologue position of an exact pc; *adj: the caller's sp is sp + adj (PC_AT_ENTRY, lr) */
	enum unwind_pc (*pc_kind)(const void *arg, uint64_t pc, int *adj);
	const void *arg;        /* its argument (and after_call's) */
	uint64_t span;          /* frames lie within [sp, sp + span) */
	/* 1 if a record's return address follows a call, 0 if not (the record holds an interrupted
	 * pc: an exception entry's), -1 unknown; NULL: always -1 */
	int (*after_call)(const void *arg, uint64_t ra);
	/* an exception vector where nothing of the entry has run (its first instruction, or after
	 * Linux's sp/x0-only prologue): FP_VEC_KERNEL if the vector takes exceptions from the kernel
	 * (the interrupted pc is in ELR_EL1, every other register still the interrupted code's),
	 * FP_VEC_KERNEL_MOVED the same but for sp and x0, FP_VEC_USER from user mode, 0 not a vector
	 * entry; NULL: never */
	int (*vector)(const void *arg, uint64_t pc);
	int elr;                /* the DWARF number of the exception link register (aarch64: 33) */
	int pt_valid;           /* an exception entry's record sits in a register frame (arm64
				 * Linux's pt_regs): the interrupted x30 and sp are at these offsets
				 * from the record */
	int32_t pt_lr, pt_sp;
	int switch_stacks;      /* a frame record may point to another stack (aarch64 Linux's IRQ
				 * stack links to the task stack): the walk's stack checks judge it */
};
/* FP_VEC_KERNEL_MOVED: from the kernel, past prologue instructions that moved sp and x0 only */
enum { FP_VEC_KERNEL = 1, FP_VEC_USER = 2, FP_VEC_KERNEL_MOVED = 3 };
enum uw_step fp_step(void *ctx, struct uw_walk *w, const struct uw_frame *f, struct uw_frame *caller);

#endif
