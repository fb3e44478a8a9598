# SPDX-License-Identifier: MIT
"""Errors that teach, and a quiet -q: a refused connection names the fixes (-gdb, --qmp, --domain);
-u or -p given a QEMU monitor says which and what to do; a run without -e whose frames cannot be
named says so, and why; -q prints nothing but errors while --summary / --summary-format bring the
summary back, as human text, key value lines or JSON (docs/json.md). Fake peers in threads, no QEMU:
every gdbsample is bounded by a subprocess timeout far above what it needs (a hang guard, not a
timing assertion)."""
import json
import os
import signal
import socket
import subprocess
import tempfile
import threading
import time

import conftest
import pytest
from fakestub import FakeStub

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
QMP_GREETING = (b'{"QMP": {"version": {"qemu": {"micro": 15, "minor": 2, "major": 7}, "package": ""}, '
                b'"capabilities": ["oob"]}}\r\n')
HMP_BANNER = b"QEMU 7.2.15 monitor - type 'help' for more information\r\n(qemu) "


def run(args, timeout=60):
    return subprocess.run([GDBSAMPLE] + args, capture_output=True, text=True, timeout=timeout)


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Greeter:
    """A unix socket that greets every client with `hello` (as a QEMU monitor does), then reads
    whatever comes and answers nothing."""

    def __init__(self, hello):
        self.dir = tempfile.TemporaryDirectory()
        self.path = os.path.join(self.dir.name, "mon.sock")
        self.lsock = socket.socket(socket.AF_UNIX)
        self.lsock.bind(self.path)
        self.lsock.listen(4)
        self.hello = hello
        threading.Thread(target=self.serve, daemon=True).start()

    def serve(self):
        while True:
            try:
                c, _ = self.lsock.accept()
            except OSError:
                return
            c.sendall(self.hello)
            c.settimeout(5)
            try:
                while c.recv(4096):
                    pass
            except OSError:
                pass
            c.close()

    def close(self):
        self.lsock.close()
        self.dir.cleanup()


def test_refused_connection_names_the_fixes():
    port = free_port()  # nothing listens there
    r = run(["-p", str(port), "-d", "1"])
    assert r.returncode == 1, r
    line, = r.stderr.splitlines()
    assert "Connection refused" in line, line
    assert f"-gdb tcp:127.0.0.1:{port}" in line and "--qmp" in line and "--domain" in line, line
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "gdb.sock")  # no such socket
        r = run(["-u", path, "-d", "1"])
    assert r.returncode == 1, r
    assert f"-gdb unix:{path},server=on,wait=off" in r.stderr and "--qmp" in r.stderr, r.stderr


def test_u_at_a_qmp_socket_suggests_qmp():
    g = Greeter(QMP_GREETING)
    try:
        r = run(["-u", g.path, "-d", "1"])
    finally:
        g.close()
    assert r.returncode == 2, r  # the user's to fix: the wrong option
    line, = r.stderr.splitlines()
    assert "QMP" in line and f"--qmp {g.path}" in line, line
    assert "qSupported" not in line, line


def test_u_at_a_human_monitor_says_so():
    g = Greeter(HMP_BANNER)
    try:
        r = run(["-u", g.path, "-d", "1"])
    finally:
        g.close()
    assert r.returncode == 2, r
    assert "human monitor (HMP), not a gdbstub" in r.stderr and "--qmp" in r.stderr, r.stderr


def test_raw_addresses_are_explained():
    """No -e, and no upper-half kernel to read names from: one warning says frames are raw and why."""
    s = FakeStub()
    try:
        r = run(["-p", str(s.port), "-d", "0.3", "-r", "20", "-f", "folded"])
    finally:
        s.close()
    assert r.returncode == 0, r
    said = [ln for ln in r.stderr.splitlines() if "raw addresses" in ln]
    assert len(said) == 1, r.stderr
    assert "no kernel image (-e)" in said[0] and "upper half" in said[0] and "-e" in said[0], said


def test_quiet_is_quiet_and_summary_formats():
    s = FakeStub()
    try:
        r = run(["-p", str(s.port), "-d", "0.3", "-r", "20", "-f", "folded", "-q"])
    finally:
        s.close()
    assert r.returncode == 0, r
    assert r.stderr == "", r.stderr  # no warning, no summary
    assert r.stdout.strip(), r       # the result still comes

    s = FakeStub()
    try:
        r = run(["-p", str(s.port), "-d", "0.3", "-r", "20", "-f", "folded", "-q", "--summary"])
    finally:
        s.close()
    assert r.returncode == 0, r
    assert r.stderr.startswith("gdbsample: ") and " samples of 1 vCPU in " in r.stderr, r.stderr
    assert "raw addresses" not in r.stderr  # -q still hides warnings

    s = FakeStub()
    try:
        r = run(["-p", str(s.port), "-d", "0.3", "-r", "20", "-f", "folded", "-q", "--summary-format", "json"])
    finally:
        s.close()
    assert r.returncode == 0, r
    doc = json.loads(r.stderr)  # the whole of stderr is one JSON object
    assert doc["schema"] == "gdbsample summary" and doc["schema_version"] == 7, doc
    sm = doc["summary"]
    assert sm["vcpus"] == 1 and sm["rate_requested_hz"] == 20 and sm["attach"] == "gdbstub", sm
    assert isinstance(sm["samples"], int) and sm["samples"] > 0 and isinstance(sm["pause_p50_us"], (int, float)), sm
    assert sm["gdbstub"] == "127.0.0.1:%d" % s.port, sm
    assert sm["image"] is None and sm["modules"] is None and sm["attach_target"] is None, sm  # absent: null
    assert list(sm) == sorted(sm), list(sm)

    s = FakeStub()
    try:
        r = run(["-p", str(s.port), "-d", "0.3", "-r", "20", "-f", "folded", "--summary-format", "kv"])
    finally:
        s.close()
    assert r.returncode == 0, r
    kv = dict(ln.split(" ", 1) for ln in r.stderr.splitlines() if not ln.startswith("gdbsample: "))
    assert kv["vcpus"] == "1" and kv["attach"] == "gdbstub" and int(kv["samples"]) > 0, r.stderr
    assert "raw addresses" in r.stderr  # without -q the warning stays


