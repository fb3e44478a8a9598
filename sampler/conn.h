/* SPDX-License-Identifier: MIT */
/* conn.h: byte transport to the gdbstub -- TCP (TCP_NODELAY) or a unix socket. */
#ifndef CONN_H
#define CONN_H
#include "err.h"
#include <stddef.h>
#include <sys/types.h>

struct conn {
	int fd;            /* connected socket, -1 when closed */
	int loopback;      /* 1 if the peer is a loopback address or a unix socket */
	char where[128];   /* "127.0.0.1:1234" or the socket path, for messages */
	long long deadline_ms; /* CLOCK_MONOTONIC ms past which every wait gives up (0: none): the
			        * connection phase's total deadline (--connect-timeout) */
	volatile int *intr; /* if set and non-zero after a signal woke a wait: give up (ERR_INTR) */
	int open_errno;    /* errno of a failed conn_open's connect (0: none; conn_stub_hint) */
	int err;           /* sticky error code (err.h) */
	char errstr[ERR_MAX];  /* what went wrong */
};

#define CONN_CONNECT_MS 3000 /* connect(): a listener whose backlog is full drops our SYNs, and
			      * the kernel would retry them for two minutes */
#define CONN_WRITE_MS 3000   /* a peer that reads nothing fills the socket buffer: give up then */

/* Connect to host:port (host NULL = 127.0.0.1) or, if path is set, the unix socket path. */
int conn_open(struct conn *c, const char *host, int port, const char *path);
/* Write all of buf; -1 with err set on failure (or if the peer takes none of it for CONN_WRITE_MS). */
int conn_write(struct conn *c, const void *buf, size_t len);
/* Read what is available, waiting up to timeout_ms (-1 forever) and never past deadline_ms: >0
 * bytes, 0 timeout, -1 error/EOF, past deadline_ms (ERR_TIMEOUT) or interrupted (ERR_INTR). */
ssize_t conn_read(struct conn *c, void *buf, size_t cap, int timeout_ms);
void conn_close(struct conn *c);
/* now_ms() (clock.h): the clock deadline_ms is on. */
long long conn_now_ms(void);
/* Split "HOST:PORT" into host and port; -1 if malformed. */
int conn_parse_hostport(const char *s, char *host, size_t hostcap, int *port);
/* What to do when nothing listens where a gdbstub was expected (open_errno ECONNREFUSED, or
 * ENOENT for a socket path): "; " and the likely fixes -- start QEMU with -gdb (or -s), or open a
 * stub in a running VM with --qmp / --domain -- in out, and 1; else "" and 0. Pure. */
int conn_stub_hint(char *out, size_t cap, int open_errno, const char *host, int port, const char *path);
/* "HOST:PORT" (host NULL = 127.0.0.1) or the socket path, as messages name the endpoint. */
void conn_where(char *out, size_t cap, const char *host, int port, const char *path);

/* Is the far end of a connection being served? Asked of the host's kernel, never of the peer. */
enum { CONN_UNKNOWN = -1, CONN_QUEUED = 0, CONN_ACCEPTED = 1 };
/* CONN_ACCEPTED: the listening process accept()ed it; CONN_QUEUED: it waits in the listener's
 * backlog; CONN_UNKNOWN: cannot tell (the peer is not on this host, or /proc, netlink unusable). */
int conn_peer_state(const struct conn *c);
/* 1 if the listener at host:port (loopback addresses only) or path has accepted a client that is
 * still connected, 0 if not, -1 if that cannot be seen. Connects nowhere, sends nothing. */
int conn_listener_taken(const char *host, int port, const char *path);

/* One row of /proc/net/tcp or /proc/net/tcp6. */
struct conn_tcprow {
	char local[48];        /* "0100007F:04D2": address words in hex as the kernel prints them, port */
	char remote[48];       /* the far end, alike */
	unsigned state;        /* TCP state: 1 established, 10 listen */
	unsigned long inode;   /* socket inode; 0 while it waits in a listener's backlog */
};
/* Parse one line of those files (pure); 0, or -1 if it is not a socket row (the header). */
int conn_parse_tcprow(const char *line, struct conn_tcprow *r);
/* One row of /proc/net/unix: the state and inode, and the bound path if any (pure). */
struct conn_unixrow {
	unsigned flags;        /* 0x10000 (__SO_ACCEPTCON): a listening socket */
	unsigned st;           /* socket state: 3 connected, 2 connecting (in a backlog, inode 0) */
	unsigned long inode;   /* socket inode */
	char path[256];        /* the name it is bound to ("" if none) */
};
int conn_parse_unixrow(const char *line, struct conn_unixrow *r);

#endif
