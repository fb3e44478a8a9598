/* SPDX-License-Identifier: MIT */
/* test_messages.c: errors that teach -- the fixes named when nothing listens, a QEMU monitor told
 * from a gdbstub by what it sends first. */
#include "check.h"
#include "../../sampler/conn.h"
#include "../../sampler/qmp.h"

static void test_stub_hint(void)
{
	char h[512];
	CHECK(conn_stub_hint(h, sizeof h, ECONNREFUSED, NULL, 4321, NULL) == 1);
	CHECK(strstr(h, "start QEMU with -gdb tcp:127.0.0.1:4321,") != NULL);
	CHECK(strstr(h, "--qmp") && strstr(h, "--domain"));
	CHECK(strstr(h, "(or -s)") == NULL);
	CHECK(conn_stub_hint(h, sizeof h, ECONNREFUSED, "127.0.0.1", 1234, NULL) == 1);
	CHECK(strstr(h, "-gdb tcp:127.0.0.1:1234 (or -s)") != NULL);
	CHECK(conn_stub_hint(h, sizeof h, ENOENT, NULL, 0, "/tmp/g.sock") == 1);
	CHECK(strstr(h, "-gdb unix:/tmp/g.sock,server=on,wait=off") != NULL);
	CHECK(conn_stub_hint(h, sizeof h, ECONNREFUSED, NULL, 0, "/tmp/g.sock") == 1);
	/* other failures have no such fix: no hint */
	CHECK(conn_stub_hint(h, sizeof h, ETIMEDOUT, NULL, 1234, NULL) == 0 && h[0] == 0);
	CHECK(conn_stub_hint(h, sizeof h, ENOENT, NULL, 1234, NULL) == 0);
	CHECK(conn_stub_hint(h, sizeof h, EACCES, NULL, 0, "/tmp/g.sock") == 0);
}

static void test_peer_kind(void)
{
	static const char qmp[] = "{\"QMP\": {\"version\": {\"qemu\": {\"micro\": 15, \"minor\": 2, \"major\": 7}}, "
				  "\"capabilities\": [\"oob\"]}}\r\n";
	static const char hmp[] = "QEMU 7.2.15 monitor - type 'help' for more information\r\n(qemu) ";
	CHECK(qmp_peer_kind(qmp, sizeof qmp - 1) == QMP_PEER_QMP);
	CHECK(qmp_peer_kind(qmp, 6) == QMP_PEER_QMP);          /* as soon as {"QMP" is in */
	CHECK(qmp_peer_kind(qmp, 5) == 0);                     /* not yet */
	CHECK(qmp_peer_kind(" \r\n{\"QMP\"", 10) == QMP_PEER_QMP);
	CHECK(qmp_peer_kind(hmp, sizeof hmp - 1) == QMP_PEER_HMP);
	CHECK(qmp_peer_kind(hmp, 10) == 0);
	/* what gdbstubs send: acks, stop replies -- and other JSON is no QMP greeting */
	CHECK(qmp_peer_kind("+", 1) == 0);
	CHECK(qmp_peer_kind("$T05thread:p01.01;#06", 21) == 0);
	CHECK(qmp_peer_kind("+$OK#9a", 7) == 0);
	CHECK(qmp_peer_kind("{\"return\": {}}", 14) == 0);
	CHECK(qmp_peer_kind("", 0) == 0);
}

void test_messages(void)
{
	test_stub_hint();
	test_peer_kind();
}
