# SPDX-License-Identifier: MIT
"""gdbsample replay: a run of the test kernel recorded once with QEMU's record/replay (-icount
shift=5,rr=record; no profiler attached), then replayed with gdbsample stopping it at every
multiple of --every instructions. Two replays of one recording give byte-identical folded
output, however late gdbsample attached to each; the shares of `work split 5 3 2` come out as
the workload's instruction counts say; a recording that ends before --until ends the profile
cleanly; a QEMU that replays nothing is refused with one line and left running.

The byte-identical check runs on QEMU 7.2 and 10.0, the rest on 7.2; all -smp 1: QEMU refuses
record/replay with more than one vCPU (seen: `-smp 2` with rr=record fails to start)."""
import gzip
import importlib.util
import os
import signal
import subprocess
import time

import conftest
import crosscheck
import pytest
import vmconfig
from guest import Guest

pytestmark = pytest.mark.qemu  # the module's own fixture records and replays guests

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
SHIFT = 5                   # -icount shift: the virtual clock advances 2^5 ns an instruction
RECORD_TO = 900_000_000     # instructions recorded at least (boot to the prompt takes ~18 M)
FROM, UNTIL, EVERY = 300_000_000, 800_000_000, 500_000  # 1 001 samples of `work split 5 3 2`
SPLIT = {"split_a": 0.5, "split_b": 0.3, "split_c": 0.2}


def icount_of(g):
    """The instruction count a recording or replaying guest is at (HMP `info replay`)."""
    text = conftest.hmp(g.qmp_path, "info replay")
    return int(text.rsplit("instruction count = ", 1)[1].split()[0])


class PausedReplay(Guest):
    """A replay started paused (-S) and returned at once: nothing runs before the test's
    replay_break is in (beside hogs a replay that ran while the prompt was awaited and the break
    sent was at 382 M instructions, past FROM)."""
    READY = ""

    def booted(self):
        """Returns once the monitor answers (QEMU makes its QMP socket after the serial one)."""
        deadline = time.monotonic() + 30
        while True:
            try:
                assert conftest.qmp_status(self.qmp_path) == "prelaunch"
                return
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)


def rr_guest(mode, path, gdb, qemu="7.2", paused=False):
    """QEMU recording or replaying; paused: started with -S, returned before it boots."""
    kind = PausedReplay if paused else Guest
    return kind(conftest.KERNEL, smp=1, gdb=gdb, qmp=True, qemu=qemu,
                extra=vmconfig.rr_args(mode, path, shift=SHIFT) + (["-S"] if paused else []))


def record(path, qemu):
    """The recording: boot, `work split 5 3 2`, RECORD_TO instructions at least; QEMU is then
    stopped by its pid, which ends the recording there (its replay exits at that point)."""
    g = rr_guest("record", path, gdb=False, qemu=qemu).start()
    try:
        # In rr=record, a line longer than the UART's 16-byte FIFO never completes (QEMU 7.2: the
        # rest waits for a chardev read that never comes): typed in two pieces, each echoed first.
        g.send("work split ")
        g.read_until("work split ")
        g.send("5 3 2\n")
        assert "split 5 3 2 on cpu0" in g.read_until("\n> ")
        deadline = time.monotonic() + 120
        while icount_of(g) < RECORD_TO and time.monotonic() < deadline:
            time.sleep(0.2)
        assert icount_of(g) >= RECORD_TO
    finally:
        g.stop()
    return path


@pytest.fixture(scope="module")
def recordings(tmp_path_factory):
    """recordings(qemu) -> the path of that QEMU's recording, made once for the module."""
    made = {}

    def get(qemu):
        if qemu not in made:
            made[qemu] = record(str(tmp_path_factory.mktemp("rr") / "split.rr"), qemu)
        return made[qemu]
    return get


@pytest.fixture
def recording(recordings):
    return recordings("7.2")


