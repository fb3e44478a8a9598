/* SPDX-License-Identifier: MIT */
/* guard.c: a forked guard that resumes the guest if gdbsample dies while the VM is stopped. */
#include "guard.h"
#include "wirelog.h"
#include "clock.h"
#include "err.h"
#include "rsp.h"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/*
 * The guard blocks reading a pipe whose only write end the parent holds. When the parent dies,
 * however it dies (SIGKILL included), the kernel closes that end and the read returns 0. If the
 * parent may have left the VM stopped (in_flight), the guard writes "+ 0x03 $c#63" on the shared
 * socket. QEMU 7.2 treats bytes so: while its last reply is unacknowledged, '+' clears it and any
 * byte but '$' is dropped; otherwise any byte to a running VM stops it (and is eaten), and 0x03
 * to a stopped VM is ignored. So, whatever state the parent left:
 *   stopped, reply pending:  '+' clears it, 0x03 is ignored, c resumes;
 *   running, nothing pending (just after `c`): '+' stops the VM, 0x03 is dropped, c resumes;
 *   running, reply pending (our D;1 was answered): '+' clears, 0x03 stops, c resumes.
 * It is `c` and not D;1 because after a detach on the same connection QEMU 7.2 crashes
 * (SIGSEGV) on D;1 or `?` once the VM is stopped again, and the parent may die just after its
 * own D;1; `c` resumes in every state (checked), and closing the socket then leaves it running.
 * QEMU >= 8.1 stops only on 0x03 and stops silently on other bytes: `c` still resumes.
 * With --qmp/--domain the guard then also closes the gdbstub gdbsample opened (attach_rescue):
 * it reconnects to the QMP socket (free now that its parent is gone) or runs virsh.
 * A parent write is one send() of a few hundred bytes, which the kernel queues whole, so a
 * packet is never left half-sent by a kill.
 */
/*
 * The pause watchdog. While the VM may be stopped by us (state STOPPED, since_ns set by
 * guard_enter), the guard wakes every WATCH_MS; if the stop has lasted longer than max_pause_ns
 * -- gdbsample stopped by SIGSTOP or a debugger, or starved by the host -- it resumes the VM as
 * above. The two processes agree through one shared word, generation << 8 | state, changed only
 * by compare-and-swap, never through a lock: either may be stopped at any instruction (a SIGSTOP
 * lands on gdbsample whenever it likes), and a lock held by a stopped gdbsample would hold the
 * guard too -- the guest paused for as long as gdbsample is (seen: 2% of SIGSTOPs at -r 10000).
 *
 *   parent, around each write:  STOPPED -> WRITING, send(), WRITING -> STOPPED
 *   guard, past the limit:      STOPPED -> RESCUING, resume, -> RESCUED
 *                               WRITING -> RACING,   resume, -> RACED
 *
 * RESCUED: the parent refuses every later write (a `c` after the guard's `c` would stop a QEMU
 * 7.2 VM again); the replies to its last batch were read before it writes again, so the stream
 * holds nothing stale and sampling goes on once it acknowledges. RACED: the parent was stopped
 * inside a write, which may have landed before or after the guard's bytes; it sees RACED as the
 * write ends and resumes the VM itself with the same bytes, which resume from every state
 * (gdb_resync), then drains the stream. Each side's send() is one call of a few bytes, queued
 * whole by the kernel, so the two never interleave within a packet.
 */
#define WATCH_MS 50          /* how often the watchdog looks */
#define DRAIN_MS 100         /* after a resume, drain replies until none came for this long ... */
#define DRAIN_MAX_MS 2000    /* ... and at most this long in all (a stub that never stops talking) */
#define DRAIN_RESUMES 4      /* SIGTRAP stops after our resume resumed again (drain) */
#define STATE(w) ((int)((w) & 0xff))
#define WITH(w, st) (((w) & ~(uint64_t)0xff) | (uint64_t)(st))

static uint64_t load(struct guard_shared *sh)
{
	return __atomic_load_n(&sh->word, __ATOMIC_SEQ_CST);
}

static int cas(struct guard_shared *sh, uint64_t from, uint64_t to)
{
	return __atomic_compare_exchange_n(&sh->word, &from, to, 0, __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST);
}

