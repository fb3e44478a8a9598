/* SPDX-License-Identifier: MIT */
/* conn.c: byte transport to the gdbstub -- TCP with TCP_NODELAY, or a unix socket -- with bounded
 * connects and writes, and what the host's kernel says about the far end. */
#include "conn.h"
#include "clock.h"
#include "textnum.h"
#include "err.h"
#include "wirelog.h"
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>
#include <linux/sock_diag.h>
#include <linux/unix_diag.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <stdint.h>
#include <stdlib.h>
#include <strings.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

long long conn_now_ms(void)
{
	return now_ms();
}

/* Milliseconds left until deadline (-1: none), never negative. */
static int left_ms(long long deadline)
{
	if (deadline < 0) return -1;
	long long l = deadline - now_ms();
	return l < 0 ? 0 : l > 1000000000 ? 1000000000 : (int)l;
}

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

/* connect() that gives up after CONN_CONNECT_MS; 0, or -1 with errno set. The socket is left in
 * blocking mode (the guard shares it). */
static int connect_bounded(int fd, const struct sockaddr *sa, socklen_t len)
{
	int fl = fcntl(fd, F_GETFL);
	if (fl < 0 || fcntl(fd, F_SETFL, fl | O_NONBLOCK) < 0) return -1;
	int rc = connect(fd, sa, len);
	if (rc < 0 && errno == EINPROGRESS) {
		struct pollfd p = { .fd = fd, .events = POLLOUT };
		long long deadline = now_ms() + CONN_CONNECT_MS;
		int r;
		while ((r = poll(&p, 1, left_ms(deadline))) < 0 && errno == EINTR) {}
		int soerr = 0;
		socklen_t sl = sizeof soerr;
		if (r == 0) errno = ETIMEDOUT;
		else if (r > 0 && getsockopt(fd, SOL_SOCKET, SO_ERROR, &soerr, &sl) == 0) errno = soerr;
		rc = r > 0 && soerr == 0 ? 0 : -1;
	}
	int saved = errno;
	fcntl(fd, F_SETFL, fl);
	errno = saved;
	return rc;
}

static int open_unix(struct conn *c, const char *path)
{
	struct sockaddr_un sun = { .sun_family = AF_UNIX };
	if (strlen(path) >= sizeof sun.sun_path) {
		ERR_SET(c, ERR_USAGE, "socket path too long: %s", path);
		return -1;
	}
	strcpy(sun.sun_path, path);
	snprintf(c->where, sizeof c->where, "%s", path);
	c->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	/* A unix listener with a full backlog refuses a non-blocking connect with EAGAIN. */
	if (c->fd < 0 || connect_bounded(c->fd, (struct sockaddr *)&sun, sizeof sun) < 0) {
		c->open_errno = errno;
		ERR_SET(c, ERR_SYS, "cannot connect to %s: %s", path,
			errno == EAGAIN ? "its backlog is full (busy with other clients)" : strerror(errno));
		return -1;
	}
	c->loopback = 1;
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
		if (connect_bounded(c->fd, ai->ai_addr, ai->ai_addrlen) == 0) break;
		int saved = errno;
		close(c->fd);
		c->fd = -1;
		errno = saved;
	}
	if (!ai) {
		c->open_errno = errno;
		ERR_SET(c, ERR_SYS, "cannot connect to %s: %s", c->where,
			errno == ETIMEDOUT ? "no answer (its backlog is full, or a firewall drops it)" : strerror(errno));
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
	c->open_errno = 0;
	if (path) return open_unix(c, path);
	return open_tcp(c, host ? host : "127.0.0.1", port);
}

int conn_write(struct conn *c, const void *buf, size_t len)
{
	const char *p = buf;
	long long deadline = -1;
	while (len) {
		ssize_t n = send(c->fd, p, len, MSG_NOSIGNAL | MSG_DONTWAIT);
		if (n < 0 && errno == EINTR) continue;
		if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
			/* The socket buffer is full: the peer is not reading. Wait for room, boundedly. */
			struct pollfd pfd = { .fd = c->fd, .events = POLLOUT };
			if (deadline < 0) deadline = now_ms() + CONN_WRITE_MS;
			int r = poll(&pfd, 1, left_ms(deadline));
			if (r < 0 && errno != EINTR) {
				ERR_SET(c, ERR_SYS, "poll: %s", strerror(errno));
				return -1;
			}
			if (r == 0) {
				ERR_SET(c, ERR_TIMEOUT, "write to %s: the peer reads nothing (%d s)", c->where,
					CONN_WRITE_MS / 1000);
				return -1;
			}
			continue;
		}
		if (n < 0) {
			ERR_SET(c, errno == EPIPE || errno == ECONNRESET ? ERR_EOF : ERR_SYS,
				"write to %s: %s", c->where, strerror(errno));
			return -1;
		}
		wirelog(c->where, '>', p, (size_t)n);
		p += n;
		len -= (size_t)n;
		deadline = -1;
	}
	return 0;
}