def test_libvirt_message_is_whole():
    """libvirt's message, naming its socket, reaches stderr whole (it was cut at 128 bytes:
    "...libvirt-sock': No such file or direct"). Needs a gdbsample built with libvirt, no daemon."""
    with tempfile.TemporaryDirectory(dir="/tmp") as d:  # short: pytest's tmp_path is too long
        sock = os.path.join(d, "no-such-dir-" + "x" * 40, "libvirt-sock")
        check_libvirt_message(sock)


def check_libvirt_message(sock):
    assert len(sock) < 108  # a unix socket path libvirt will try, not refuse as too long
    r = run(["--domain", "nodomain", "--connect", "qemu:///system?socket=" + sock, "-d", "1"])
    if "built without libvirt" in r.stderr:
        pytest.skip("gdbsample was built without libvirt")
    assert r.returncode == 1, r
    line, = r.stderr.splitlines()
    assert len(line) > 128 and line.rstrip().endswith("No such file or directory"), line
    assert sock in line and "[...]" not in line, line


def test_wire_log_holds_both_directions_and_is_appended_to(tmp_path):
    """GDBSAMPLE_WIRE_LOG: each write and read on the connection, one line, appended (never truncated):
    the handshake's qSupported out, the stub's reply in, the detach at the end and its OK."""
    log = tmp_path / "wire.log"
    log.write_text("kept\n")
    s = FakeStub()
    try:
        r = subprocess.run([GDBSAMPLE, "-p", str(s.port), "-d", "0.3", "-r", "20", "-f", "folded", "-q"],
                           capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, GDBSAMPLE_WIRE_LOG=str(log)))
    finally:
        s.close()
    assert r.returncode == 0, r
    lines = log.read_text().splitlines()
    assert lines[0] == "kept"
    where = f"127.0.0.1:{s.port}"
    fields = [ln.split(" ", 4) for ln in lines[1:]]
    assert all(len(f) == 5 and f[2] == where and f[3] in "<>" for f in fields), lines[:5]
    assert fields[0][3] == ">" and fields[0][4].startswith("$qSupported"), fields[0]
    assert any(f[3] == "<" and "PacketSize=" in f[4] for f in fields), lines[:5]
    assert any(f[3] == ">" and f[4].startswith("\\x03") for f in fields)  # a sample's stop byte, escaped
    assert fields[-2][3:] == [">", "$D;1#b0"] and fields[-1][3] == "<" and "$OK" in fields[-1][4], lines[-2:]
    times = [float(f[0]) for f in fields]
    assert times == sorted(times)


def test_wire_log_has_the_guards_rescue(tmp_path):
    """The pause watchdog's resume is in the wire log too, as connection `guard` with its own pid:
    gdbsample SIGSTOPped inside its 20th sample (by the fake stub, at that `g`), the guard resumes
    the VM after --max-pause, and its bytes (`\\x03$c#63` behind the ack) are logged."""
    log = tmp_path / "wire.log"
    state = {"g": 0, "p": None}

    def hook(req):
        if req == b"g":
            state["g"] += 1
            if state["g"] == 20 and state["p"]:
                state["p"].send_signal(signal.SIGSTOP)
    s = FakeStub(hook=hook)
    try:
        p = subprocess.Popen([GDBSAMPLE, "-p", str(s.port), "-r", "50", "-f", "folded", "-q", "--max-pause", "0.3"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             env=dict(os.environ, GDBSAMPLE_WIRE_LOG=str(log)))
        state["p"] = p
        try:
            guard_lines = []
            for _ in range(200):  # a hang bound (~20 s); what is judged is the log's content
                time.sleep(0.1)
                guard_lines = [ln for ln in log.read_text().splitlines() if ln.split(" ")[2:3] == ["guard"]] \
                    if log.exists() else []
                if guard_lines:
                    break
        finally:
            p.send_signal(signal.SIGCONT)
            p.kill()
            p.wait()
    finally:
        s.close()
    assert guard_lines, log.read_text()[-2000:]
    f = guard_lines[0].split(" ", 4)
    assert f[3] == ">" and "$c#63" in f[4], f
    assert int(f[1]) != p.pid  # the guard's own process
