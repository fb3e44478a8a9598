/* SPDX-License-Identifier: MIT */
/* wirelog.h: every byte to and from the gdbstub and QMP, appended to $GDBSAMPLE_WIRE_LOG (gdb's `set debug remote`). */
#ifndef WIRELOG_H
#define WIRELOG_H
#include <stddef.h>
#include <stdint.h>

/* One line for len bytes going dir ('>' written by us, '<' read) on the connection `where`, at
 * t_ns on the monotonic clock, by process pid: "<s>.<us> <pid> <where> <dir> <bytes>\n", the bytes
 * printable ASCII as they are, '\\' as "\\\\" and every other byte as \xNN. Cut with "...(N more)"
 * when it would not fit cap. Returns the line's length (without a NUL; out is NUL-terminated). */
size_t wirelog_format(char *out, size_t cap, int64_t t_ns, int pid, const char *where, char dir,
		      const void *buf, size_t len);

/* The I/O edge: with GDBSAMPLE_WIRE_LOG set (a file appended to, never truncated; opened at the
 * first use in each process), log one write or read; else nothing. A log that cannot be opened is
 * said once on stderr and the run goes on unlogged. */
void wirelog(const char *where, char dir, const void *buf, size_t len);

#endif
