# SPDX-License-Identifier: MIT
"""The guest is never left paused: signals to gdbsample's whole process group, and the pause
watchdog while gdbsample is stopped. Every QEMU is stopped by its pid (the boot fixture); every
gdbsample started here leads its own process group, which the tests signal as a terminal or
`timeout -s KILL` would, and is waited for."""
import os
import signal
import subprocess
import threading
import time

import conftest
import pytest
from fakestub import FakeStub, packet

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")


def has_stub(qmp_path):
    """A gdbstub chardev is open on the guest (QMP human-monitor-command `info chardev`)."""
    return any(line.startswith("gdb:") for line in conftest.hmp(qmp_path, "info chardev").splitlines())


def start_group(g, *args):
    """gdbsample against guest g as the leader of a new process group (start_new_session)."""
    cmd = [GDBSAMPLE, "-p", str(g.gdbport), "-e", g.kernel] + list(args)
    return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            start_new_session=True)


def rescues(err):
    """The summary's watchdog_rescues (kv form; absent: none)."""
    keys = dict(line.split(" ", 1) for line in err.splitlines() if line.startswith("watchdog_rescues "))
    return int(keys.get("watchdog_rescues", 0))


def wait_sampling(p):
    """Give gdbsample a moment to start sampling (the assertions hold wherever the signal lands,
    during attach included: this only makes most of them land mid-run)."""
    time.sleep(0.5)
    assert p.poll() is None, p.communicate()


def wait_attached(p, g, timeout=60):
    """Wait until gdbsample's attach stop has ended: QMP saw the VM paused (connecting stops it),
    then running (a round resumed it). The watchdog cannot bound the handshake -- until its end
    the stop may be an operator's pause (docs/attach.md) -- so a test of the watchdog starts after
    it. Polled as fast as QMP answers: at -r 10000 the VM runs a fair share between rounds."""
    deadline, paused = time.monotonic() + timeout, False
    while time.monotonic() < deadline:
        assert p.poll() is None, p.communicate()
        st = conftest.qmp_status(g.qmp_path)
        if st == "paused":
            paused = True
        elif paused and st == "running":
            return
    pytest.fail(f"gdbsample's attach did not end within {timeout} s (paused seen: {paused})")


CATCHABLE = [signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGALRM, signal.SIGTERM]


@pytest.mark.parametrize("sig", CATCHABLE, ids=[s.name for s in CATCHABLE])
def test_group_signal_takes_the_clean_way_out(boot, sig, tmp_path):
    """A signal to the whole group (gdbsample and its guard, as a closed terminal or `kill -- -PGID`
    sends it) while it samples: gdbsample finishes the sample, resumes, detaches, writes its capture
    (renamed into place: no partial left) and exits 0; the guest runs."""
    g = boot(smp=2, qmp=True)
    g.work("chain 6")
    cap = tmp_path / "run.cap"
    p = start_group(g, "-r", "500", "-f", "capture", "-o", str(cap))
    try:
        # mid-run: a loaded host once took more than 0.5 s to connect (`interrupted while connecting`)
        assert conftest.wait_capture_samples(p, cap), p.communicate(timeout=30) if p.poll() is not None else ""
        os.killpg(p.pid, sig)
        out, err = p.communicate(timeout=30)
    finally:
        if p.poll() is None:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
    assert p.returncode == 0, err
    assert "samples of 2 vCPUs" in err and cap.stat().st_size > 0 and not list(tmp_path.glob("run.cap.partial-*")), err
    assert conftest.wait_running(g.qmp_path) == "running"


def test_group_sigkill_never_leaves_guest_frozen(boot):
    """SIGKILL to the whole group, twenty times from the first millisecond on (attach included):
    the guard lives in a session of its own and is the one that connects, so it outlives the
    group and resumes the guest every time."""
    g = boot(smp=2, qmp=True)
    g.work("chain 6")
    for i in range(20):
        p = start_group(g, "-r", "1000", "-q")
        time.sleep(0.01 * i)
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate(timeout=30)
        assert conftest.wait_running(g.qmp_path, timeout=5) == "running", f"iteration {i}"
    assert g.cmd("uptime").startswith("up ")


