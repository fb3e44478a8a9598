/* SPDX-License-Identifier: MIT */
/* test_gdb.c: the gdbstub client against misbehaving fake stubs (every wait bounded), its pure
 * reply parsers on literals, and the busy-stub checks of the transport on local listeners. */
#include "check.h"
#include "../../sampler/err.h"
#include "../../sampler/gdb.h"
#include "../../sampler/qmp.h"
#include <fcntl.h>
#include <netinet/in.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

/* ---- a hang must fail the test, not freeze the suite ---- */

static const char *running_test = "";

static void on_alarm(int sig)
{
	(void)sig;
	static const char m[] = "test_gdb: FAIL: hung in ";
	if (write(2, m, sizeof m - 1) < 0 || write(2, running_test, strlen(running_test)) < 0 || write(2, "\n", 1) < 0) {}
	_exit(1);
}

/* ---- fake stubs: a forked child answering each request packet through a behaviour ---- */

typedef void behaviour(int fd, const char *req);

static void send_pkt(int fd, const char *payload)
{
	char out[8192];
	out[0] = '+';
	int n = rsp_encode(out + 1, sizeof out - 1, payload, strlen(payload));
	if (n < 0 || write(fd, out, (size_t)n + 1) < 0) _exit(0);
}

static void nap_ms(int ms)
{
	struct timespec ts = { ms / 1000, (long)(ms % 1000) * 1000000 };
	nanosleep(&ts, NULL);
}

static pid_t stub_pid;

/* A client connected to a fresh stub; requests time out after req_ms. */
static struct gdb *stub_start(behaviour *fn, int req_ms)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	stub_pid = fork();
	if (stub_pid == 0) {
		struct rsp_dec d;
		uint8_t in[4096];
		signal(SIGPIPE, SIG_IGN);
		close(sv[0]);
		rsp_dec_init(&d);
		for (;;) {
			ssize_t n = read(sv[1], in, sizeof in);
			if (n <= 0) _exit(0);
			for (size_t off = 0, used; off < (size_t)n; off += used)
				if (rsp_feed(&d, in + off, (size_t)n - off, &used) == RSP_PACKET) fn(sv[1], d.pkt);
		}
	}
	close(sv[1]);
	struct gdb *g = calloc(1, sizeof *g);
	rsp_dec_init(&g->dec);
	g->conn.fd = sv[0];
	strcpy(g->conn.where, "fake");
	g->req_ms = req_ms;
	arch_layout_default(&g->layout, arch_find("x86_64"));
	g->ncpu = 1;
	g->tids[0] = g->pids[0] = 1;
	return g;
}

static void stub_stop(struct gdb *g)
{
	close(g->conn.fd);
	kill(stub_pid, SIGKILL);
	waitpid(stub_pid, NULL, 0);
	free(g);
}

/* Behaviours that never answer, but never fall silent either. */
/* Write the same bytes forever, in writes large enough that the reader always finds more. */
static void flood(int fd, const char *unit, size_t n)
{
	static char buf[1 << 16];
	size_t k = 0;
	while (k + n <= sizeof buf) {
		memcpy(buf + k, unit, n);
		k += n;
	}
	for (;;)
		if (write(fd, buf, k) < 0) _exit(0);
}

static void flood_console(int fd, const char *req)
{
	(void)req;
	flood(fd, "+$O48656c6c6f0a#85", 18); /* "Hello\n" */
}

static void flood_acks(int fd, const char *req)
{
	(void)req;
	flood(fd, "+", 1);
}

static void drip_stops(int fd, const char *req)
{
	(void)req;
	for (;;) { /* a whole stop reply a byte every 100 ms: each well within the timeout */
		static const char s[] = "$S05#b8";
		for (size_t i = 0; i < sizeof s - 1; i++) {
			if (write(fd, s + i, 1) < 0) _exit(0);
			nap_ms(100);
		}
	}
}

static void drip_packet(int fd, const char *req)
{
	(void)req;
	if (write(fd, "+$", 2) < 0) _exit(0);
	for (;;) { /* a reply that never ends, a byte every 100 ms */
		if (write(fd, "0", 1) < 0) _exit(0);
		nap_ms(100);
	}
}

/* A request must fail with a timeout, however the stub keeps talking. */
static void expect_timeout(const char *name, behaviour *fn, int req_ms)
{
	running_test = name;
	struct gdb *g = stub_start(fn, req_ms);
	alarm(30);
	int rc = gdb_request(g, "qC", req_ms);
	alarm(0);
	CHECK(rc == -1 && g->err == ERR_TIMEOUT);
	if (rc != -1 || g->err != ERR_TIMEOUT) fprintf(stderr, "%s: rc %d err %d %s\n", name, rc, g->err, g->errstr);
	stub_stop(g);
}

static void test_hangs(void)
{
	expect_timeout("endless console output", flood_console, 300);
	expect_timeout("endless acks", flood_acks, 300);
	expect_timeout("stop replies dribbled a byte per 100 ms", drip_stops, 1000);
	expect_timeout("a reply dribbled a byte per 100 ms", drip_packet, 300);
}

/* A QMP monitor that sends events forever, one every 20 ms, and never the command's reply:
 * qmp_exec gives up by its deadline (before, each event restarted the wait). */
