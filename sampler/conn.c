/* conn.c: byte transport to the gdbstub -- TCP with TCP_NODELAY, or a unix socket. */
#include "conn.h"
#include "err.h"
#include <arpa/inet.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

static int is_loopback(const struct sockaddr *sa)
{
	if (sa->sa_family == AF_INET)
		return (ntohl(((const struct sockaddr_in *)sa)->sin_addr.s_addr) >> 24) == 127;
	if (sa->sa_family == AF_INET6) {
		const struct in6_addr *a = &((const struct sockaddr_in6 *)sa)->sin6_addr;
		return IN6_IS_ADDR_LOOPBACK(a) ||
		       (IN6_IS_ADDR_V4MAPPED(a) && a->s6_addr[12] == 127);
	}
	return 0;
}

static int open_unix(struct conn *c, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sun.sun_path) {
		ERR_SET(c, ERR_USAGE, "socket path too long: %s", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (c->fd < 0 || connect(c->fd, (struct sockaddr *)&sun, sizeof sun) < 0) {
		ERR_SET(c, ERR_SYS, "cannot connect to %s: %s", path, strerror(errno));
		return -1;
	}
	c->loopback = 1;
	snprintf(c->where, sizeof c->where, "%s", path);
	return 0;
}

static int open_tcp(struct conn *c, const char *host, int port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;
	char portstr[16];
	snprintf(portstr, sizeof portstr, "%d", port);
	snprintf(c->where, sizeof c->where, "%s:%d", host, port);
	int rc = getaddrinfo(host, portstr, &hints, &res);
	if (rc) {
		ERR_SET(c, ERR_SYS, "cannot resolve %s: %s", host, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		c->fd = socket(ai->ai_family, ai->ai_socktype | SOCK_CLOEXEC, ai->ai_protocol);
		if (c->fd < 0) continue;
		if (connect(c->fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
		close(c->fd);
		c->fd = -1;
	}
	if (!ai) {
		ERR_SET(c, ERR_SYS, "cannot connect to %s: %s", c->where, strerror(errno));
		freeaddrinfo(res);
		return -1;
	}
	c->loopback = is_loopback(ai->ai_addr);
	freeaddrinfo(res);
	int one = 1; /* every sample is a tiny request/answer exchange: never wait for Nagle */
	setsockopt(c->fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
	return 0;
}

int conn_open(struct conn *c, const char *host, int port, const char *path)
{
	c->fd = -1;
	c->loopback = 0;
	if (path) return open_unix(c, path);
	return open_tcp(c, host ? host : "127.0.0.1", port);
}

int conn_write(struct conn *c, const void *buf, size_t len)
{
	const char *p = buf;
	while (len) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL);
		if (n < 0 && errno == EINTR) continue;
		if (n < 0) {
			ERR_SET(c, errno == EPIPE || errno == ECONNRESET ? ERR_EOF : ERR_SYS,
				"write to %s: %s", c->where, strerror(errno));
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

ssize_t conn_read(struct conn *c, void *buf, size_t cap, int timeout_ms)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	for (;;) {
		int r = poll(&pfd, 1, timeout_ms);
		if (r < 0 && errno == EINTR) continue; /* signals only set flags; the caller re-checks */
		if (r < 0) {
			ERR_SET(c, ERR_SYS, "poll: %s", strerror(errno));
			return -1;
		}
		if (r == 0) return 0;
		ssize_t n = recv(c->fd, buf, cap, 0);
		if (n < 0 && errno == EINTR) continue;
		if (n < 0 || n == 0) {
			ERR_SET(c, ERR_EOF, "connection to %s closed%s%s", c->where, n ? ": " : "",
				n ? strerror(errno) : "");
			return -1;
		}
		return n;
	}
}

void conn_close(struct conn *c)
{
	if (c->fd >= 0) close(c->fd);
	c->fd = -1;
}

int conn_parse_hostport(const char *s, char *host, size_t hostcap, int *port)
{
	const char *colon = strrchr(s, ':');
	char *end;
	if (!colon || colon == s || (size_t)(colon - s) >= hostcap) return -1;
	long p = strtol(colon + 1, &end, 10);
	if (*end || colon[1] == 0 || p < 1 || p > 65535) return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') { /* [::1]:1234 */
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = 0;
	}
	*port = (int)p;
	return 0;
}