def test_qmp_group_sigkill_closes_the_stub(boot):
    """With --qmp, a group SIGKILL: the guard (out of the group) closes the gdbstub gdbsample
    opened, and the guest runs; the next --qmp run is not refused."""
    g = boot(smp=2, gdb=False, qmp=True)
    g.work("chain 6")
    cmd = [GDBSAMPLE, "--qmp", g.qmp_path, "-e", g.kernel, "-r", "500", "-q"]
    for i in range(3):
        p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                             start_new_session=True)
        time.sleep(0.5 + 0.2 * i)
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate(timeout=30)
        assert conftest.wait_running(g.qmp_path, timeout=5) == "running", f"iteration {i}"
        # the guard resumes first, then closes the stub: wait for that (bounded)
        deadline = time.monotonic() + 10
        while has_stub(g.qmp_path) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not has_stub(g.qmp_path), f"iteration {i}: the gdbstub gdbsample opened is still there"
    r = subprocess.run(cmd[:5] + ["-d", "0.5"], capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr


def test_watchdog_resumes_guest_while_gdbsample_is_stopped(boot):
    """SIGSTOP gdbsample: within about --max-pause the guard resumes the guest (QMP says running
    while gdbsample is still stopped). SIGCONT: gdbsample notices, counts the rescue, goes on
    sampling and ends normally. At -r 10000 gdbsample samples back to back, so most SIGSTOPs land
    with the guest stopped (the others between two samples, when it runs anyway): forty rounds
    make a run without a single rescue vanishingly unlikely. Some land inside a write to the stub
    (~2 % of rounds): a guard that waited for a lock gdbsample held there kept the guest paused
    for as long as gdbsample was stopped (guard.c; test_guard.c drives that race step by step)."""
    g = boot(smp=2, qmp=True)
    g.work("chain 6")
    p = start_group(g, "-r", "10000", "--max-pause", "0.2", "--summary")  # no -q: a failure shows the warnings
    wait_attached(p, g)  # SIGSTOPped in the handshake, the guest stays paused: its pause may not be ours
    for i in range(40):
        os.kill(p.pid, signal.SIGSTOP)
        try:
            # the watchdog's limit is 0.2 s; allow a loaded host 5 s to notice
            assert conftest.wait_running(g.qmp_path, timeout=5) == "running", f"round {i}"
            if i % 8 == 0:
                assert g.cmd("uptime").startswith("up ")  # the guest really runs
        finally:
            os.kill(p.pid, signal.SIGCONT)
        time.sleep(0.005 * (i % 9))
    os.kill(p.pid, signal.SIGINT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert out.startswith("profiled ") and "chain6" in out, out
    assert conftest.wait_running(g.qmp_path) == "running"
    assert "the pause watchdog resumed the guest" in err, err


def test_the_watchdog_bounds_the_attach_stop_once_the_handshake_shows_it_is_ours():
    """Connecting stops the VM. Once the handshake has shown that stop is gdbsample's (here a stub
    that is not QEMU, so no operator's pause can hide behind it), the watchdog bounds the rest of
    the attach as it bounds a sample: gdbsample SIGSTOPped at its first request after the handshake
    (kfind's `g`, before any round) -> the guard sends `c` within about --max-pause; before, the
    attach's stop had no watchdog, and the VM stayed stopped for as long as gdbsample was (seen
    beside CPU hogs: a SIGSTOP 0.5 s after the start left a guest paused). SIGCONT: gdbsample
    notices the rescue, counts it and samples on."""
    proc, fired = {}, threading.Event()

    def hook(req):
        if req == b"g" and not fired.is_set():
            fired.set()
            os.kill(proc["p"].pid, signal.SIGSTOP)

    s = FakeStub(hook=hook)
    p = proc["p"] = subprocess.Popen([GDBSAMPLE, "-p", str(s.port), "-r", "100", "-d", "1", "--max-pause", "0.2",
                                      "--summary-format", "kv"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     text=True, start_new_session=True)
    try:
        assert fired.wait(30), s.sent()
        sent = s.sent()
        assert b"\x03" not in sent and b"c" not in sent, sent  # no round yet: still the attach's stop
        deadline = time.monotonic() + 10  # the limit is 0.2 s; allow a loaded host 10 s
        while b"c" not in s.sent() and time.monotonic() < deadline:
            time.sleep(0.02)
        assert b"c" in s.sent(), s.sent()  # resumed while gdbsample is still stopped
    finally:
        os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=30)
    s.close()
    assert p.returncode == 0, err
    assert rescues(err) >= 1 and out.startswith("profiled "), (out, err)


def test_watchdog_off_with_zero(boot):
    """--max-pause 0: no watchdog; a stopped gdbsample keeps the guest stopped (what a debugging
    user may want), and SIGCONT lets it finish normally."""
    g = boot(smp=1, qmp=True)
    g.work("chain 6")
    p = start_group(g, "-r", "100", "--max-pause", "0", "-d", "3")
    wait_sampling(p)
    os.kill(p.pid, signal.SIGSTOP)
    try:
        # gdbsample is stopped either between samples (the guest runs) or inside one (paused): over
        # 2 s it must not have been resumed *by the watchdog* -- the summary says none happened
        time.sleep(0.5)
    finally:
        os.kill(p.pid, signal.SIGCONT)
    out, err = p.communicate(timeout=30)
    assert p.returncode == 0, err
    assert "pause watchdog" not in err, err
    assert "watchdog_rescues" not in err
    assert conftest.wait_running(g.qmp_path) == "running"


@pytest.mark.parametrize("kind,nth", [(b"g", 0), (b"m", 0)])
def test_held_up_while_locating_the_kernel_the_attach_goes_on(boot, kind, nth):
    """gdbsample SIGSTOPped at one exact request of its attach with -e (a proxy in front of QEMU's
    stub sees it): the first read of the kernel's text, a later one, the second look at a vCPU's
    registers. The watchdog resumes the guest within about --max-pause (QMP says running while
    gdbsample is still stopped); SIGCONT: the attach stops the VM again, reads on and samples --
    before, the refused request ended the attach ("the pause watchdog resumed the guest while
    gdbsample was held up", exit 1; seen in CI once a slow attach had let the VM run between two
    slices, and the test above had stopped gdbsample in the next)."""
    from rspproxy import run_stopped
    g = boot(smp=2, qmp=True)
    g.work("chain 6")

    def while_stopped(px):
        assert b"c" not in px.sent(), px.sent()  # still the attach: no round has resumed the VM
        # the watchdog's limit is 0.2 s; allow a loaded host 10 s
        assert conftest.wait_running(g.qmp_path, timeout=10) == "running", px.sent()

    rc, out, err = run_stopped(g.gdbport, [GDBSAMPLE, "-p", "{port}", "-e", g.kernel, "-r", "200", "-d", "1",
                                           "--max-pause", "0.2", "--summary-format", "kv"],
                               lambda req, n: req[:1] == kind and n == nth, while_stopped)
    assert rc == 0, err
    # ours at least; beside hogs a second came (a 369 ms attach stop past the 0.2 s limit)
    assert rescues(err) >= 1 and out.startswith("profiled ") and "chain6" in out, (out, err)
    assert conftest.wait_running(g.qmp_path) == "running"



def test_a_step_that_stops_after_the_guards_resume_is_resumed_again():
    """gdbsample killed while the VM is stopped: the guard resumes it with `+ 0x03 ... $c`. A single
    step of gdbsample's (a `count` hit's step-over) may end after that `c`: its SIGTRAP stop reply
    stops the VM again, for good (seen beside hogs: test_a_killed_count_leaves_no_breakpoint's
    guest never answered). The fake stub sends that T05 right after the guard's `c`; the guard must
    resume once more (another 0x03 and `c` after it). An operator's stop (T02) is not resumed:
    test_the_guard_leaves_an_operators_stop_alone, beside this."""
    state = {"g": 0, "p": None, "last": None, "trapped": None}

    def hook(req):
        last, state["last"] = state["last"], req
        if req == b"g":
            state["g"] += 1
            if state["g"] == 20 and state["p"]:
                state["p"].kill()  # inside a sample: the VM is stopped, the guard takes over
        if req == b"c" and last == b"\x03" and state["g"] >= 20 and state["trapped"] is None:
            state["trapped"] = len(s.sent())  # the guard's `c` (0x03 just before it): the late step's stop
            return packet(b"T05thread:p01.01;")
        return None
    s = FakeStub(hook=hook)
    try:
        p = subprocess.Popen([GDBSAMPLE, "-p", str(s.port), "-r", "50", "-f", "folded", "-q"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        state["p"] = p
        p.communicate(timeout=60)
        assert s.closed.wait(30), "the guard never closed the gdbstub connection"  # a hang bound
    finally:
        s.close()
    assert state["trapped"] is not None, s.sent()[-10:]
    after = s.sent()[state["trapped"]:]
    assert b"c" in after and b"\x03" in after[:after.index(b"c")], after


def test_the_guard_leaves_an_operators_stop_alone():
    """As above, but what stops the VM after the guard's `c` is an operator's `stop` (T02): the
    guard sends nothing more -- the VM stays as the operator left it."""
    state = {"g": 0, "p": None, "last": None, "stopped": None}

    def hook(req):
        last, state["last"] = state["last"], req
        if req == b"g":
            state["g"] += 1
            if state["g"] == 20 and state["p"]:
                state["p"].kill()
        if req == b"c" and last == b"\x03" and state["g"] >= 20 and state["stopped"] is None:
            state["stopped"] = len(s.sent())
            return packet(b"T02thread:p01.01;")
        return None
    s = FakeStub(hook=hook)
    try:
        p = subprocess.Popen([GDBSAMPLE, "-p", str(s.port), "-r", "50", "-f", "folded", "-q"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        state["p"] = p
        p.communicate(timeout=60)
        assert s.closed.wait(30), "the guard never closed the gdbstub connection"  # all it sent, it has
    finally:
        s.close()
    assert state["stopped"] is not None, s.sent()[-10:]
    assert s.sent()[state["stopped"]:] == [], s.sent()[state["stopped"]:]