static void test_qmp_events_forever(void)
{
	int sv[2];
	running_test = "QMP events forever";
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	pid_t pid = fork();
	if (pid == 0) {
		static const char ev[] = "{\"event\": \"RTC_CHANGE\", \"data\": {\"offset\": 1}}\r\n";
		signal(SIGPIPE, SIG_IGN);
		close(sv[0]);
		for (;;) {
			if (write(sv[1], ev, sizeof ev - 1) < 0) _exit(0);
			nap_ms(20);
		}
	}
	close(sv[1]);
	static struct qmp q;
	memset(&q, 0, sizeof q);
	q.conn.fd = sv[0];
	strcpy(q.conn.where, "fake-qmp");
	q.reply_ms = 300;
	alarm(30);
	int rc = qmp_exec(&q, "{\"execute\": \"query-status\"}");
	alarm(0);
	CHECK(rc == -1 && q.err == ERR_TIMEOUT); /* (q.events counts the events skipped meanwhile) */
	if (q.err != ERR_TIMEOUT) fprintf(stderr, "qmp: rc %d err %d events %lu %s\n", rc, q.err, q.events, q.errstr);
	close(sv[0]);
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* ---- handshakes with stubs whose descriptions or thread lists never end ---- */

static const char *xfer_reply = "l<target/>";   /* what qXfer:features:read answers */
static int thread_mode;                          /* qfThreadInfo/qsThreadInfo: see thread_reply */

static void thread_reply(int fd, const char *req)
{
	static int next = 1;
	char r[32];
	switch (thread_mode) {
	case 0: send_pkt(fd, req[1] == 'f' ? "m1" : "l"); return;  /* one vCPU */
	case 1: send_pkt(fd, "m"); return;                          /* an empty "more", forever */
	case 2: send_pkt(fd, "m1"); return;                         /* the same thread, forever */
	default:
		snprintf(r, sizeof r, "m%x", next++);                /* new threads, forever */
		send_pkt(fd, r);
	}
}

static void handshake_stub(int fd, const char *req)
{
	if (!strncmp(req, "qSupported", 10)) send_pkt(fd, "PacketSize=1000;qXfer:features:read+;multiprocess+");
	else if (!strcmp(req, "?")) send_pkt(fd, "T05thread:p01.01;");
	else if (!strncmp(req, "qXfer:features:read:", 20)) send_pkt(fd, xfer_reply);
	else if (strstr(req, "ThreadInfo")) thread_reply(fd, req);
	else send_pkt(fd, "");
}

static char big_m[4001];

/* The handshake fails (no hang, no unbounded memory) and says why. */
static void expect_handshake_error(const char *name, const char *why)
{
	running_test = name;
	struct gdb *g = NULL;
	int rc = 0;
	/* The first reply has a second to come (a busy stub is reported within one): on a starved
	 * host the fake itself can be that late, which is not what this checks -- so again. */
	for (int tries = 0; tries < 5; tries++) {
		if (g) stub_stop(g);
		g = stub_start(handshake_stub, 2000);
		alarm(60);
		rc = gdb_handshake(g);
		alarm(0);
		if (!strstr(g->errstr, "no reply to qSupported")) break;
	}
	CHECK(rc == -1 && strstr(g->errstr, why));
	if (rc != -1 || !strstr(g->errstr, why)) fprintf(stderr, "%s: rc %d: %s\n", name, rc, g->errstr);
	stub_stop(g);
}

static const char x86_target[] =
	"l<target><architecture>i386:x86-64</architecture><xi:include href=\"core.xml\"/></target>";

static void test_handshake_bounds(void)
{
	/* A well-behaved stub first: the same paths succeed. */
	running_test = "good handshake";
	xfer_reply = "l<target><architecture>i386:x86-64</architecture>"
		     "<reg name=\"rbp\" bitsize=\"64\" regnum=\"6\"/><reg name=\"rsp\" bitsize=\"64\"/>"
		     "<reg name=\"rip\" bitsize=\"64\" regnum=\"16\"/></target>";
	thread_mode = 0;
	struct gdb *g = stub_start(handshake_stub, 2000);
	alarm(30);
	CHECK(gdb_handshake(g) == 0);
	alarm(0);
	CHECK(g->ncpu == 1 && g->tids[0] == 1 && g->layout.pc && g->layout.need == 24);
	stub_stop(g);

	memset(big_m, 'a', sizeof big_m - 1);
	big_m[0] = 'm';
	xfer_reply = big_m; /* "m" + 4000 bytes, forever */
	expect_handshake_error("qXfer always answering m", "larger than");
	xfer_reply = "m"; /* "m" with nothing: an end, as gdb reads it */
	expect_handshake_error("qXfer answering an empty m", "names no architecture");
	xfer_reply = "l<target><xi:include href=\"target.xml\"/></target>";
	expect_handshake_error("target.xml including itself", "includes itself");
	xfer_reply = x86_target; /* core.xml is answered with target.xml's text: a cycle through two */
	expect_handshake_error("an include cycle", "includes itself");

	xfer_reply = "l<target><architecture>i386:x86-64</architecture><reg name=\"rbp\" bitsize=\"64\"/>"
		     "<reg name=\"rsp\" bitsize=\"64\"/><reg name=\"rip\" bitsize=\"64\"/></target>";
	thread_mode = 1;
	expect_handshake_error("thread list of empty m forever", "bad thread list");
	thread_mode = 2;
	expect_handshake_error("thread list repeating m1 forever", "repeating thread list");
	thread_mode = 3;
	expect_handshake_error("thread list growing forever", "more than 256 vCPUs");
}

/* ---- registers ---- */

static void regs_stub(int fd, const char *req)
{
	static const int sizes[] = { 148, 136, 100 }; /* bytes of each `g` reply in turn */
	static int k;
	static char hex[2 * 1024 + 1];
	if (req[0] == 'H') {
		send_pkt(fd, "OK");
	} else if (!strcmp(req, "g")) {
		int n = sizes[k < 2 ? k++ : 2];
		memset(hex, '0', (size_t)n * 2);
		hex[n * 2] = 0;
		send_pkt(fd, hex);
	}
}

static void test_regs(void)
{
	uint8_t regs[1024];
	running_test = "short g reply";
	struct gdb *g = stub_start(regs_stub, 2000);
	alarm(30);
	CHECK(gdb_regs(g, 0, regs, sizeof regs) == 148); /* the whole fallback layout */
	CHECK(gdb_regs(g, 0, regs, sizeof regs) == 136); /* through rip: enough */
	/* 100 bytes: rip (128..135) missing, it would read as pc 0 */
	CHECK(gdb_regs(g, 0, regs, sizeof regs) == -1 && strstr(g->errstr, "needs 136"));
	alarm(0);
	stub_stop(g);
}

/* ---- pure parsers ---- */

static void test_parse_threads(void)
{
	int pids[8], tids[8], n = 0;
	CHECK(gdb_parse_threads("m1", 2, pids, tids, 8, &n) == GDB_TL_MORE && n == 1 && tids[0] == 1 && pids[0] == 1);
	CHECK(gdb_parse_threads("mp01.02,p01.0a", 14, pids, tids, 8, &n) == GDB_TL_MORE && n == 3);
	CHECK(tids[1] == 2 && tids[2] == 10 && pids[2] == 1);
	CHECK(gdb_parse_threads("l", 1, pids, tids, 8, &n) == GDB_TL_END && n == 3);
	CHECK(gdb_parse_threads("m2", 2, pids, tids, 8, &n) == GDB_TL_DUP);  /* p1.2 already listed */
	CHECK(gdb_parse_threads("mp2.2", 5, pids, tids, 8, &n) == GDB_TL_MORE && n == 4); /* another process */
	n = 0;
	CHECK(gdb_parse_threads("m", 1, pids, tids, 8, &n) == GDB_TL_BAD);
	CHECK(gdb_parse_threads("", 0, pids, tids, 8, &n) == GDB_TL_BAD);
	CHECK(gdb_parse_threads("m1,", 3, pids, tids, 8, &n) == GDB_TL_BAD);
	n = 0;
	CHECK(gdb_parse_threads("m1;2", 4, pids, tids, 8, &n) == GDB_TL_BAD);
	CHECK(gdb_parse_threads("mp1", 3, pids, tids, 8, &n) == GDB_TL_BAD);
	CHECK(gdb_parse_threads("m-1", 3, pids, tids, 8, &n) == GDB_TL_BAD);
	CHECK(gdb_parse_threads("m 1", 3, pids, tids, 8, &n) == GDB_TL_BAD);
	CHECK(gdb_parse_threads("mffffffff", 9, pids, tids, 8, &n) == GDB_TL_BAD); /* not an int */
	CHECK(gdb_parse_threads("lx", 2, pids, tids, 8, &n) == GDB_TL_BAD);
	n = 0;
	CHECK(gdb_parse_threads("m1,2,3", 6, pids, tids, 2, &n) == GDB_TL_FULL && n == 2);
	/* Only len bytes count: the id is not read past them. */
	n = 0;
	CHECK(gdb_parse_threads("m12", 2, pids, tids, 8, &n) == GDB_TL_MORE && tids[0] == 1);
	const char *e;
	CHECK(gdb_parse_tid("p1.2;", &e) == 2 && *e == ';');
	CHECK(gdb_parse_tid("1f", &e) == 0x1f && *e == 0);
	CHECK(gdb_parse_tid("p.2", NULL) == -1 && gdb_parse_tid("", NULL) == -1 && gdb_parse_tid("+5", NULL) == -1);
}

static void test_parse_stop(void)
{
	struct gdb_stopinfo si;
	CHECK(gdb_parse_stop("T02thread:p01.02;", 17, &si) == 0 && si.kind == 'T' && si.sig == 2 && si.pid == 1 &&
	      si.tid == 2);
	CHECK(gdb_parse_stop("T05thread:01;", 13, &si) == 0 && si.sig == 5 && si.tid == 1 && si.pid == 1);
	CHECK(gdb_parse_stop("T05swbreak:;thread:0a;core:1;", 29, &si) == 0 && si.tid == 10);
	CHECK(gdb_parse_stop("T05thread:3", 11, &si) == 0 && si.tid == 3); /* last ';' left out */
	CHECK(gdb_parse_stop("T05", 3, &si) == 0 && si.tid == -1 && si.pid == -1);
	CHECK(gdb_parse_stop("S05", 3, &si) == 0 && si.kind == 'S' && si.tid == -1);
	CHECK(gdb_parse_stop("W00;process:1", 13, &si) == 0 && si.kind == 'W');
	CHECK(gdb_parse_stop("T05thread:;", 11, &si) == -1);
	CHECK(gdb_parse_stop("T05thread:1x;", 13, &si) == -1);
	CHECK(gdb_parse_stop("T05garbage", 10, &si) == -1);
	CHECK(gdb_parse_stop("OK", 2, &si) == -1 && gdb_parse_stop("T0", 2, &si) == -1);
	CHECK(gdb_parse_stop("TZZ", 3, &si) == -1 && gdb_parse_stop("\0" "05", 3, &si) == -1);
	CHECK(gdb_stop_tid("T02thread:p01.02;", 17) == 2 && gdb_stop_tid("E14", 3) == -1);
	CHECK(gdb_stop_tid("T02thread:p01.02;", 12) == -1); /* cut inside the id: "p0" has no '.' */
}

/* ---- busy stubs: what the host's kernel says about a connection, on local listeners ---- */

static void test_proc_rows(void)
{
	struct conn_tcprow r;
	struct conn_unixrow u;
	CHECK(conn_parse_tcprow("  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  "
				"timeout inode", &r) == -1);
	CHECK(conn_parse_tcprow("   3: 0100007F:5BA0 0100007F:D5DE 01 00000000:00000000 00:00000000 00000000     0"
				"        0 0 1 0000000000000000 20 4 30 10 -1", &r) == 0);
	CHECK_STR(r.local, "0100007F:5BA0");
	CHECK_STR(r.remote, "0100007F:D5DE");
	CHECK(r.state == 1 && r.inode == 0);
	CHECK(conn_parse_tcprow("   0: 00000000000000000000000001000000:04D2 00000000000000000000000000000000:0000 0A "
				"00000000:00000000 00:00000000 00000000  1000        0 123456 1 0 100 0 0 10 0", &r) == 0);
	CHECK(r.state == 10 && r.inode == 123456 && strlen(r.local) == 37);
	CHECK(conn_parse_unixrow("Num       RefCount Protocol Flags    Type St Inode Path", &u) == -1);
	CHECK(conn_parse_unixrow("00000000618f20c5: 00000002 00000000 00010000 0001 01 105247 /tmp/g.sock\n", &u) == 0);
	CHECK(u.flags == 0x10000 && u.st == 1 && u.inode == 105247);
	CHECK_STR(u.path, "/tmp/g.sock");
	CHECK(conn_parse_unixrow("00000000f4e37255: 00000003 00000000 00000000 0001 02     0 /tmp/g.sock", &u) == 0);
	CHECK(u.st == 2 && u.inode == 0);
	CHECK(conn_parse_unixrow("0000000057ca28d2: 00000003 00000000 00000000 0001 03 105259", &u) == 0);
	CHECK(u.st == 3 && u.path[0] == 0);
}

/* A listener that accepts only when told: TCP on 127.0.0.1 (port 0 = any) or a unix socket. */
static int listener(const char *path, int *port)
{
	int fd;
	if (path) {
		struct sockaddr_un sun = { .sun_family = AF_UNIX };
		snprintf(sun.sun_path, sizeof sun.sun_path, "%s", path);
		unlink(path);
		fd = socket(AF_UNIX, SOCK_STREAM, 0);
		CHECK(bind(fd, (struct sockaddr *)&sun, sizeof sun) == 0);
	} else {
		struct sockaddr_in sin = { .sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK) };
		socklen_t sl = sizeof sin;
		fd = socket(AF_INET, SOCK_STREAM, 0);
		CHECK(bind(fd, (struct sockaddr *)&sin, sizeof sin) == 0);
		getsockname(fd, (struct sockaddr *)&sin, &sl);
		*port = ntohs(sin.sin_port);
	}
	CHECK(listen(fd, 1) == 0); /* QEMU's backlog */
	return fd;
}

