/* SPDX-License-Identifier: MIT */
/* attach.h: reach a running VM through its monitor (QMP socket or libvirt domain), open a private
 * gdbstub on it for the session, and close it again on every way out. */
#ifndef ATTACH_H
#define ATTACH_H
#include "err.h"
#include <signal.h>
#include "gdb.h"
#include "qmp.h"
#include "summary.h"
#include "virt.h"

enum { ATTACH_GDBSTUB, ATTACH_QMP, ATTACH_DOMAIN }; /* how the VM was reached */

struct attach {
	int kind;                   /* ATTACH_* */
	const char *target;         /* QMP socket path or domain name */
	const char *uri;            /* --connect URI, NULL = libvirt's default */
	struct qmp q;               /* QMP connection (open only while talking) */
	struct virt v;              /* libvirt connection (open for the whole session) */
	char accel[8];              /* "kvm" or "tcg" (query-kvm) */
	int ncpu;                   /* vCPUs (query-cpus-fast) */
	long tids[GDB_MAX_CPUS];    /* host thread id of vCPU i */
	int port;                   /* the gdbstub we opened on 127.0.0.1, 0 if none */
	int opened;                 /* the stub is ours and still open */
	int leave_paused;           /* attach_close must not `cont` a paused VM: someone else paused it */
	char reply[QMP_BUF];        /* the last monitor reply (JSON) */
	int err;                    /* sticky error code (err.h) */
	char errstr[ERR_MAX];           /* what went wrong */
};

/* Check the VM (running, vCPUs, accelerator, no gdbstub yet) and open a gdbstub on a free
 * loopback port (a->port). Nothing is changed on the VM if this fails. The QMP talk gives up at
 * deadline_ms (CLOCK_MONOTONIC ms, 0: none) or once a signal set *intr (NULL: never). */
int attach_open(struct attach *a, int kind, const char *target, const char *uri, long long deadline_ms,
		volatile sig_atomic_t *intr);
/* Close our gdbstub (`gdbserver none`) and make sure the VM runs again; drop the monitor. */
int attach_close(struct attach *a);
/* For the guard, after gdbsample died: close the stub and, if the guard resumed the VM (ours: it
 * was stopped by us), make sure it runs; a VM the guard found not ours is left as it is. Best
 * effort. */
void attach_rescue(void *a, int ours);
/* "qmp /path/qmp.sock" / "domain NAME" / "gdbstub 127.0.0.1:1234", for headers. */
const char *attach_kind_name(int kind);
/* Its summary rows (not shown to people): attach qmp, attach_target ..., gdbstub ..., accel tcg,
 * vcpu_threads 1,2. */
void attach_summary(const struct attach *a, const char *where, struct summary *t);

#endif
