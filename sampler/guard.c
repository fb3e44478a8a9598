/* guard.c: a forked guard that resumes the guest if gdbsample dies while the VM is stopped. */
#include "guard.h"
#include "err.h"
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
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
static void resume(int sockfd, const char *pkt);

static void guard_main(int rfd, int sockfd, const char *pkt, struct guard_shared *sh, void (*rescue)(void *),
		       void *arg)
{
	char b;
	signal(SIGINT, SIG_IGN);  /* Ctrl-C reaches the whole process group; the parent handles it */
	signal(SIGTERM, SIG_IGN); /* we leave when the parent is gone, not before */
	signal(SIGPIPE, SIG_IGN);
	int null = open("/dev/null", O_RDWR); /* hold no pipe of the parent's caller open */
	if (null >= 0) { dup2(null, 0); dup2(null, 1); dup2(null, 2); if (null > 2) close(null); }
	while (read(rfd, &b, 1) != 0)
		if (errno != EINTR) break;
	if (sh->done) _exit(0);
	if (sh->in_flight) resume(sockfd, pkt);
	if (rescue) {
		close(sockfd); /* drop our end of the gdb connection before the stub is closed */
		rescue(arg);
	}
	_exit(0);
}

static void resume(int sockfd, const char *pkt)
{
	char out[32];
	size_t n = strlen(pkt);
	out[0] = '+';
	out[1] = 0x03;
	memcpy(out + 2, pkt, n);
	if (send(sockfd, out, n + 2, MSG_NOSIGNAL) < 0) return;
	/* Drain replies briefly so QEMU is never blocked writing to a full socket, then leave. */
	struct pollfd p = { .fd = sockfd, .events = POLLIN };
	char sink[4096];
	while (poll(&p, 1, 500) > 0 && recv(sockfd, sink, sizeof sink, 0) > 0) {}
}

int guard_start(struct guard *g, int sockfd, const char *resume_pkt, void (*rescue)(void *), void *arg)
{
	int fds[2];
	memset(g, 0, sizeof *g);
	g->sh = mmap(NULL, sizeof *g->sh, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
	if (g->sh == MAP_FAILED || pipe(fds) < 0) {
		ERR_SET(g, ERR_SYS, "guard: %s", strerror(errno));
		return -1;
	}
	g->sh->in_flight = 1;
	pid_t pid = fork();
	if (pid < 0) {
		ERR_SET(g, ERR_SYS, "guard: fork: %s", strerror(errno));
		return -1;
	}
	if (pid == 0) {
		close(fds[1]);
		for (int fd = 3; fd < 1024; fd++) /* keep only the socket and the pipe */
			if (fd != fds[0] && fd != sockfd) close(fd);
		guard_main(fds[0], sockfd, resume_pkt, g->sh, rescue, arg);
	}
	close(fds[0]);
	g->pid = pid;
	g->pipe_w = fds[1];
	return 0;
}

void guard_enter(struct guard *g)
{
	if (g->sh) __atomic_store_n(&g->sh->in_flight, 1, __ATOMIC_SEQ_CST);
}

void guard_leave(struct guard *g)
{
	if (g->sh) __atomic_store_n(&g->sh->in_flight, 0, __ATOMIC_SEQ_CST);
}

void guard_finish(struct guard *g, int clean)
{
	if (!g->pid) return;
	if (clean) __atomic_store_n(&g->sh->done, 1, __ATOMIC_SEQ_CST);
	close(g->pipe_w);
	waitpid(g->pid, NULL, 0);
	g->pid = 0;
}
