# SPDX-License-Identifier: MIT
"""tools/udpsh and tools/netload against a fake guest (tests/net/fakeguest.py): reassembly,
retry on loss with the same sequence number, busy replies, timeouts, exit statuses."""
import os
import re
import socket
import subprocess
import threading
import time

import pytest

import conftest
import udpshell
from fakeguest import FakeGuest, send_load

UDPSH = os.path.join(conftest.ROOT, "tools", "udpsh")
NETLOAD = os.path.join(conftest.ROOT, "tools", "netload")
BIG = b"".join(b"line %04d of a long report\n" % i for i in range(150))  # 4050 bytes: 4 chunks


class Sink:
    """The guest's `netload sink` for the fake: counts what arrives on its own port."""

    def __init__(self):
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.sock.bind(("127.0.0.1", 0))
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 1 << 22)
        self.port = self.sock.getsockname()[1]
        self.sock.settimeout(0.05)
        self.count = udpshell.LoadCount()
        self.stopping = False
        threading.Thread(target=self.serve, daemon=True).start()

    def command(self, args, fake, client):
        if args[0] == "sink":
            self.count = udpshell.LoadCount()
            return f"netload: sink on udp/{args[1]}\n".encode()
        c = self.count
        return (f"netload: sink udp/9001: {c.packets} packets, {c.bytes} bytes, {c.lost} lost (0.00%), "
                f"{c.duplicates} duplicates, {c.malformed} malformed, 0 pkt/s over 0 ms\n").encode()

    def serve(self):
        while not self.stopping:
            try:
                data = self.sock.recv(2048)
            except socket.timeout:
                continue
            except OSError:
                return
            self.count.add(data, time.monotonic())


@pytest.fixture
def fake():
    sink = Sink()

    def netload(args, fake, client):
        if args[0] == "send":
            return send_load(fake, client, int(args[1]), int(args[2]), int(args[3]), drop_every=fake.drop_every)
        return sink.command(args, fake, client)

    f = FakeGuest({"big": lambda a, f, c: BIG, "echo": lambda a, f, c: " ".join(a).encode(),
                   "sleep": lambda a, f, c: time.sleep(float(a[0])) or b"slept\n", "netload": netload})
    f.drop_every = 0
    f.sink = sink
    yield f
    f.close()
    sink.stopping = True


def udpsh(port, *args, timeout=30):
    return subprocess.run([UDPSH, "--port", str(port), *args], capture_output=True, timeout=timeout)


def test_udpsh_prints_a_multichunk_output_exactly(fake):
    r = udpsh(fake.port, "big")
    assert (r.returncode, r.stdout, r.stderr) == (0, BIG, b"")
    r = udpsh(fake.port, "echo", "no", "newline")
    assert (r.returncode, r.stdout) == (0, b"no newline")


def test_lost_chunks_are_fetched_again_from_the_cache_without_rerunning(fake):
    fake.drop = {1, 2}
    c = udpshell.Client(port=fake.port, timeout=10)
    res = c.run("big")
    assert res.output == BIG and res.sends == 2, "one resend, right after the last chunk showed the gap"
    assert fake.runs["big"] == 1 and fake.requests == 2


def test_a_lost_last_chunk_is_noticed_by_silence(fake):
    fake.drop = {3}
    res = udpshell.Client(port=fake.port, timeout=10).run("big")
    assert res.output == BIG and res.sends == 2 and fake.runs["big"] == 1
    assert res.seconds > 0.4, res.seconds  # it waited FIRST_WAIT of silence before asking again


def test_a_lost_request_is_resent(fake):
    fake.deaf = 2
    res = udpshell.Client(port=fake.port, timeout=10).run("echo hi")
    assert res.output == b"hi" and res.sends == 3 and fake.runs["echo"] == 1  # resent twice, run once


def test_a_long_command_runs_once_though_resent_while_running(fake):
    res = udpshell.Client(port=fake.port, timeout=10).run("sleep 2.2")
    assert res.output == b"slept\n" and fake.runs["sleep"] == 1
    assert res.sends >= 2  # resent while the command ran (at 0.5 and 1.5 s), and run only once


def test_busy_reply_is_waited_out(fake):
    first = threading.Thread(target=lambda: udpshell.Client(port=fake.port).run("sleep 1"))
    first.start()
    time.sleep(0.2)
    res = udpshell.Client(port=fake.port, timeout=10, retries=0).run("echo after")
    first.join()
    assert res.output == b"after" and res.sends >= 3  # busy replies do not use up the retries
    assert fake.runs == {"sleep": 1, "echo": 1}