ssize_t conn_read(struct conn *c, void *buf, size_t cap, int timeout_ms)
{
	struct pollfd pfd = { .fd = c->fd, .events = POLLIN };
	long long deadline = timeout_ms < 0 ? -1 : now_ms() + timeout_ms;
	int total = c->deadline_ms > 0 && (deadline < 0 || c->deadline_ms < deadline);
	if (total) deadline = c->deadline_ms;
	for (;;) {
		/* Looked at before each wait, not only when one is interrupted: a signal that came
		 * while we were busy elsewhere is seen at the next read at the latest. */
		if (c->intr && *c->intr) {
			ERR_SET(c, ERR_INTR, "interrupted by a signal");
			return -1;
		}
		int r = poll(&pfd, 1, left_ms(deadline));
		if (r < 0 && errno == EINTR) continue; /* signals only set flags; re-checked above */
		if (r < 0) {
			ERR_SET(c, ERR_SYS, "poll: %s", strerror(errno));
			return -1;
		}
		if (r == 0 && total) {
			ERR_SET(c, ERR_TIMEOUT, "%s: the connection and handshake took longer than the connect "
				"timeout (--connect-timeout)", c->where);
			return -1;
		}
		if (r == 0) return 0;
		ssize_t n = recv(c->fd, buf, cap, MSG_DONTWAIT);
		if (n < 0 && (errno == EINTR || errno == EAGAIN || errno == EWOULDBLOCK)) continue;
		if (n < 0 || n == 0) {
			ERR_SET(c, ERR_EOF, "connection to %s closed%s%s", c->where, n ? ": " : "",
				n ? strerror(errno) : "");
			return -1;
		}
		wirelog(c->where, '<', buf, (size_t)n);
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
	uint64_t p;
	if (!colon || colon == s || (size_t)(colon - s) >= hostcap) return -1;
	/* digits only: strtol took " 80" and "+80" (found by the issue-22 parser pass) */
	if (textnum_decz(colon + 1, 65535, &p) < 0 || p < 1) return -1;
	memcpy(host, s, (size_t)(colon - s));
	host[colon - s] = 0;
	if (host[0] == '[' && host[strlen(host) - 1] == ']') { /* [::1]:1234 */
		memmove(host, host + 1, strlen(host));
		host[strlen(host) - 1] = 0;
	}
	*port = (int)p;
	return 0;
}

int conn_stub_hint(char *out, size_t cap, int open_errno, const char *host, int port, const char *path)
{
	out[0] = 0;
	if (open_errno != ECONNREFUSED && !(path && open_errno == ENOENT)) return 0;
	char gdb[300];
	if (path) snprintf(gdb, sizeof gdb, "-gdb unix:%s,server=on,wait=off", path);
	else if (port == 1234) snprintf(gdb, sizeof gdb, "-gdb tcp:%s:%d (or -s)", host ? host : "127.0.0.1", port);
	else snprintf(gdb, sizeof gdb, "-gdb tcp:%s:%d", host ? host : "127.0.0.1", port);
	snprintf(out, cap, "; no gdbstub listens there: start QEMU with %s, or let gdbsample open one in a "
		 "running VM with --qmp QMP-SOCKET or --domain NAME (libvirt)", gdb);
	return 1;
}

void conn_where(char *out, size_t cap, const char *host, int port, const char *path)
{
	if (path) snprintf(out, cap, "%s", path);
	else snprintf(out, cap, "%s:%d", host ? host : "127.0.0.1", port);
}

/* ---- the far end, as the host's kernel lists it ---- */

/*
 * /proc/net/tcp and tcp6 (Linux Documentation/networking/proc_net_tcp.rst), one socket a line:
 *   "  sl  local_address rem_address   st tx_queue:rx_queue tr:tm->when retrnsmt   uid  timeout inode ..."
 *   "   0: 0100007F:04D2 0100007F:9C40 01 00000000:00000000 00:00000000 00000000  1000        0 123456 ..."
 * Addresses are the 32-bit words of the address as stored, each printed "%08X" (so 127.0.0.1 is
 * 0100007F on a little-endian host), then ":" and the port in hex. A connection a listener has
 * not accept()ed yet sits in its backlog with inode 0: no process holds a file for it.
 * /proc/net/unix ("Num RefCount Protocol Flags Type St Inode Path"): a connection waiting in a
 * backlog shows St 02 and inode 0; the server's end of an accepted one St 03 with the listener's
 * path (the client's end has no path).
 */
int conn_parse_tcprow(const char *line, struct conn_tcprow *r)
{
	unsigned sl;
	if (sscanf(line, " %u: %47[0-9A-Fa-f:] %47[0-9A-Fa-f:] %x %*s %*s %*s %*u %*u %lu", &sl, r->local,
		   r->remote, &r->state, &r->inode) != 5)
		return -1;
	return 0;
}

int conn_parse_unixrow(const char *line, struct conn_unixrow *r)
{
	int n = 0;
	unsigned type;
	r->path[0] = 0;
	if (sscanf(line, "%*[0-9a-fA-F]: %*x %*x %x %x %x %lu%n", &r->flags, &type, &r->st, &r->inode, &n) != 4)
		return -1;
	const char *p = line + n;
	while (*p == ' ') p++;
	size_t l = strcspn(p, "\n");
	if (l >= sizeof r->path) l = sizeof r->path - 1;
	memcpy(r->path, p, l);
	r->path[l] = 0;
	return 0;
}

/* An address as /proc/net/tcp (v4 = 0) or tcp6 (v4 = 0, AF_INET given as ::ffff:a.b.c.d) prints
 * it; -1 if it cannot appear there. */
static int proc_addr(const struct sockaddr *sa, int v6file, char *out, size_t cap)
{
	uint32_t w[4];
	int port;
	if (sa->sa_family == AF_INET) {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;
		port = ntohs(in->sin_port);
		if (!v6file) {
			memcpy(w, &in->sin_addr, 4);
			snprintf(out, cap, "%08X:%04X", w[0], port);
			return 0;
		}
		uint8_t m[16] = { [10] = 0xff, [11] = 0xff };
		memcpy(m + 12, &in->sin_addr, 4);
		memcpy(w, m, 16);
	} else if (sa->sa_family == AF_INET6 && v6file) {
		const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)sa;
		port = ntohs(in6->sin6_port);
		memcpy(w, &in6->sin6_addr, 16);
	} else {
		return -1;
	}
	snprintf(out, cap, "%08X%08X%08X%08X:%04X", w[0], w[1], w[2], w[3], port);
	return 0;
}