def paused_at(path, at, qemu="7.2"):
    """A replay of the recording stopped by QEMU itself at exactly `at` instructions, to be handed
    to gdbsample with --resume-paused: paused before FROM however slow gdbsample's start on a
    loaded host (it was seen attaching at 495 M beside CPU hogs, and a QMP stop 0.5 s after the
    prompt came at 307 M; a break set after the prompt, at 382 M), as it is started paused (-S)
    and the break goes in before it runs (replay_break). The caller stops it."""
    g = rr_guest("replay", path, gdb=True, qemu=qemu, paused=True).start()
    assert "Error" not in conftest.hmp(g.qmp_path, f"replay_break {at}")
    conftest.qmp(g.qmp_path, "cont")
    deadline = time.monotonic() + 60
    while conftest.qmp_status(g.qmp_path) == "prelaunch" and time.monotonic() < deadline:
        time.sleep(0.05)  # cont ran it: it pauses again at the break
    while conftest.qmp_status(g.qmp_path) != "paused" and time.monotonic() < deadline:
        time.sleep(0.05)
    return g


def replay(path, *args, at=100_000_000, qemu="7.2"):
    """Replay the recording with gdbsample replay ARGS, attaching at instruction `at`;
    (CompletedProcess, QEMU's exit status or None if it still ran, the summary's keys)."""
    g = paused_at(path, at, qemu)
    try:
        r = subprocess.run([GDBSAMPLE, "replay", "-p", str(g.gdbport), "-e", g.kernel, "--summary-format", "kv",
                            "--resume-paused"] + [str(a) for a in args], capture_output=True, text=True, timeout=300)
        kv = dict(line.split(" ", 1) for line in r.stderr.splitlines() if " " in line and not line.startswith("gdbsample"))
        if kv.get("replay_end") == "recording-ended":
            # QEMU sent W00 and is exiting: it may not have been reaped yet when gdbsample returns
            # (CI saw poll() say None while its QMP socket was already gone), so wait for the exit.
            try:
                status = g.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                status = None  # the test's own assertion reports a replay that did not end
        else:
            status = g.proc.poll()
            if status is None:  # the replay runs on after gdbsample left (D;1 resumed it) --
                try:            # or has run to the recording's end and exited meanwhile (a race
                    assert conftest.qmp_status(g.qmp_path) == "running"  # a loaded host lost once)
                except OSError:
                    status = g.proc.wait(timeout=60)
                    assert status == 0, status
        return r, status, kv
    finally:
        g.stop()


def folded(text):
    """{stack: count} of folded text."""
    out = {}
    for line in text.splitlines():
        stack, _, n = line.rpartition(" ")
        out[stack] = out.get(stack, 0) + int(n)
    return out


