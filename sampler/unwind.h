/* unwind.h: frame-pointer stack walk over the stack chunks read from one vCPU. */
#ifndef UNWIND_H
#define UNWIND_H
#include <stdint.h>

/* Why a walk ended; each is counted in the summary. */
enum unwind_stop {
	UW_END = 0,   /* a zero frame pointer or return address: the chain's natural end */
	UW_MAXFRAMES, /* --max-frames reached */
	UW_RANGE,     /* a return address outside the kernel range */
	UW_UNREAD,    /* the next frame lies outside the memory read so far (need more) */
	UW_ALIGN,     /* a misaligned frame pointer */
	UW_LOOP,      /* the frame pointer did not move toward the stack base */
	UW_SPAN,      /* the frame pointer left the plausible stack span */
	UW_NSTOPS
};
extern const char *const unwind_stop_names[UW_NSTOPS];

/* Where the interrupted pc sits relative to its function's frame setup (x86_64 frames). */
enum unwind_pc {
	PC_BODY = 0,  /* frame set up: fp is this function's frame */
	PC_AT_ENTRY,  /* before `push fp`, or at `ret`: return address at [sp], fp is the caller's */
	PC_AFTER_PUSH /* after `push fp`, before `mov sp,fp`: return address at [sp+8] */
};

/* A piece of stack memory read from the guest. */
struct unwind_chunk {
	uint64_t addr;        /* guest address of data[0] */
	uint32_t len;         /* bytes valid */
	const uint8_t *data;  /* the bytes */
};

#define UNWIND_MAX_CHUNKS 8

/* One walk's inputs. */
struct unwind_in {
	uint64_t pc, sp, fp, lr;      /* registers at the stop (lr only on link-register arches) */
	int has_lr;                   /* lr is meaningful */
	int fp_prev, fp_ret;          /* frame record layout: saved fp and return address offsets */
	uint64_t klo, khi;            /* kernel range [klo, khi] that frames must fall in */
	uint64_t span;                /* frames must lie in [sp, sp + span) */
	int max_frames;               /* cap including the pc */
	enum unwind_pc pc_kind;       /* prologue/epilogue position of pc */
	int nchunks;                  /* chunks[] in use */
	struct unwind_chunk chunks[UNWIND_MAX_CHUNKS]; /* memory available */
};

/* One walk's result. */
struct unwind_out {
	int n;                  /* frames written: frames[0] = pc, then return addresses */
	enum unwind_stop stop;  /* why it ended */
	uint64_t need;          /* for UW_UNREAD: the address that must be read to continue */
	uint64_t top;           /* one past the highest stack byte the walk read (0 if none) */
};

/* Walk; frames must hold in->max_frames entries. */
void unwind_walk(const struct unwind_in *in, uint64_t *frames, struct unwind_out *out);
/* Read a little-endian 64-bit word from the chunks; 0 ok, -1 if not fully covered. */
int unwind_read64(const struct unwind_in *in, uint64_t addr, uint64_t *val);

#endif