/* Look for established TCP rows whose local end is `local` (and far end `remote`, if given):
 * the inode of the first match (with remote NULL, the first accepted one), or -1 if none. */
static long find_tcp(const struct sockaddr *local, const struct sockaddr *remote)
{
	static const char *const files[2] = { "/proc/net/tcp", "/proc/net/tcp6" };
	long found = -1;
	for (int v6 = 0; v6 < 2 && found <= 0; v6++) {
		char l[64], r[64], line[512];
		struct conn_tcprow row;
		if (proc_addr(local, v6, l, sizeof l) < 0 || (remote && proc_addr(remote, v6, r, sizeof r) < 0))
			continue;
		FILE *f = fopen(files[v6], "re");
		if (!f) continue;
		while (fgets(line, sizeof line, f)) {
			if (conn_parse_tcprow(line, &row) < 0 || row.state != 1 || strcasecmp(row.local, l) ||
			    (remote && strcasecmp(row.remote, r)))
				continue;
			found = (long)row.inode;
			if (remote || row.inode) break;
		}
		fclose(f);
	}
	return found;
}

/* The inode of the unix socket at the other end of fd, via NETLINK_SOCK_DIAG (linux/unix_diag.h):
 * 0 while it waits in a listener's backlog; -1 if it cannot be asked. */