static void busy_case(const char *path)
{
	int port = 0, lfd = listener(path, &port);
	struct conn a = { .fd = -1 };
	static struct gdb g;
	char want[160], where[128];
	conn_where(where, sizeof where, NULL, port, path);
	snprintf(want, sizeof want, "the gdbstub at %s is in use by another client (gdb or gdbsample?)", where);

	/* Nobody attached: the listener is free, a connection waits until accepted. */
	CHECK(conn_listener_taken(NULL, port, path) == 0);
	CHECK(conn_open(&a, NULL, port, path) == 0);
	CHECK(conn_peer_state(&a) == CONN_QUEUED);
	int s1 = accept(lfd, NULL, NULL);
	CHECK(s1 >= 0 && conn_peer_state(&a) == CONN_ACCEPTED);

	/* One client attached: gdb_connect refuses without connecting (nothing queues up). */
	CHECK(conn_listener_taken(NULL, port, path) == 1);
	alarm(30);
	CHECK(gdb_connect(&g, NULL, port, path) == -1);
	CHECK_STR(g.errstr, want);
	CHECK(g.conn.fd < 0);

	/* A listener that never accepts with nobody attached (what a race with another client looks
	 * like): gdb_connect waits GDB_ACCEPT_MS for the accept, sends nothing, and gives up. */
	close(s1);
	conn_close(&a);
	close(lfd);
	lfd = listener(path, &port);
	conn_where(where, sizeof where, NULL, port, path);
	snprintf(want, sizeof want, "the gdbstub at %s is in use by another client (gdb or gdbsample?)", where);
	CHECK(gdb_connect(&g, NULL, port, path) == -1);
	CHECK_STR(g.errstr, want);
	alarm(0);
	int s2 = accept(lfd, NULL, NULL); /* the queued connection: closed, and never written to */
	char b;
	CHECK(s2 >= 0 && read(s2, &b, 1) == 0);
	close(s2);
	close(lfd);
	if (path) unlink(path);
}

