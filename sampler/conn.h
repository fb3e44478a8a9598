/* conn.h: byte transport to the gdbstub -- TCP (TCP_NODELAY) or a unix socket. */
#ifndef CONN_H
#define CONN_H
#include <stddef.h>
#include <sys/types.h>

struct conn {
	int fd;            /* connected socket, -1 when closed */
	int loopback;      /* 1 if the peer is a loopback address or a unix socket */
	char where[128];   /* "127.0.0.1:1234" or the socket path, for messages */
	int err;           /* sticky error code (err.h) */
	char errstr[128];  /* what went wrong */
};

/* Connect to host:port (host NULL = 127.0.0.1) or, if path is set, the unix socket path. */
int conn_open(struct conn *c, const char *host, int port, const char *path);
/* Write all of buf; -1 with err set on failure. */
int conn_write(struct conn *c, const void *buf, size_t len);
/* Read what is available, waiting up to timeout_ms (-1 forever): >0 bytes, 0 timeout, -1 error/EOF. */
ssize_t conn_read(struct conn *c, void *buf, size_t cap, int timeout_ms);
void conn_close(struct conn *c);
/* Split "HOST:PORT" into host and port; -1 if malformed. */
int conn_parse_hostport(const char *s, char *host, size_t hostcap, int *port);

#endif