static long unix_peer_inode(int fd)
{
	struct stat st;
	if (fstat(fd, &st) < 0) return -1;
	int nl = socket(AF_NETLINK, SOCK_DGRAM | SOCK_CLOEXEC, NETLINK_SOCK_DIAG);
	if (nl < 0) return -1;
	struct {
		struct nlmsghdr h;
		struct unix_diag_req r;
	} req = {
		.h = { .nlmsg_len = sizeof req, .nlmsg_type = SOCK_DIAG_BY_FAMILY, .nlmsg_flags = NLM_F_REQUEST },
		.r = { .sdiag_family = AF_UNIX, .udiag_states = ~0u, .udiag_ino = (uint32_t)st.st_ino,
		       .udiag_show = UDIAG_SHOW_PEER, .udiag_cookie = { ~0u, ~0u } },
	};
	long peer = -1;
	union {
		struct nlmsghdr h;
		char b[1024];
	} ans;
	struct pollfd p = { .fd = nl, .events = POLLIN };
	ssize_t n;
	if (send(nl, &req, sizeof req, 0) != (ssize_t)sizeof req || poll(&p, 1, 500) <= 0 ||
	    (n = recv(nl, &ans, sizeof ans, MSG_DONTWAIT)) <= 0)
		goto out;
	for (struct nlmsghdr *h = &ans.h; NLMSG_OK(h, (size_t)n); h = NLMSG_NEXT(h, n)) {
		if (h->nlmsg_type != SOCK_DIAG_BY_FAMILY || h->nlmsg_len < NLMSG_LENGTH(sizeof(struct unix_diag_msg)))
			break;
		struct unix_diag_msg *m = NLMSG_DATA(h);
		if (m->udiag_ino != (uint32_t)st.st_ino) continue;
		int alen = (int)(h->nlmsg_len - NLMSG_LENGTH(sizeof *m));
		for (struct rtattr *a = (struct rtattr *)(m + 1); RTA_OK(a, alen); a = RTA_NEXT(a, alen))
			if (a->rta_type == UNIX_DIAG_PEER && RTA_PAYLOAD(a) >= 4) {
				uint32_t ino;
				memcpy(&ino, RTA_DATA(a), 4);
				peer = ino;
			}
		break;
	}
out:
	close(nl);
	return peer;
}

int conn_peer_state(const struct conn *c)
{
	struct sockaddr_storage me, peer;
	socklen_t ml = sizeof me, pl = sizeof peer;
	if (c->fd < 0 || getsockname(c->fd, (struct sockaddr *)&me, &ml) < 0 ||
	    getpeername(c->fd, (struct sockaddr *)&peer, &pl) < 0)
		return CONN_UNKNOWN;
	long ino;
	if (me.ss_family == AF_UNIX) ino = unix_peer_inode(c->fd);
	else if (c->loopback) ino = find_tcp((struct sockaddr *)&peer, (struct sockaddr *)&me);
	else return CONN_UNKNOWN; /* the server's sockets are on another host */
	return ino < 0 ? CONN_UNKNOWN : ino ? CONN_ACCEPTED : CONN_QUEUED;
}

/* Does the path a unix listener was bound to (as /proc/net/unix shows it) name ours? */
static int same_path(const char *listed, const char *ours, const char *ours_real)
{
	if (!strcmp(listed, ours)) return 1;
	char *r = ours_real ? realpath(listed, NULL) : NULL;
	int same = r && !strcmp(r, ours_real);
	free(r);
	return same;
}

int conn_listener_taken(const char *host, int port, const char *path)
{
	if (path) {
		char line[512], *real = realpath(path, NULL);
		struct conn_unixrow row;
		int taken = 0;
		FILE *f = fopen("/proc/net/unix", "re");
		if (!f) {
			free(real);
			return -1;
		}
		while (!taken && fgets(line, sizeof line, f))
			taken = conn_parse_unixrow(line, &row) == 0 && row.st == 3 && row.inode &&
				!(row.flags & 0x10000) && same_path(row.path, path, real);
		fclose(f);
		free(real);
		return taken;
	}
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
	char portstr[16];
	snprintf(portstr, sizeof portstr, "%d", port);
	if (getaddrinfo(host ? host : "127.0.0.1", portstr, &hints, &res)) return -1;
	int taken = -1;
	for (struct addrinfo *ai = res; ai && taken != 1; ai = ai->ai_next)
		if (is_loopback(ai->ai_addr)) taken = find_tcp(ai->ai_addr, NULL) > 0;
	freeaddrinfo(res);
	return taken;
}
