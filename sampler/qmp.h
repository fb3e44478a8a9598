/* SPDX-License-Identifier: MIT */
/* qmp.h: a small QMP client (greeting, qmp_capabilities, commands) and the tiny JSON reader it uses. */
#ifndef QMP_H
#define QMP_H
#include "err.h"
#include <stddef.h>
#include "conn.h"

/* A JSON value inside a text (not copied): bytes [p, p + len). */
struct jval {
	const char *p;  /* first byte of the value */
	size_t len;     /* its length */
};

/* Length of the complete JSON value at the start of s[0..n) (leading white space included):
 * > 0 bytes, 0 incomplete (read more), -1 malformed. */
long json_scan(const char *s, size_t n);
/* Member key of object v: 0 found (out set), -1 absent or v not an object. */
int json_member(const struct jval *v, const char *key, struct jval *out);
/* Element i of array v: 0 found, -1 out of range or not an array. */
int json_index(const struct jval *v, int i, struct jval *out);
/* Walk "return.status" / "return.0.thread-id" (numbers index arrays) from v: 0 found, -1 not. */
int json_path(const struct jval *v, const char *path, struct jval *out);
/* Decode string v into out (NUL-terminated, UTF-8): its length, or -1 (not a string, bad escape,
 * or longer than cap - 1). */
long json_str(const struct jval *v, char *out, size_t cap);
/* Integer v: 0 ok, -1 not an integer. */
int json_int(const struct jval *v, long long *out);
/* 1 true, 0 false, -1 neither. */
int json_bool(const struct jval *v);

/* What the first bytes a peer sent unasked say it is (pure): QMP_PEER_QMP a QMP greeting
 * ({"QMP": ...), QMP_PEER_HMP the human monitor's banner ("QEMU 7.2.15 monitor - type 'help'..."),
 * 0 neither (or too few bytes to tell yet). A gdbstub sends nothing unasked but '+', '$'. */
enum { QMP_PEER_QMP = 1, QMP_PEER_HMP = 2 };
int qmp_peer_kind(const char *b, size_t n);

#define QMP_BUF 65536

struct qmp {
	struct conn conn;        /* the monitor socket */
	char rbuf[QMP_BUF];      /* bytes read, not yet consumed */
	size_t rlen;             /* how many */
	char msg[QMP_BUF];       /* the last reply (a complete JSON object, NUL-terminated) */
	size_t mlen;             /* its length */
	unsigned long events;    /* asynchronous events skipped */
	int reply_ms;            /* a command's reply is due within this (0: 10 s; tests shorten it) */
	int err;                 /* sticky error code (err.h) */
	char errstr[ERR_MAX];        /* what went wrong */
};

/* Connect to the QMP socket at path, read the greeting, negotiate capabilities. */
int qmp_open(struct qmp *q, const char *path);
/* Run one command (a JSON object, no newline) and keep its reply in q->msg: 0 on a "return",
 * -1 on an "error" reply (errstr holds its desc, err ERR_PROTO) or a lost connection. */
int qmp_exec(struct qmp *q, const char *cmd);
void qmp_close(struct qmp *q);

#endif