static void resume(int sockfd, const char *pkt, struct guard_shared *sh);
static void drain(int sockfd, const char *pkt, struct guard_shared *sh);

int guard_claim(struct guard_shared *sh, int64_t now)
{
	uint64_t w = load(sh);
	int st = STATE(w);
	int64_t since = __atomic_load_n(&sh->since_ns, __ATOMIC_SEQ_CST);
	if ((st != GUARD_STOPPED && st != GUARD_WRITING) || !since || !sh->max_pause_ns ||
	    now - since <= sh->max_pause_ns)
		return 0;
	if (!cas(sh, w, WITH(w, st == GUARD_STOPPED ? GUARD_RESCUING : GUARD_RACING)))
		return 0; /* it moved on meanwhile: look again next time */
	if (now - since > sh->longest_ns) sh->longest_ns = now - since;
	sh->rescued_at_ns = now;
	__atomic_add_fetch(&sh->rescues, 1, __ATOMIC_SEQ_CST);
	return 1;
}

void guard_claimed(struct guard_shared *sh)
{
	uint64_t w = load(sh); /* only the guard leaves RESCUING / RACING */
	__atomic_store_n(&sh->word, WITH(w, STATE(w) == GUARD_RESCUING ? GUARD_RESCUED : GUARD_RACED),
			 __ATOMIC_SEQ_CST);
}

/* Resume the VM if the current stop has outlasted the limit. */
static void watch(int sockfd, const char *pkt, struct guard_shared *sh)
{
	if (!guard_claim(sh, now_ns())) return;
	resume(sockfd, pkt, sh);
	guard_claimed(sh);
}

static void guard_main(int rfd, int sockfd, const char *pkt, struct guard_shared *sh, void (*rescue)(void *, int),
		       void *arg)
{
	char b;
	setsid(); /* out of gdbsample's process group: a group signal must not take us along */
	signal(SIGINT, SIG_IGN);  /* Ctrl-C reaches the whole process group; the parent handles it */
	signal(SIGTERM, SIG_IGN); /* we leave when the parent is gone, not before */
	signal(SIGHUP, SIG_IGN);
	signal(SIGPIPE, SIG_IGN);
	int null = open("/dev/null", O_RDWR); /* hold no pipe of the parent's caller open */
	if (null >= 0) { dup2(null, 0); dup2(null, 1); dup2(null, 2); if (null > 2) close(null); }
	for (;;) {
		struct pollfd p = { .fd = rfd, .events = POLLIN };
		int r = poll(&p, 1, sh->max_pause_ns ? WATCH_MS : -1);
		if (r > 0) {
			ssize_t n = read(rfd, &b, 1);
			if (n == 0 || (n < 0 && errno != EINTR)) break; /* the parent is gone */
		}
		if (sh->max_pause_ns) watch(sockfd, pkt, sh);
	}
	if (sh->done) _exit(0);
	/* The parent is gone: it may have left the VM stopped (STOPPED), died writing (WRITING), or
	 * died before resuming after a raced write (RACED). RESCUED and RUNNING: the VM runs. */
	int st = STATE(load(sh));
	int resumed = st == GUARD_STOPPED || st == GUARD_WRITING || st == GUARD_RACED;
	/* With breakpoints in, a VM left running stops at the next hit with nobody to resume it:
	 * remove them (the bytes resume from every state) whatever the state says. */
	if (__atomic_load_n(&sh->nbp, __ATOMIC_SEQ_CST)) resumed = 1;
	if (resumed) {
		resume(sockfd, pkt, sh);
		drain(sockfd, pkt, sh);
	}
	if (rescue) {
		close(sockfd); /* drop our end of the gdb connection before the stub is closed */
		rescue(arg, resumed || st == GUARD_RESCUED);
	}
	_exit(0);
}

size_t guard_resume_bytes(const struct guard_shared *sh, const char *pkt, char *out, size_t cap)
{
	size_t off = 2, n = strlen(pkt);
	int nbp = __atomic_load_n(&sh->nbp, __ATOMIC_SEQ_CST);
	if (cap < 2) return 0;
	out[0] = '+';
	out[1] = 0x03;
	for (int i = 0; i < nbp && i < GUARD_BP_MAX; i++) { /* with the VM stopped by the byte before */
		char z[48];
		snprintf(z, sizeof z, "z0,%llx,%x", (unsigned long long)sh->bp[i], sh->bp_kind);
		if (rsp_append(out, cap, &off, z) < 0) return 0;
	}
	if (off + n > cap) return 0;
	memcpy(out + off, pkt, n);
	return off + n;
}