static void test_busy(void)
{
	char path[64];
	running_test = "busy stub (tcp)";
	busy_case(NULL);
	running_test = "busy stub (unix)";
	snprintf(path, sizeof path, "/tmp/gdbsample-test-%d.sock", (int)getpid());
	busy_case(path);
}


/* ---- the operator's stop: what the stub said unasked, and the probe that tells who holds the VM ---- */

/* A client on a socketpair whose far end the test writes to and reads from itself. */
static struct gdb *pair_client(int *far)
{
	int sv[2];
	CHECK(socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0);
	struct gdb *g = calloc(1, sizeof *g);
	rsp_dec_init(&g->dec);
	g->conn.fd = sv[0];
	strcpy(g->conn.where, "pair");
	g->req_ms = 1000;
	*far = sv[1];
	return g;
}

static size_t far_read(int far, char *buf, size_t cap)
{
	ssize_t n = recv(far, buf, cap - 1, MSG_DONTWAIT);
	buf[n > 0 ? n : 0] = 0;
	return n > 0 ? (size_t)n : 0;
}

static void put(int far, const char *bytes)
{
	CHECK(write(far, bytes, strlen(bytes)) == (ssize_t)strlen(bytes));
}

static void test_operator_stop(void)
{
	int far, sig = -1;
	char got[64];
	running_test = "operator stop";
	alarm(30);
	struct gdb *g = pair_client(&far);
	CHECK(gdb_take_unasked(g, &sig) == 0 && sig == -1); /* nothing said: nobody stopped it */
	put(far, "+"); /* a late ack is not a stop */
	CHECK(gdb_take_unasked(g, &sig) == 0);
	put(far, "$T02thread:p01.01;#03"); /* QMP `stop` while it ran: QEMU's unasked stop reply */
	CHECK(gdb_take_unasked(g, &sig) == 1 && sig == 2 && g->owed);
	CHECK(strstr(gdb_stop_reason(sig), "paused") != NULL);
	CHECK(strstr(gdb_stop_reason(0x18), "migration") != NULL && strstr(gdb_stop_reason(3), "shut down"));
	put(far, "$O6869#2f$T03thread:p01.01;#04"); /* console output, then a shutdown */
	CHECK(gdb_take_unasked(g, &sig) == 1 && sig == 3);

	/* Still stopped by someone: the 0x03 is discarded, qC answered alone. The owed '+' goes
	 * first (QEMU 7.2 drops a 0x03 while a reply of its waits for an ack). */
	put(far, "+$QCp01.01#f4");
	g->running = 1;
	CHECK(gdb_probe_stop(g) == 0 && g->running == 1);
	far_read(far, got, sizeof got);
	CHECK_STR(got, "+\x03$qC#b4");
	/* Running again: our 0x03 stops it, its stop reply first. Nothing owed now ('$' cleared it)?
	 * QC's reply is owed: so '+' again. */
	put(far, "$T02thread:p01.01;#03+$QCp01.01#f4");
	CHECK(gdb_probe_stop(g) == 1 && g->running == 0);
	far_read(far, got, sizeof got);
	CHECK_STR(got, "+\x03$qC#b4");
	/* Nothing owed (just after our `c`): no '+', which would stop a running VM by itself. */
	CHECK(gdb_cont(g) == 0 && !g->owed);
	far_read(far, got, sizeof got);
	put(far, "$T02thread:p01.01;#03+$QCp01.01#f4");
	CHECK(gdb_probe_stop(g) == 1);
	far_read(far, got, sizeof got);
	CHECK_STR(got, "\x03$qC#b4");
	/* QEMU gone: an error, never "stopped by someone". */
	close(far);
	CHECK(gdb_take_unasked(g, &sig) == -1 && g->err == ERR_EOF);
	alarm(0);
	close(g->conn.fd);
	free(g);
}

