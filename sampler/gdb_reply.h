/* SPDX-License-Identifier: MIT */
/* gdb_reply.h: pure parsers of gdbstub replies (no I/O; the fuzzers and unit tests call them on literals). */
#ifndef GDB_REPLY_H
#define GDB_REPLY_H
#include <stddef.h>
#include <stdint.h>

/* Parse a thread id "p1.2" / "2" (hex, at most 7 digits each) at s into its thread number; -1 if
 * malformed. *end (if set) gets the first byte after it. s is NUL-terminated. */
int gdb_parse_tid(const char *s, const char **end);

/* What gdb_parse_threads found in one qfThreadInfo/qsThreadInfo reply. */
enum {
	GDB_TL_END = 1,   /* "l": the list is complete */
	GDB_TL_MORE = 0,  /* "m<id>,<id>...": ids appended, ask qsThreadInfo for more */
	GDB_TL_BAD = -1,  /* neither, an empty "m", or a malformed id */
	GDB_TL_FULL = -2, /* more than max threads in all */
	GDB_TL_DUP = -3,  /* a thread listed twice */
};
/* Append the threads of reply pkt[0..len) to pids/tids, which hold *n of at most max. */
int gdb_parse_threads(const char *pkt, size_t len, int *pids, int *tids, int max, int *n);

/* QEMU's "info status" text: 0 running, 1 paused (state gets the run state in parentheses,
 * "postmigrate", or "" for plain paused), -1 not that text. */
int gdb_parse_status(const char *text, char *state, size_t cap);
/* QEMU's "info migrate" text: 1 a migration is under way (setup, active, device, postcopy...,
 * cancelling, or a status this parser does not know), 0 none is (never one, or its status is
 * completed, failed or cancelled), -1 not that text. */
int gdb_parse_migration(const char *text);
/* QEMU's "info replay" text (record/replay, -icount ...,rr=record|replay): GDB_RR_REPLAY or
 * GDB_RR_RECORD with *icount the instruction count now, GDB_RR_OFF when record/replay is not
 * active, -1 not that text. */
enum { GDB_RR_OFF = 0, GDB_RR_REPLAY = 1, GDB_RR_RECORD = 2 };
int gdb_parse_replay(const char *text, uint64_t *icount);
/* Whether a VM we stopped, found in this run state (gdb_parse_status's result and state), may be
 * resumed by us: running or plain paused (what our stop makes) yes; finish-migrate, postmigrate,
 * shutdown, io-error, guest-panicked... no (resuming a VM in finish-migrate aborts QEMU 7.2). */
int gdb_state_is_ours(int status, const char *state);
/* What HMP `cont` printed (relayed by qRcmd): 0 nothing (it resumed the VM), 1 an error -- among
 * them QEMU's refusal of a VM a migration is finishing, "Error: Migration is not finalized yet". */
int gdb_parse_cont(const char *text);
/* Why a VM found stopped with no stop reply is stopped, from its run state (gdb_parse_status's
 * result and state), in gdb_stop_reason's words: a migration, a kept shutdown, an I/O error, a
 * panic, a plain pause; "stopped by someone else" for anything else or an unreadable state. */
const char *gdb_state_reason(int status, const char *state);

/* A stop reply, decoded. */
struct gdb_stopinfo {
	char kind;   /* 'T' / 'S': stopped by signal sig; 'W': exited with code sig; 'X': killed by sig */
	int sig;     /* the two hex digits after kind */
	int pid;     /* the process of "thread:p<pid>.<tid>" (1 without the p form), -1 if none named */
	int tid;     /* the thread named by "thread:", -1 if none */
};
/* Parse stop reply pkt[0..len) ("T02thread:p01.02;", "S05", "W00"): 0, or -1 if it is not one. */
int gdb_parse_stop(const char *pkt, size_t len, struct gdb_stopinfo *out);
/* The thread a stop reply names, or -1 (not a stop reply, or no thread in it). */
int gdb_stop_tid(const char *pkt, size_t len);

/* What a stop reply's signal says happened to the VM (QEMU's gdb_vm_state_change), for messages. */
const char *gdb_stop_reason(int sig);

/* What the stub said it supports in its qSupported reply. */
struct gdb_features {
	int packet_size;   /* PacketSize (hex in the reply), 0 if absent or beyond RSP_PKT_MAX */
	int multiprocess;  /* multiprocess+: thread ids are p<pid>.<tid> */
	int xfer_features; /* qXfer:features:read+: target.xml can be read */
	int noack;         /* QStartNoAckMode+ */
};
/* Parse qSupported reply pkt (NUL-terminated) into *out; every reply parses (unknown: all 0). */
void gdb_parse_supported(const char *pkt, struct gdb_features *out);
/* QEMU's "info version" text ("7.2.15 (Debian ...)"): major * 100 + minor, or 0 if unreadable. */
int gdb_parse_version(const char *text);
/* A `g` reply pkt[0..len): its bytes into regs (at most cap); how many, or -1 (an error reply,
 * odd length, more than cap, not hex). */
int gdb_parse_regs(const char *pkt, size_t len, uint8_t *regs, int cap);
/* A `p` reply: 1..8 bytes little-endian into *val; 0, or -1 (an error reply, empty, longer, not hex). */
int gdb_parse_reg(const char *pkt, size_t len, uint64_t *val);
/* An `m` reply that must hold exactly n bytes: into out; 0, or -1 (an error reply, other length, not hex). */
int gdb_parse_mem(const char *pkt, size_t len, uint8_t *out, size_t n);
/* A qXfer:features:read reply: 'm' (more to read) or 'l' (the end) with its data at *data, *n
 * bytes; -1 if neither (an error reply, an empty one). */
int gdb_parse_xfer(const char *pkt, size_t len, const char **data, size_t *n);
/* The next <xi:include href="NAME"/> in NUL-terminated target description xml at or after from:
 * 0 with [*at, *end) its extent and NAME in href (cap bytes with the NUL); -1 if there is none
 * (or it is malformed, or NAME does not fit: then it is left as text). */
int gdb_parse_include(const char *xml, size_t from, size_t *at, size_t *end, char *href, size_t cap);

#endif