static void resume(int sockfd, const char *pkt, struct guard_shared *sh)
{
	char out[GUARD_BP_MAX * 40 + 64];
	size_t n = guard_resume_bytes(sh, pkt, out, sizeof out);
	if (!n) return; /* cannot happen: out holds GUARD_BP_MAX packets */
	if (send(sockfd, out, n, MSG_NOSIGNAL | MSG_DONTWAIT) < 0) return;
	wirelog("guard", '>', out, n);
	if (__atomic_load_n(&sh->nbp, __ATOMIC_SEQ_CST)) __atomic_add_fetch(&sh->bp_removed, 1, __ATOMIC_SEQ_CST);
}

void guard_breakpoints(struct guard *g, const uint64_t *addr, int n, int kind)
{
	if (!g->sh) return;
	if (n > GUARD_BP_MAX) n = GUARD_BP_MAX;
	__atomic_store_n(&g->sh->nbp, 0, __ATOMIC_SEQ_CST); /* never a half-written list in force */
	for (int i = 0; i < n; i++) g->sh->bp[i] = addr[i];
	g->sh->bp_kind = kind;
	__atomic_store_n(&g->sh->nbp, n, __ATOMIC_SEQ_CST);
}

int guard_stop_is_trap(const char *pkt, size_t len)
{
	return len >= 3 && (pkt[0] == 'T' || pkt[0] == 'S') && pkt[1] == '0' && pkt[2] == '5';
}

/* After the parent is gone: drain what QEMU still sends for a while, so it is never blocked
 * writing to a full socket, but never forever. A SIGTRAP stop reply in it is a single step of
 * the parent's that ended after our resume (killed inside a `count` hit's step-over: seen beside
 * hogs, the VM stopped for good): resume again, a few times at most. An operator's `stop` says
 * SIGINT, and is left alone. */
static void drain(int sockfd, const char *pkt, struct guard_shared *sh)
{
	struct pollfd p = { .fd = sockfd, .events = POLLIN };
	static struct rsp_dec dec;
	char sink[4096];
	int64_t end = now_ns() + DRAIN_MAX_MS * 1000000LL;
	int again = 0;
	ssize_t n;
	rsp_dec_init(&dec);
	while (now_ns() < end && poll(&p, 1, DRAIN_MS) > 0 && (n = recv(sockfd, sink, sizeof sink, MSG_DONTWAIT)) > 0) {
		wirelog("guard", '<', sink, (size_t)n);
		for (size_t off = 0, used; off < (size_t)n; off += used)
			if (rsp_feed(&dec, (const uint8_t *)sink + off, (size_t)n - off, &used) == RSP_PACKET &&
			    guard_stop_is_trap(dec.pkt, dec.len) && again < DRAIN_RESUMES) {
				again++;
				resume(sockfd, pkt, sh);
			}
	}
}

/* What the guard tells the parent after connecting: the connection (its fd rides along as
 * SCM_RIGHTS), or why there is none. */
struct handover {
	int ok;                     /* 1: connected */
	struct conn conn;           /* the connection (fd replaced by the received one) */
	int err;                    /* else gdb_connect's error */
	char errstr[ERR_MAX];
};

static int send_handover(int sock, const struct handover *h, int fd)
{
	struct iovec iov = { (void *)h, sizeof *h };
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1 };
	if (fd >= 0) {
		m.msg_control = u.buf;
		m.msg_controllen = sizeof u.buf;
		struct cmsghdr *c = CMSG_FIRSTHDR(&m);
		c->cmsg_level = SOL_SOCKET;
		c->cmsg_type = SCM_RIGHTS;
		c->cmsg_len = CMSG_LEN(sizeof(int));
		memcpy(CMSG_DATA(c), &fd, sizeof fd);
	}
	return sendmsg(sock, &m, MSG_NOSIGNAL) == (ssize_t)sizeof *h ? 0 : -1;
}