static void test_parse_status(void)
{
	char st[24];
	CHECK(gdb_parse_status("VM status: running\r\n", st, sizeof st) == 0 && !st[0]);
	CHECK(gdb_parse_status("VM status: paused\r\n", st, sizeof st) == 1 && !st[0]);
	CHECK(gdb_parse_status("VM status: paused (postmigrate)\r\n", st, sizeof st) == 1);
	CHECK_STR(st, "postmigrate");
	CHECK(gdb_parse_status("VM status: paused (guest-panicked)", st, sizeof st) == 1);
	CHECK_STR(st, "guest-panicked");
	CHECK(gdb_parse_status("VM status: paused (single step mode)\r\n", st, sizeof st) == 1 && !st[0]);
	CHECK(gdb_parse_status("VM status: paused (Bad State!)", st, sizeof st) == -1 && !st[0]);
	/* A malformed name leaves no half of it behind (found by fuzz_stop). */
	CHECK(gdb_parse_status("VM status: paused (pos:1igrate)\r\n", st, sizeof st) == -1 && !st[0]);
	CHECK(gdb_parse_status("VM status: paused (an-exceedingly-long-state-name)", st, sizeof st) == 1 && !st[0]);
	CHECK(gdb_parse_status("", st, sizeof st) == -1);
	CHECK(gdb_parse_status("unknown command: 'info'", st, sizeof st) == -1);
	/* info replay, as QEMU 7.2 prints it */
	uint64_t ic = 7;
	CHECK(gdb_parse_replay("Replaying execution '/tmp/rr/run.bin': instruction count = 17966386\r\n", &ic) ==
	      GDB_RR_REPLAY && ic == 17966386);
	CHECK(gdb_parse_replay("Recording execution 'r.bin': instruction count = 0\r\n", &ic) == GDB_RR_RECORD && ic == 0);
	CHECK(gdb_parse_replay("Record/replay is not active\r\n", &ic) == GDB_RR_OFF);
	CHECK(gdb_parse_replay("Replaying execution 'a': instruction count = 5': instruction count = 9", &ic) ==
	      GDB_RR_REPLAY && ic == 9); /* a file name holding the phrase: the last one counts */
	CHECK(gdb_parse_replay("Replaying execution 'x': instruction count = \r\n", &ic) == -1);
	CHECK(gdb_parse_replay("Replaying execution 'x': instruction count = 12a\r\n", &ic) == -1);
	CHECK(gdb_parse_replay("Replaying execution 'x': instruction count = 99999999999999999999\r\n", &ic) == -1);
	CHECK(gdb_parse_replay("Replaying execution 'x'\r\n", &ic) == -1);
	CHECK(gdb_parse_replay("unknown command: 'info replay'\r\n", &ic) == -1);
	CHECK(gdb_parse_replay("", &ic) == -1);
	/* info migrate, as QEMU 7.2 and 10.0 print it (trimmed) */
	const char *g72 = "globals:\r\nstore-global-state: on\r\nonly-migratable: off\r\nclear-bitmap-shift: 18\r\n";
	CHECK(gdb_parse_migration(g72) == 0); /* never migrated: no status line */
	CHECK(gdb_parse_migration("globals:\r\nstore-global-state: on\r\nMigration status: active\r\ntotal time: 3 ms\r\n") == 1);
	CHECK(gdb_parse_migration("globals:\r\nMigration status: setup\r\n") == 1);
	CHECK(gdb_parse_migration("globals:\r\nMigration status: device\r\n") == 1);
	CHECK(gdb_parse_migration("globals:\r\nMigration status: postcopy-active\r\n") == 1);
	CHECK(gdb_parse_migration("globals:\r\nMigration status: cancelling\r\n") == 1);
	CHECK(gdb_parse_migration("globals:\r\nMigration status: completed\r\ntotal time: 34 ms\r\n") == 0);
	CHECK(gdb_parse_migration("globals:\r\nMigration status: failed (Unable to write)\r\n") == 0);
	CHECK(gdb_parse_migration("globals:\r\nMigration status: cancelled\r\n") == 0);
	CHECK(gdb_parse_migration("Migration status: completedx\r\n") == 1); /* unknown: assume under way */
	CHECK(gdb_parse_migration("Migration status: complete\r\n") == 1);
	CHECK(gdb_parse_migration("Migration status: \r\n") == -1);
	CHECK(gdb_parse_migration("Migration status: ") == -1);
	CHECK(gdb_parse_migration("") == -1);
	CHECK(gdb_parse_migration("unknown command: 'info'") == -1);
	/* HMP cont's answer through qRcmd: silent when it resumed; its refusal mid-migration */
	CHECK(gdb_parse_cont("") == 0);
	CHECK(gdb_parse_cont("Error: Migration is not finalized yet\r\n") == 1);
	CHECK(gdb_parse_cont("Error: Resetting the Virtual Machine is required\r\n") == 1);
	/* whose VM it is before our `c`: a migration finishing while we held it is not ours (QEMU 7.2
	 * aborted on our resume there: "invalid runstate transition: 'running' -> 'postmigrate'") */
	static const struct { const char *text; int ours; } states[] = {
		{ "VM status: paused\r\n", 1 }, { "VM status: running\r\n", 1 }, { "VM status: paused (debug)\r\n", 1 },
		{ "VM status: paused (single step mode)\r\n", 1 },
		{ "VM status: paused (finish-migrate)\r\n", 0 }, { "VM status: paused (postmigrate)\r\n", 0 },
		{ "VM status: paused (shutdown)\r\n", 0 }, { "VM status: paused (io-error)\r\n", 0 },
		{ "VM status: paused (guest-panicked)\r\n", 0 }, { "VM status: paused (inmigrate)\r\n", 0 },
	};
	for (size_t i = 0; i < sizeof states / sizeof states[0]; i++) {
		int rc = gdb_parse_status(states[i].text, st, sizeof st);
		CHECK(gdb_state_is_ours(rc, st) == states[i].ours);
	}
	CHECK(!gdb_state_is_ours(-1, ""));
	/* why a VM found stopped without a stop reply is stopped, from its run state */
	static const struct { const char *text; const char *why; } whys[] = {
		{ "VM status: paused (postmigrate)\r\n", "stopped for migration" },
		{ "VM status: paused (finish-migrate)\r\n", "stopped for migration" },
		{ "VM status: paused (shutdown)\r\n", "shut down" },
		{ "VM status: paused (io-error)\r\n", "stopped on an I/O error" },
		{ "VM status: paused (guest-panicked)\r\n", "stopped: the guest panicked" },
		{ "VM status: paused\r\n", "paused (a monitor `stop`, virsh suspend)" },
		{ "VM status: paused (prelaunch)\r\n", "stopped by someone else" },
		{ "VM status: running\r\n", "stopped by someone else" },
		{ "nonsense", "stopped by someone else" },
	};
	for (size_t i = 0; i < sizeof whys / sizeof whys[0]; i++) {
		int rc = gdb_parse_status(whys[i].text, st, sizeof st);
		CHECK(!strcmp(gdb_state_reason(rc, st), whys[i].why));
	}
}

