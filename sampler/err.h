/* SPDX-License-Identifier: MIT */
/* err.h: the sticky error every context struct carries (code + message), filled by library code. */
#ifndef ERR_H
#define ERR_H
#include <errno.h>
#include <stdio.h>
#include <string.h>

/* Error codes shared by all subsystems. */
enum {
	ERR_NONE = 0,
	ERR_SYS,      /* a system call failed (errno text in errstr) */
	ERR_EOF,      /* the peer closed the connection (QEMU exited) */
	ERR_TIMEOUT,  /* the peer did not answer in time */
	ERR_PROTO,    /* the peer answered something we cannot use */
	ERR_FORMAT,   /* a file is malformed */
	ERR_MISMATCH, /* the ELF does not match the guest */
	ERR_USAGE,    /* a bad argument */
	ERR_RESCUED,  /* the pause watchdog resumed the VM while we were held up (not fatal) */
	ERR_INTR,     /* a signal asked us to stop while connecting (nothing sampled) */
};

/* The size of every context's errstr: room for a path or two (a libvirt message names its socket)
 * and the prefixes each layer adds. Every context has the same size, so a message relayed whole
 * ("%s" of an inner errstr) is never cut; one that does not fit at all ends in ERR_CUT -- a cut is
 * visible, never silent. */
#define ERR_MAX 2048
#define ERR_CUT "[...]"

/* Mark a message that filled its buffer (snprintf said it needed n >= cap bytes) as cut. */
static inline void err_mark_cut(char *s, size_t cap, int n)
{
	if (n >= 0 && (size_t)n >= cap && cap > sizeof ERR_CUT)
		memcpy(s + cap - sizeof ERR_CUT, ERR_CUT, sizeof ERR_CUT);
}

/* Set ctx->err/errstr unless an error is already recorded; errno is saved first. */
#define ERR_SET(ctx, code, ...) do { \
	int errno_saved_ = errno; \
	if (!(ctx)->err) { \
		(ctx)->err = (code); \
		int n_ = snprintf((ctx)->errstr, sizeof (ctx)->errstr, __VA_ARGS__); \
		err_mark_cut((ctx)->errstr, sizeof (ctx)->errstr, n_); \
	} \
	errno = errno_saved_; \
} while (0)

#endif