def test_stale_replies_of_other_sequence_numbers_are_ignored(fake):
    c = udpshell.Client(port=fake.port, timeout=5)
    c.sock.sendto(udpshell.encode_request(c.seq + 1000, "echo old"), c.addr)  # a reply nobody waits for
    time.sleep(0.2)
    assert c.run("echo new").output == b"new" and c.stale == 1


def test_no_guest_is_one_line_and_exit_1():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))  # a port where nobody answers
        s.settimeout(30)          # a missing resend fails the test, never hangs it
        r = udpsh(s.getsockname()[1], "--timeout", "1.2", "--retries", "5", "uptime")
        first, second = s.recv(100), s.recv(100)
    assert first == second and first[8:] == b"uptime"  # the same request and sequence, resent
    assert r.returncode == 1 and r.stdout == b""
    # the time said is measured: at least the 1.2 s timeout, later on a loaded host (1.3 s was seen)
    m = re.fullmatch(rb"udpsh: no reply from 127\.0\.0\.1:\d+ after 2 sends in (\d+\.\d) s\n", r.stderr)
    assert m and float(m.group(1)) >= 1.2, r.stderr


def test_retries_bound_the_sends():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        r = udpsh(s.getsockname()[1], "--timeout", "30", "--retries", "1", "uptime")
        s.settimeout(0)
        got = []
        while True:
            try:
                got.append(s.recv(100))
            except BlockingIOError:
                break
    assert r.returncode == 1 and b"after 2 sends" in r.stderr
    assert len(got) == 2 and got[0] == got[1] and got[0][8:] == b"uptime"


@pytest.mark.parametrize("args", [[], ["--port", "0", "ps"], ["--timeout", "0", "ps"], ["--retries", "-1", "ps"],
                                  ["x" * 128], ["--bogus", "ps"]])
def test_bad_arguments_exit_2(args):
    r = subprocess.run([UDPSH, *args], capture_output=True, timeout=10)
    assert r.returncode == 2 and r.stdout == b"" and b"udpsh: error:" in r.stderr


def test_netload_from_guest_counts_and_sees_the_gaps(fake):
    fake.drop_every = 10  # the fake "loses" every tenth datagram on the wire
    r = subprocess.run([NETLOAD, "from-guest", "--port", str(fake.port), "--size", "100", "--pps", "500",
                        "--seconds", "1"], capture_output=True, text=True, timeout=30)
    assert r.returncode == 0, r.stderr
    host, guest = r.stdout.splitlines()
    # 500 sent, seq 9, 19, ..., 499 missing: 49 gaps below the highest (498, so 49/499) and 1 short at the end
    assert host.startswith("netload: from-guest received 450 packets, 45000 bytes, 49 lost (9.82%), 1 short, "
                           "0 duplicates, 0 malformed, "), host
    assert guest.startswith("netload: sent 500 packets, 50000 bytes in "), guest


def test_netload_to_guest_paces_and_reports_both_sides(fake):
    r = subprocess.run([NETLOAD, "to-guest", "--port", str(fake.port), "--sink-port", str(fake.sink.port),
                        "--size", "200", "--pps", "1000", "--seconds", "1.5"], capture_output=True, text=True,
                       timeout=30)
    assert r.returncode == 0, r.stderr
    host, guest = r.stdout.splitlines()
    m = re.fullmatch(r"netload: to-guest sent 1500 packets, 300000 bytes in (\d+) ms \((\d+) pkt/s\), "
                     r"max lateness ([\d.]+) ms", host)
    assert m and int(m[1]) >= 1490, host  # paced: the last one leaves at 1.499 s, never sooner
    assert guest.startswith("netload: sink udp/9001: 1500 packets, 300000 bytes, 0 lost (0.00%), 0 duplicates, "
                            "0 malformed"), guest
    assert fake.runs["netload"] >= 3  # sink, stats until the count settles, stop


def test_netload_bad_arguments_exit_2():
    for args in (["sideways"], ["to-guest", "--size", "23"], ["to-guest", "--pps", "0"],
                 ["from-guest", "--seconds", "1.5"], ["to-guest", "--seconds", "61"]):
        r = subprocess.run([NETLOAD, *args], capture_output=True, timeout=10)
        assert r.returncode == 2 and b"netload: error:" in r.stderr, args


def test_netload_without_a_guest_is_one_line_and_exit_1():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        r = subprocess.run([NETLOAD, "to-guest", "--port", str(s.getsockname()[1]), "--timeout", "1"],
                           capture_output=True, text=True, timeout=10)
    assert r.returncode == 1 and r.stdout == ""
    # the time said is measured: at least the 1 s timeout, later on a loaded host (1.1 s was seen)
    m = re.fullmatch(r"netload: no reply from 127\.0\.0\.1:\d+ after \d+ sends in (\d+\.\d) s\n", r.stderr)
    assert m and float(m.group(1)) >= 1.0, r.stderr