/* The handshake's and the readers' replies, parsed on literals (gdb_reply.h). */
static void test_parse_replies(void)
{
	struct gdb_features f;
	gdb_parse_supported("PacketSize=1000;qXfer:features:read+;multiprocess+;QStartNoAckMode+", &f);
	CHECK(f.packet_size == 0x1000 && f.multiprocess && f.xfer_features && f.noack);
	gdb_parse_supported("PacketSize=ffffffff;multiprocess-;qXfer:features:read-", &f); /* too big: none */
	CHECK(f.packet_size == 0 && !f.multiprocess && !f.xfer_features && !f.noack);
	gdb_parse_supported("", &f); /* a stub without qSupported */
	CHECK(f.packet_size == 0 && !f.multiprocess && !f.xfer_features && !f.noack);

	CHECK(gdb_parse_version("7.2.15 (Debian 1:7.2+dfsg-7+deb12u18)\r\n") == 702);
	CHECK(gdb_parse_version("10.1.0\r\n") == 1001);
	CHECK(gdb_parse_version("100.1") == 0 && gdb_parse_version("7") == 0 && gdb_parse_version("") == 0);

	uint8_t b[8];
	CHECK(gdb_parse_regs("0011ff", 6, b, sizeof b) == 3 && b[0] == 0 && b[1] == 0x11 && b[2] == 0xff);
	CHECK(gdb_parse_regs("E14", 3, b, sizeof b) == -1);          /* an error, not a 1.5-byte block */
	CHECK(gdb_parse_regs("0011", 4, b, 1) == -1);                /* more than the room given */
	CHECK(gdb_parse_regs("00zz", 4, b, sizeof b) == -1);
	uint64_t v = 0;
	CHECK(gdb_parse_reg("78563412", 8, &v) == 0 && v == 0x12345678); /* little-endian, as in `g` */
	CHECK(gdb_parse_reg("0102030405060708", 16, &v) == 0 && v == 0x0807060504030201ull);
	CHECK(gdb_parse_reg("010203040506070809", 18, &v) == -1); /* wider than 64 bits */
	CHECK(gdb_parse_reg("", 0, &v) == -1 && gdb_parse_reg("E01", 3, &v) == -1);
	CHECK(gdb_parse_mem("cafe", 4, b, 2) == 0 && b[0] == 0xca && b[1] == 0xfe);
	CHECK(gdb_parse_mem("cafe", 4, b, 1) == -1);                 /* not the length asked for */
	CHECK(gdb_parse_mem("E14", 3, b, 1) == -1);

	const char *d;
	size_t n;
	CHECK(gdb_parse_xfer("m<tar", 5, &d, &n) == 'm' && n == 4 && !memcmp(d, "<tar", 4));
	CHECK(gdb_parse_xfer("l", 1, &d, &n) == 'l' && n == 0);
	CHECK(gdb_parse_xfer("E00", 3, &d, &n) == -1 && gdb_parse_xfer("", 0, &d, &n) == -1);

	static const char xml[] = "<target><xi:include href=\"a.xml\"/> <xi:include nohref/>"
				  "<xi:include href=\"b.xml\"/></target>";
	char href[8];
	size_t at, end;
	CHECK(gdb_parse_include(xml, 0, &at, &end, href, sizeof href) == 0 && at == 8 && end == 34);
	CHECK_STR(href, "a.xml");
	CHECK(gdb_parse_include(xml, end, &at, &end, href, sizeof href) == -1); /* a malformed one ends it */
	CHECK(gdb_parse_include(xml, 40, &at, &end, href, sizeof href) == 0 && at == 55);
	CHECK_STR(href, "b.xml");
	CHECK(gdb_parse_include(xml, 0, &at, &end, href, 5) == -1); /* "a.xml" and its NUL need 6 */
}

