# SPDX-License-Identifier: MIT
"""The connection phase has one total deadline (--connect-timeout), and every signal that ends a
run ends it there too: a stub that answers each request slowly -- but inside the per-request
timeout -- and never finishes its handshake (a thread list that never ends) used to hold gdbsample
for many minutes with SIGINT/SIGTERM ignored. A fake gdbstub in a thread (no QEMU); every
gdbsample is bounded by a subprocess timeout far above what the fixed build needs (a hang guard,
not a timing assertion)."""
import os
import signal
import socket
import subprocess
import threading

import conftest
import pytest

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
DELAY = 0.4  # seconds per reply: well inside gdbsample's 3 s per-request timeout


def packet(payload):
    return b"+$" + payload + b"#" + b"%02x" % (sum(payload) & 255)


class SlowStub:
    """Answers every request after DELAY: a plausible handshake whose thread list never ends."""

    def __init__(self):
        self.lsock = socket.socket()
        self.lsock.bind(("127.0.0.1", 0))
        self.lsock.listen(1)
        self.port = self.lsock.getsockname()[1]
        self.requests = []
        self.asked = threading.Event()  # a request of the handshake arrived
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self.serve, daemon=True)
        self.thread.start()

    def answer(self, req):
        if req.startswith(b"qSupported"):
            return b"PacketSize=1000;multiprocess+"  # no qXfer: the default x86_64 layout
        if req == b"?":
            return b"T05thread:p01.01;"
        if req in (b"qfThreadInfo", b"qsThreadInfo"):
            n = sum(r in (b"qfThreadInfo", b"qsThreadInfo") for r in self.requests)
            return b"mp01.%02x" % n  # never "l"
        if req == b"qC":
            return b"QCp01.01"
        if req.startswith(b"D"):
            return b"OK"
        return b""

    def serve(self):
        try:
            c, _ = self.lsock.accept()
        except OSError:
            return
        c.settimeout(0.2)
        buf = b""
        with c:
            while not self.stop.is_set():
                try:
                    data = c.recv(4096)
                except socket.timeout:
                    continue
                except OSError:
                    return
                if not data:
                    return
                buf += data
                while b"$" in buf and b"#" in buf[buf.index(b"$"):]:
                    start = buf.index(b"$")
                    end = buf.index(b"#", start)
                    if len(buf) < end + 3:
                        break
                    req = buf[start + 1:end]
                    buf = buf[end + 3:]
                    self.requests.append(req)
                    self.asked.set()
                    if self.stop.wait(DELAY):
                        return
                    try:
                        c.sendall(packet(self.answer(req)))
                    except OSError:
                        return

    def close(self):
        self.stop.set()
        self.lsock.close()
        self.thread.join(5)


@pytest.fixture
def stub():
    s = SlowStub()
    yield s
    s.close()


def test_connect_timeout_bounds_the_handshake(stub):
    """--connect-timeout 1.5: gdbsample gives up on the endless handshake with one line naming the
    deadline, exit 1. (Unfixed, each reply restarts a 3 s clock and the thread list may take 258
    replies: about two minutes here, so the hang guard below would fire.)"""
    r = subprocess.run([GDBSAMPLE, "-p", str(stub.port), "--connect-timeout", "1.5", "-d", "1", "-q"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 1, r.stderr
    assert "--connect-timeout" in r.stderr and "took longer than the connect timeout" in r.stderr, r.stderr
    assert r.stdout == ""
    assert len(stub.requests) < 40, stub.requests  # it stopped asking


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM], ids=["SIGINT", "SIGTERM"])
def test_signal_ends_the_handshake(stub, sig):
    """A signal while the handshake crawls (the deadline out of the way): gdbsample leaves at once with
    "interrupted", exit 1, nothing on stdout. Unfixed, the signal only set a flag nobody read
    until the handshake ended."""
    p = subprocess.Popen([GDBSAMPLE, "-p", str(stub.port), "--connect-timeout", "600", "-d", "1", "-q"],
                         stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True)
    try:
        assert stub.asked.wait(30), "gdbsample never sent a request"
        p.send_signal(sig)
        out, err = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 1, err
    assert "interrupted by a signal" in err, err
    assert out == ""


def test_bad_connect_timeout_values():
    """Out-of-range or malformed values: one line, exit 2."""
    for v in ("0", "-1", "abc", "1e9", ""):
        r = subprocess.run([GDBSAMPLE, "-p", "1", "--connect-timeout", v], capture_output=True, text=True, timeout=30)
        assert r.returncode == 2, (v, r.stderr)
        assert r.stderr.startswith("gdbsample: --connect-timeout: bad value"), (v, r.stderr)
