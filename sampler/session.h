/* session.h: one attachment to a guest -- symbols, connection, ELF check, guard, sampler. */
#ifndef SESSION_H
#define SESSION_H
#include "attach.h"
#include "cli.h"
#include "gdb.h"
#include "guard.h"
#include "sample.h"
#include "symbols.h"

struct session {
	const struct opts *o;          /* options */
	struct symtab syms;            /* kernel symbols (syms.n == 0 without -e) */
	struct attach at;              /* the monitor we opened the gdbstub through (--qmp/--domain) */
	struct gdb g;                  /* the gdbstub connection */
	struct guard guard;            /* resumes the guest if we die */
	struct sampler s;              /* per-vCPU sampling state */
	int cpus[GDB_MAX_CPUS];        /* vCPU indexes sampled */
	int ncpu;                      /* how many */
	int attached;                  /* connected and not yet detached */
	char how[256];                 /* how the VM was reached, for the report header ("" with -p) */
	int err;                       /* sticky error code (err.h) */
	char errstr[128];              /* what went wrong */
};

/* Load symbols, connect, check the ELF, start the guard and the sampler. VM left stopped. */
int session_open(struct session *ss, const struct opts *o);
/* Stop the VM, detach with D;1 (which resumes it), reap the guard, close a stub we opened. */
int session_close(struct session *ss);
/* Append the attach summary lines (attach, accel, vcpu_threads, gdbstub) to the key value text. */
void session_kv(const struct session *ss, char *out, size_t cap);
/* Print a warning on stderr unless -q. */
void session_warn(const struct session *ss, const char *fmt, ...);
/* Compare ranges of kernel text read from the guest with the ELF (0 match, -1 mismatch/err). */
int verify_text(struct session *ss);

#endif