/* ---- the connection phase: one total deadline, and a signal ends it ---- */

static void slow_stub(int fd, const char *req)
{
	nap_ms(150); /* each reply well inside the per-request timeout */
	if (!strncmp(req, "qSupported", 10)) {
		send_pkt(fd, "PacketSize=1000;multiprocess+"); /* no qXfer: the default x86_64 layout */
		return;
	}
	if (strstr(req, "ThreadInfo")) {
		static int n;
		char m[32];
		snprintf(m, sizeof m, "mp01.%02x", ++n % 250 + 1); /* never "l" */
		send_pkt(fd, m);
		return;
	}
	handshake_stub(fd, req);
}

static void on_usr1(int sig)
{
	(void)sig;
}

static void test_connect_deadline(void)
{
	running_test = "connect deadline";
	struct gdb *g = stub_start(slow_stub, 1000);
	alarm(60);
	g->conn.deadline_ms = conn_now_ms() + 1000;
	int rc = gdb_handshake(g);
	CHECK(rc == -1 && g->err == ERR_TIMEOUT && strstr(g->errstr, "--connect-timeout"));
	if (rc != -1 || g->err != ERR_TIMEOUT) fprintf(stderr, "deadline: rc %d: %s\n", rc, g->errstr);
	alarm(0);
	stub_stop(g);

	running_test = "signal while connecting";
	static volatile sig_atomic_t stop;
	struct sigaction sa = { .sa_handler = on_usr1 }, old; /* no SA_RESTART, as record_signals */
	sigemptyset(&sa.sa_mask);
	sigaction(SIGUSR1, &sa, &old);
	g = stub_start(slow_stub, 1000);
	g->conn.intr = &stop;
	pid_t me = getpid(), k = fork();
	if (k == 0) {
		nap_ms(400);
		kill(me, SIGUSR1);
		_exit(0);
	}
	alarm(60);
	stop = 1; /* what record_stop is once a handler ran */
	rc = gdb_handshake(g);
	alarm(0);
	waitpid(k, NULL, 0);
	CHECK(rc == -1 && g->err == ERR_INTR);
	if (rc != -1 || g->err != ERR_INTR) fprintf(stderr, "intr: rc %d: %s\n", rc, g->errstr);
	sigaction(SIGUSR1, &old, NULL);
	stub_stop(g);
}