/* -1: nothing (or garbage) came; -2: deadline_ms passed; -3: *intr was set by a signal. */
static int recv_handover(int sock, struct handover *h, int *fd, long long deadline_ms, volatile sig_atomic_t *intr)
{
	struct iovec iov = { h, sizeof *h };
	union { char buf[CMSG_SPACE(sizeof(int))]; struct cmsghdr align; } u;
	struct msghdr m = { .msg_iov = &iov, .msg_iovlen = 1, .msg_control = u.buf, .msg_controllen = sizeof u.buf };
	*fd = -1;
	ssize_t n;
	for (;;) {
		if (intr && *intr) return -3;
		long long left = deadline_ms > 0 ? deadline_ms - now_ns() / 1000000 : -1;
		if (deadline_ms > 0 && left <= 0) return -2;
		struct pollfd p = { .fd = sock, .events = POLLIN };
		int r = poll(&p, 1, left < 0 ? -1 : left > 1000000 ? 1000000 : (int)left);
		if (r < 0 && errno == EINTR) continue;
		if (r != 0) break;
	}
	while ((n = recvmsg(sock, &m, MSG_CMSG_CLOEXEC)) < 0 && errno == EINTR) {}
	if (n != (ssize_t)sizeof *h) return -1;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&m); c; c = CMSG_NXTHDR(&m, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) memcpy(fd, CMSG_DATA(c), sizeof *fd);
	return 0;
}

int guard_start(struct guard *g, struct gdb *gdb, const char *host, int port, const char *path,
		const char *resume_pkt, int64_t max_pause_ns, void (*rescue)(void *, int), void *arg,
		long long deadline_ms, volatile sig_atomic_t *intr)
{
	int fds[2], sp[2];
	memset(g, 0, sizeof *g);
	memset(gdb, 0, sizeof *gdb);
	rsp_dec_init(&gdb->dec);
	gdb->conn.fd = -1;
	g->sh = mmap(NULL, sizeof *g->sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g->sh == MAP_FAILED || pipe(fds) < 0 || socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sp) < 0) {
		g->sh = NULL;
		ERR_SET(g, ERR_SYS, "guard: %s", strerror(errno));
		return -1;
	}
	g->sh->word = GUARD_STOPPED; /* connecting stops the VM; since_ns 0: no watchdog yet */
	g->sh->max_pause_ns = max_pause_ns;
	pid_t pid = fork();
	if (pid < 0) {
		ERR_SET(g, ERR_SYS, "guard: fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		static struct gdb mine;            /* the guard's own view of the connection */
		static struct handover h;
		setsid();                          /* first: from here on a group signal misses us */
		/* A name of its own: `killall gdbsample` and `pkill gdbsample` (which match the process
		 * name, comm) must not take the guard along with the gdbsample it covers. Shorter than
		 * 15 bytes: killall compares argv[0] -- still "gdbsample" -- when comm is exactly 15,
		 * possibly truncated, bytes long. */
		prctl(PR_SET_NAME, GUARD_COMM, 0, 0, 0);
		close(fds[1]);
		close(sp[0]);
		h.ok = gdb_connect(&mine, host, port, path) == 0;
		h.conn = mine.conn;
		h.err = mine.err;
		snprintf(h.errstr, sizeof h.errstr, "%s", mine.errstr);
		/* If the parent is gone already, the handover fails -- but connecting stopped the VM:
		 * carry on, find the parent gone, and resume it. */
		send_handover(sp[1], &h, h.ok ? mine.conn.fd : -1);
		if (!h.ok) _exit(0);
		close(sp[1]);
		for (int fd = 3; fd < 1024; fd++) /* keep only the socket and the pipe */
			if (fd != fds[0] && fd != mine.conn.fd) close(fd);
		guard_main(fds[0], mine.conn.fd, resume_pkt, g->sh, rescue, arg);
	}
	close(fds[0]);
	close(sp[1]);
	g->pid = pid;
	g->pipe_w = fds[1];
	struct handover h;
	int fd, rc = recv_handover(sp[0], &h, &fd, deadline_ms, intr);
	close(sp[0]);
	if (rc <= -2) {
		/* Still connecting (each step of it is bounded): leave it to finish alone. Our pipe's
		 * end closes, so it finds us gone and resumes the VM if connecting stopped it. Not
		 * waited for: it is in a session of its own and is reaped by init. */
		close(g->pipe_w);
		g->pid = 0;
		ERR_SET(gdb, rc == -2 ? ERR_TIMEOUT : ERR_INTR, rc == -2 ? "no connection to the gdbstub within the "
			"connect timeout (--connect-timeout)" : "interrupted by a signal while connecting");
		ERR_SET(g, ERR_SYS, "%s", gdb->errstr);
		return -1;
	}
	if (rc < 0 || !h.ok || fd < 0) {
		if (fd >= 0) close(fd);
		guard_finish(g, 1); /* nothing is stopped: let it go */
		if (rc < 0) ERR_SET(gdb, ERR_SYS, "guard: no connection from it");
		else ERR_SET(gdb, h.err ? h.err : ERR_SYS, "%s", h.errstr);
		ERR_SET(g, ERR_SYS, "%s", gdb->errstr);
		return -1;
	}
	gdb->conn = h.conn;
	gdb->conn.fd = fd;
	return 0;
}

