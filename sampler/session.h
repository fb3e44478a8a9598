/* SPDX-License-Identifier: MIT */
/* session.h: one attachment to a guest -- symbols, connection, ELF check, guard, sampler. */
#ifndef SESSION_H
#define SESSION_H
#include "err.h"
#include "attach.h"
#include "cli.h"
#include "gdb.h"
#include "guard.h"
#include "image.h"
#include "kaslr.h"
#include "modules.h"
#include "kfind.h"
#include "sampler.h"
#include "summary.h"
#include "taskdesc.h"
#include "slice.h"

/* `gdbsample replay` (session_replay.c): where the replay stands and how it went. */
enum { REPLAY_RUNNING, REPLAY_END, REPLAY_UNTIL, REPLAY_SIGNAL };
struct replay {
	int started;                   /* session_replay_begin placed the grid */
	uint64_t attach_icount;        /* the instruction count where the first step found it */
	uint64_t target;               /* the count the replay was last sent to */
	uint64_t first, last;          /* the counts of the first and last sample */
	uint64_t steps;                /* stops sampled */
	uint64_t off_target;           /* stops that came elsewhere than at the count asked for */
	int ended;                     /* REPLAY_*: why it ended */
	int exit_code;                 /* REPLAY_END: QEMU's exit status (its W reply) */
};
extern const char *const replay_end_names[]; /* "", "recording-ended", "until", "signal" */
/* The first count to sample at: the first multiple of every at or after from that lies ahead of
 * now (replay_break takes future counts only). Pure; UINT64_MAX if there is none. */
uint64_t replay_first(uint64_t now, uint64_t every, uint64_t from);

struct session {
	const struct opts *o;          /* options */
	struct replay rp;              /* `replay`: the instruction-count grid (session_replay.c) */
	struct image img;              /* the kernel as given with -e (img.syms.n == 0 without -e) */
	struct taskdesc desc;          /* --tasks: the description, parsed before anything else */
	struct kaslr kaslr;            /* the KASLR offsets found (or given) */
	int orc_from_guest;            /* the ORC tables were read from guest memory (map only) */
	struct modset mods;            /* the guest's loaded modules (mods.head == 0: not read) */
	int64_t mods_walked_ns;        /* when the modules list was last walked */
	int64_t mods_every_ns;         /* the least time between walks: MODS_RESCAN_NS, doubled (up
				        * to MODS_RESCAN_MAX_NS) after each walk that found nothing new
				        * (a pc no module holds: a BPF program, a trampoline) */
	struct slice_stats mods_sl;    /* the stops spent reading them (slice.h) */
	struct slice_reader sl;        /* locate.c's reads of guest memory, in slices (slice.h) */
	struct slice_stats slst;       /* ...the stops they made: the attach's, each slice, each walk */
	int64_t stopped_since;         /* when connecting stopped the VM (pace_now) */
	struct kfind_stats kf;         /* a bare -p: the kernel read from guest memory (kfind.h) */
	int methods[UM_N];             /* unwinding methods in use, in order of preference */
	int nmethods;
	struct attach at;              /* the monitor we opened the gdbstub through (--qmp/--domain) */
	struct gdb g;                  /* the gdbstub connection */
	struct guard guard;            /* resumes the guest if we die */
	struct sampler s;              /* per-vCPU sampling state */
	int cpus[GDB_MAX_CPUS];        /* vCPU indexes sampled */
	int ncpu;                      /* how many */
	uint64_t pac_mask;             /* the stub's pauth code mask for kernel code pointers, 0 none */
	uint64_t klo, khi;             /* kernel range: --kernel-range, else the upper half, else (a
				        * kernel linked below it) its image's text (locate.c) */
	int attached;                  /* connected and not yet detached */
	char how[256];                 /* how the VM was reached, for the report header ("" with -p) */
	uint64_t rescues;              /* stops the pause watchdog ended */
	int64_t rescue_max_ns;         /* the longest of them */
	uint64_t rescued_rounds;       /* sample rounds lost to them */
	int held;                      /* the VM is stopped by someone else (a monitor `stop`, virsh
				        * suspend, a shutdown, or paused before we came): not ours to
				        * resume -- we neither sample nor resume it until it runs again */
	const char *held_why;          /* what the evidence said (gdb_stop_reason, or held_buf) */
	char held_buf[64];             /* "in state postmigrate before gdbsample came" */
	uint64_t held_episodes;        /* times we found it so */
	uint64_t held_rounds;          /* sampling rounds skipped meanwhile */
	int held_at_start;             /* it was paused before gdbsample came */
	int read_held;                 /* dump: read a held VM as it is (no stop, no resume) */
	int migrating;                 /* a migration is under way (session.c, look_for_migration) */
	int64_t next_mig_ns;           /* when a round asks again */
	int64_t mig_quiet_until_ns;    /* while migrating: no round stops the VM before this */
	uint64_t migration_rounds;     /* sampling rounds skipped meanwhile */
	int hotplugged;                /* vCPUs that appeared during the run (not sampled) */
	int next_tid;                  /* the thread id the next hot-plugged vCPU would get */
	int64_t next_plug_ns;          /* when to look for one next */
	struct offcpu *oc;             /* record --off-cpu: the guest's tasks followed (offcpu.h), or NULL */
	struct sample *ocs;            /* ...each round's off-CPU stacks (OFFCPU_PER_ROUND) */
	int noc;                       /* ...how many the last round gave */
	int err;                       /* sticky error code (err.h) */
	char errstr[ERR_MAX];              /* what went wrong */
};
#define OFFCPU_PER_ROUND 64            /* off-CPU stacks one round gives at most */