/* ---- two gdbsample at the same instant on one stub ---- */

/* A listener as QEMU's: it accepts one client, serves it for hold_ms, then looks whether another
 * connection waits in its backlog -- one there would be accepted next, pausing the VM. Exit 0 if
 * none, 1 if one. */
static pid_t qemu_like(int lfd, int hold_ms)
{
	pid_t pid = fork();
	if (pid == 0) {
		int c = accept(lfd, NULL, NULL);
		nap_ms(hold_ms);
		close(c);
		fcntl(lfd, F_SETFL, fcntl(lfd, F_GETFL) | O_NONBLOCK);
		int more = accept(lfd, NULL, NULL);
		_exit(more >= 0);
	}
	return pid;
}

static void race_case(const char *path)
{
	int port = 0, lfd = listener(path, &port), go[2];
	pid_t q = qemu_like(lfd, GDB_ACCEPT_MS + 500), kids[2]; /* past the loser's give-up */
	CHECK(pipe(go) == 0); /* after forking q: only we and the two clients hold it */
	for (int i = 0; i < 2; i++) {
		kids[i] = fork();
		if (kids[i] == 0) {
			static struct gdb g;
			char b;
			close(go[1]);
			if (read(go[0], &b, 1) < 0) _exit(3); /* both start at the same instant */
			int rc = gdb_connect(&g, NULL, port, path);
			if (rc == 0) nap_ms(GDB_ACCEPT_MS + 300); /* attached: hold it, as a sampling run */
			_exit(rc == 0 ? 0 : strstr(g.errstr, "in use by another client") ? 1 : 2);
		}
	}
	close(go[0]);
	close(go[1]); /* go */
	int st[2], qs;
	for (int i = 0; i < 2; i++) waitpid(kids[i], &st[i], 0);
	waitpid(q, &qs, 0);
	int won = (WEXITSTATUS(st[0]) == 0) + (WEXITSTATUS(st[1]) == 0);
	int busy = (WEXITSTATUS(st[0]) == 1) + (WEXITSTATUS(st[1]) == 1);
	CHECK(won == 1 && busy == 1);
	CHECK(WIFEXITED(qs) && WEXITSTATUS(qs) == 0); /* nothing left queued behind the winner */
	if (won != 1 || busy != 1 || WEXITSTATUS(qs)) fprintf(stderr, "race %s: %d won, %d busy, queued %d\n",
							       path ? "unix" : "tcp", won, busy, WEXITSTATUS(qs));
	close(lfd);
	if (path) unlink(path);
}

static void test_simultaneous_clients(void)
{
	char path[64];
	running_test = "two clients at once (tcp)";
	alarm(60);
	race_case(NULL);
	running_test = "two clients at once (unix)";
	snprintf(path, sizeof path, "/tmp/gdbsample-race-%d.sock", (int)getpid());
	race_case(path);
	alarm(0);
}

void test_gdb(void)
{
	signal(SIGALRM, on_alarm);
	test_parse_threads();
	test_parse_stop();
	test_proc_rows();
	test_regs();
	test_hangs();
	test_qmp_events_forever();
	test_handshake_bounds();
	test_busy();
	test_operator_stop();
	test_parse_status();
	test_parse_replies();
	test_connect_deadline();
	test_simultaneous_clients();
}