/* Wait (bounded) while the guard is in the middle of a rescue; the word once it is not. */
static uint64_t settled(struct guard_shared *sh)
{
	uint64_t w = load(sh);
	for (int i = 0; i < 2000 && (STATE(w) == GUARD_RESCUING || STATE(w) == GUARD_RACING); i++) {
		struct timespec ms = { 0, 1000000 };
		nanosleep(&ms, NULL);
		w = load(sh);
	}
	return w;
}

void guard_enter(struct guard *g)
{
	if (!g->sh) return;
	/* A new generation in STOPPED; an unacknowledged rescue stays (the next write is refused). */
	for (;;) {
		uint64_t w = settled(g->sh);
		int st = STATE(w);
		if (st == GUARD_RESCUED || st == GUARD_RACED || st == GUARD_RESCUING || st == GUARD_RACING) return;
		__atomic_store_n(&g->sh->since_ns, now_ns(), __ATOMIC_SEQ_CST);
		if (cas(g->sh, w, ((w >> 8) + 1) << 8 | GUARD_STOPPED)) return;
	}
}

void guard_arm(struct guard *g)
{
	if (!g->sh) return;
	uint64_t w = load(g->sh);
	if (STATE(w) == GUARD_STOPPED && (w >> 8) == 0 && !__atomic_load_n(&g->sh->since_ns, __ATOMIC_SEQ_CST))
		__atomic_store_n(&g->sh->since_ns, now_ns(), __ATOMIC_SEQ_CST);
}

void guard_leave(struct guard *g)
{
	if (!g->sh) return;
	uint64_t w = load(g->sh);
	if (STATE(w) == GUARD_STOPPED) cas(g->sh, w, WITH(w, GUARD_RUNNING)); /* else a rescue: kept */
}

int guard_gate(void *arg, int enter)
{
	struct guard *g = arg;
	if (!g->sh) return 0;
	if (enter) {
		for (;;) {
			uint64_t w = load(g->sh);
			int st = STATE(w);
			if (st == GUARD_RUNNING) return 0; /* no watchdog runs: nothing to mark */
			if (st != GUARD_STOPPED) return -1; /* rescued (or being rescued): write nothing */
			if (cas(g->sh, w, WITH(w, GUARD_WRITING))) {
				g->writing = 1;
				return 0;
			}
		}
	}
	if (!g->writing) return 0;
	g->writing = 0;
	for (;;) {
		uint64_t w = settled(g->sh);
		if (STATE(w) != GUARD_WRITING) return -1; /* RACED: the guard resumed the VM meanwhile */
		if (cas(g->sh, w, WITH(w, GUARD_STOPPED))) return 0;
	}
}

uint64_t guard_acknowledge(struct guard *g)
{
	if (!g->sh) return 0;
	uint64_t w = settled(g->sh);
	if (STATE(w) == GUARD_RESCUED || STATE(w) == GUARD_RACED) cas(g->sh, w, WITH(w, GUARD_RUNNING));
	g->seen = g->sh->rescues;
	return g->seen;
}

void guard_finish(struct guard *g, int clean)
{
	if (!g->pid) return;
	if (clean) __atomic_store_n(&g->sh->done, 1, __ATOMIC_SEQ_CST);
	close(g->pipe_w);
	waitpid(g->pid, NULL, 0);
	g->pid = 0;
}