@pytest.mark.parametrize("qemu", ["7.2", "10.0"])
def test_two_replays_give_byte_identical_profiles(recordings, tmp_path, qemu):
    """Attached at different instruction counts (100 M and 200 M), on the same grid: the same
    samples, the same bytes -- on both QEMUs (each its own recording)."""
    recording = recordings(qemu)
    outs = []
    for i, at in enumerate((100_000_000, 200_000_000)):
        out = str(tmp_path / f"r{i}.folded")
        r, _, kv = replay(recording, "--every", EVERY, "--from", FROM, "--until", UNTIL, "-f", "folded", "-o", out,
                          at=at, qemu=qemu)
        assert r.returncode == 0, r.stderr
        assert kv["replay_end"] == "until" and kv["replay_off_target"] == "0", r.stderr
        assert kv["replay_first_icount"] == str(FROM) and kv["replay_last_icount"] == str(UNTIL), r.stderr
        assert kv["replay_samples"] == str((UNTIL - FROM) // EVERY + 1), r.stderr
        assert int(kv["replay_attach_icount"]) < FROM, r.stderr
        with open(out, "rb") as f:
            outs.append(f.read())
    assert outs[0] == outs[1]
    stacks = folded(outs[0].decode())
    assert sum(stacks.values()) == (UNTIL - FROM) // EVERY + 1
    assert any(s.endswith(";split_a") for s in stacks), stacks


def test_split_shares_are_the_instruction_counts(recording):
    """split_a, _b and _c run identical loops 5, 3 and 2 units at a time: by instruction count
    their shares are 50/30/20 %. 1 001 samples: a binomial share of 0.5 has a standard deviation
    of 1.6 pp, so 5 pp is over 3 of them (and the grid, not chance, places them: a recording is
    sampled the same way every time)."""
    r, _, _ = replay(recording, "--every", EVERY, "--from", FROM, "--until", UNTIL, "-f", "folded")
    assert r.returncode == 0, r.stderr
    stacks = folded(r.stdout)
    total = sum(stacks.values())
    for name, want in SPLIT.items():
        got = sum(n for s, n in stacks.items() if s.split(";")[-1] == name) / total
        assert abs(got - want) <= 0.05, (name, got, stacks)


def leaf_counts(stacks):
    """{split function: samples whose leaf it is} of {stack: count}."""
    return {name: sum(n for st, n in stacks.items() if st.split(";")[-1] == name) for name in SPLIT}


def test_replay_shares_match_a_live_runs(recording, boot):
    """The replay's shares (by instruction count) against a live run's (by wall time, gdbsample
    record on a guest doing the same `work split 5 3 2`, -smp 1 as the recording): identical loops
    run at one speed, so the two estimate the same shares. Each function's two shares agree within
    4 standard deviations of their difference (binomial, pooled): a wrong grid, a replay sampled off
    its counts or a live run biased by its stops would part them; chance does so about once in
    15 000 runs for the three."""
    r, _, _ = replay(recording, "--every", EVERY, "--from", FROM, "--until", UNTIL, "-f", "folded")
    assert r.returncode == 0, r.stderr
    rep = leaf_counts(folded(r.stdout))
    g = boot(smp=1)
    g.send("work split 5 3 2\n")
    g.read_until("\n> ")
    live = dict.fromkeys(SPLIT, 0)
    window = crosscheck.WaitWindow(g.proc.pid)
    for _ in range(10):  # a loaded host gives fewer samples a run: add runs until 800
        lr = conftest.gdbsample("record", "-p", g.gdbport, "-e", g.kernel, "-r", 500, "-d", 2, "-f", "folded",
                                timeout=120)
        assert lr.returncode == 0, lr.stderr
        for name, n in leaf_counts(folded(lr.stdout)).items():
            live[name] += n
        if sum(live.values()) >= 800:
            break
    n1, n2 = sum(rep.values()), sum(live.values())
    print("\nreplay " + " ".join(f"{k} {v / n1:.3f}" for k, v in rep.items()) + f" of {n1}; live " +
          " ".join(f"{k} {v / n2:.3f}" for k, v in live.items()) + f" of {n2}")
    assert n1 >= 800 and n2 >= 800, (rep, live)
    # A live run's stops come in wall time: while its vCPU thread waits for a host core they are
    # no longer uniform in guest time, a bias rather than noise (9.3 pp on split_c beside two hogs
    # and a busy suite). Contended (crosscheck.CONTENDED of the window), the bound is the 12 pp the
    # project credits contention with (compare's HOST_CONTENDED_PP).
    waited = window.waited()
    assert waited is not None, "no schedstat for QEMU's vCPU threads"
    for name in SPLIT:
        p1, p2 = rep[name] / n1, live[name] / n2
        pooled = (rep[name] + live[name]) / (n1 + n2)
        sd = (pooled * (1 - pooled) * (1 / n1 + 1 / n2)) ** 0.5
        bound = 4 * sd if waited < crosscheck.CONTENDED else max(4 * sd, 0.12)
        assert abs(p1 - p2) <= bound, (name, p1, p2, sd, waited, rep, live)


def test_a_recording_that_ends_before_until_ends_the_profile(recording, tmp_path):
    """--until past the recording's end: QEMU's replay exits where the recording stopped (W00);
    gdbsample writes what it sampled, says where the recording ended, exits 0."""
    out = str(tmp_path / "end.cap")
    r, status, kv = replay(recording, "--every", 20_000_000, "--from", FROM, "--until", 10**15, "-f", "capture",
                           "-o", out)
    assert r.returncode == 0, r.stderr
    assert status == 0 and kv["replay_end"] == "recording-ended", (status, r.stderr)
    assert "gdbsample: the recording ended after instruction " in r.stderr
    last = int(kv["replay_last_icount"])
    assert last >= RECORD_TO - 20_000_000 and last % 20_000_000 == 0, r.stderr
    info = subprocess.run([os.path.join(conftest.ROOT, "analysis", "gdbsample-analyze"), "info", out],
                          capture_output=True, text=True, timeout=60)
    assert info.returncode == 0 and "instruction counts" in info.stdout, info.stdout + info.stderr
    assert f"samples from instruction {FROM} to {last}" in info.stdout, info.stdout
    # pprof: the period is --every instructions, and every sample weighs the instructions to the next
    pb2 = os.path.join(conftest.BUILD, "pprof", "profile_pb2.py")
    spec = importlib.util.spec_from_file_location("replay_profile_pb2", pb2)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    pp = str(tmp_path / "end.pb.gz")
    r = subprocess.run([os.path.join(conftest.ROOT, "analysis", "gdbsample-analyze"), "pprof", "-o", pp, out],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    prof = mod.Profile()
    with open(pp, "rb") as f:
        prof.ParseFromString(gzip.decompress(f.read()))
    st = prof.string_table
    assert [(st[t.type], st[t.unit]) for t in prof.sample_type] == [("samples", "count"), ("instructions", "count")]
    assert (st[prof.period_type.type], prof.period) == ("instructions", 20_000_000)
    n = sum(x.value[0] for x in prof.sample)
    assert n == int(kv["replay_samples"]) and sum(x.value[1] for x in prof.sample) == n * 20_000_000


def test_a_signal_ends_the_replay_and_the_profile_is_written(recording, tmp_path):
    """SIGINT once the replay is past FROM: gdbsample stops it where it is, writes what it
    sampled, detaches -- and the replay runs on to the recording's end (QEMU exits 0). The replay
    waits at 100 M for gdbsample (paused_at): past FROM it runs only because gdbsample drives it,
    so the signal comes after the attach (beside hogs an unpaused replay reached FROM while
    gdbsample was still connecting, and the signal ended the connect: exit 1)."""
    g = paused_at(recording, 100_000_000)
    try:
        out = str(tmp_path / "sig.folded")
        p = subprocess.Popen([GDBSAMPLE, "replay", "-p", str(g.gdbport), "-e", g.kernel, "--every", "1000000",
                              "--resume-paused", "-f", "folded", "-o", out, "--summary-format", "kv"],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        deadline = time.monotonic() + 120
        while icount_of(g) < FROM and p.poll() is None and time.monotonic() < deadline:
            time.sleep(0.1)
        assert p.poll() is None, p.communicate()
        p.send_signal(signal.SIGINT)
        _, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert "replay_end signal" in err, err
        with open(out) as f:
            assert "split_" in f.read()
        assert g.proc.wait(120) == 0  # resumed by the detach, the replay ran to its end
    finally:
        g.stop()


def test_a_qemu_replaying_nothing_is_refused_and_left_running(boot):
    g = boot(smp=1, qmp=True)
    r = subprocess.run([GDBSAMPLE, "replay", "-p", str(g.gdbport), "-e", g.kernel], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and r.stdout == "", r
    lines = r.stderr.splitlines()
    assert len(lines) == 1 and "record/replay is not active in this QEMU" in lines[0], r.stderr
    assert conftest.wait_running(g.qmp_path) == "running"
    assert g.cmd("uptime").startswith("up ")


def test_a_paused_replay_is_left_paused_unless_handed_over(recording):
    """A replay someone paused is not gdbsample's to resume: refused in one line (exit 2) and
    left paused -- unless --resume-paused hands it over (the helper above does)."""
    g = rr_guest("replay", recording, gdb=True).start()
    try:
        conftest.qmp(g.qmp_path, "stop")
        r = subprocess.run([GDBSAMPLE, "replay", "-p", str(g.gdbport), "-e", g.kernel], capture_output=True,
                           text=True, timeout=60)
        assert r.returncode == 2 and r.stdout == "", r
        lines = r.stderr.splitlines()  # the error, and the close saying the VM is left as it was
        assert len(lines) == 2 and "--resume-paused" in lines[0], r.stderr
        assert lines[1] == "gdbsample: warning: left the VM stopped as we found it (paused before gdbsample came)"
        time.sleep(0.5)
        assert conftest.qmp_status(g.qmp_path) == "paused"
    finally:
        g.stop()