/* Load symbols, connect, check the ELF, start the guard and the sampler. VM left stopped. */
int session_open(struct session *ss, const struct opts *o);
/* What one round cost the guest, as gdbsample's clock sees it. */
struct pause {
	int64_t pause_ns;    /* from writing the stop to writing the resume: the sample's latency */
	int64_t stopped_ns;  /* from reading the stop reply to writing the resume: time the VM surely
			      * stood still (QEMU may take a while to act on the stop byte when its
			      * threads outnumber the host's cores; the guest runs meanwhile) */
};

/* One round: stop the VM, read every vCPU, resume it -- with the guard armed from the stop to the
 * resume. 0: *n samples in out, *pz what the round cost; 1: the round was lost because the pause
 * watchdog resumed the VM while we were held up (the VM runs, counted, warned); 2: the VM is
 * stopped by someone else (ss->held), or a migration is under way (ss->migrating): nothing read,
 * nothing resumed (counted, warned once per episode; a later round looks again); -1: failed
 * (ss->err). */
int session_sample(struct session *ss, struct sample *out, int *n, struct pause *pz);
/* `replay`, at the end of session_open: stop the replay wherever it is, check that it is one
 * (ERR_USAGE if not, or if it was paused before we came), and place the grid. 0, -1 (ss->err). */
int session_replay_begin(struct session *ss);
/* `replay`: run the replay to the next multiple of --every (the first: at or after --from) with
 * replay_break and `c`, and sample every vCPU there. 0: *n samples in out at instruction count
 * *icount, the replay held *held_ns while read; 3: the replay is over (ss->rp.ended: the recording ended -- QEMU exited --, --until
 * was passed, or a signal came); -1: failed (ss->err; a QEMU not replaying is ERR_USAGE). */
int session_replay_step(struct session *ss, struct sample *out, int *n, uint64_t *icount, int64_t *held_ns);
/* session_summary.c: the replay's rows (replay only). */
void session_replay_summary(const struct session *ss, struct summary *t);
/* Stop the VM, detach with D;1 (which resumes it), reap the guard, close a stub we opened. A VM
 * someone else holds stopped is left so: the connection is closed without D;1. */
int session_close(struct session *ss);
/* session_summary.c: the session's rows of the summary (after the run's, stats_summary): the
 * modules line for people; how the VM was reached, a VM held by someone else, the image and
 * unwinders as keys. */
void session_summary(const struct session *ss, struct summary *t);
/* After a request refused (or raced) because the pause watchdog resumed the VM while we were held
 * up (ERR_RESCUED): the stream put in order again (gdb_resync), the rescue acknowledged; the VM
 * runs. 0 recovered, -1 another error (or the resync failed: ss->g). */
int session_recover(struct session *ss);
/* Print a warning on stderr unless -q. */
void session_warn(const struct session *ss, const char *fmt, ...);
/* locate.c: find the kernel in the guest (KASLR offsets; ORC tables from guest memory when only
 * a map was given) and choose the unwinders; VM stopped. */
int locate_kernel(struct session *ss);
/* locate.c: reads outside the sampling rounds, through the session's slicer (slice.h) -- at most
 * SLICE_NS a stop, the VM running between stops: stop the VM (a vCPU in kernel mode in
 * ss->sl.cpu); read blocks (a new stop when this one has lasted SLICE_NS, a watchdog's rescue
 * recovered from); end the stop (the VM resumed if it is ours). Each 0, or -1 (ss->err). */
struct gdb_block;
int session_slice_stop(struct session *ss);
int session_slice_blocks(struct session *ss, struct gdb_block *b, int n);
int session_slice_release(struct session *ss);
/* The .ko files (kofile.h) after a walk of the modules list: checked (first) and placed; 0, or -1
 * (ss->err) at the first when a file given is for another kernel or another build. */
int ko_locate(struct session *ss, int cpu, int first);
/* Walk the modules list again if a sample met a kernel pc no module or core text holds (at most
 * every MODS_RESCAN_NS): stop, read, resume under the guard. 0 (also when nothing was due), -1
 * on a connection error (ss->err). */
#define MODS_RESCAN_NS 200000000LL
#define MODS_RESCAN_MAX_NS 3200000000LL
int session_modules_refresh(struct session *ss, const struct sample *s, int n);
/* session_summary.c: the module list for the capture (docs/capture-format.md, v4), malloc'd; NULL
 * if none. */
char *session_modules_text(const struct session *ss);
/* The kernel symbols, or NULL without -e. */
const struct symtab *session_syms(const struct session *ss);
/* One line for the report header: what unwound and where the kernel was found, or "" */
void session_image_line(const struct session *ss, char *out, size_t cap);

#endif
