# SPDX-License-Identifier: MIT
"""Capture version 6's off-CPU samples (`gdbsample record --off-cpu -f capture`): the reader's
extension record 3 (state, weight), fold and flamegraph's --state (each off-CPU stack under its
task as TASK;off-cpu/STATE;..., counted by its weight, on no vCPU), the other commands' note of
what they left out, and the usage errors; the record is nothing before version 6."""
import struct

import pytest

import capgen
from analyze import call as run  # in this process: no interpreter start per call
from analyze import one_line_error
from gdbsample_analysis.capture import Capture

K = 0xffffffff81000000                   # the map's text: main, then a function a 0x100
MAP = "ffffffff81000000 T main\nffffffff81000100 T spin\nffffffff81000200 T nap\nffffffff81000300 T swtch\n"
SHELL = (3, 3, 0xffff888000010000, b"shell")
SLEEP = (4, 4, 0xffff888000020000, b"sleep")
SPIN = (5, 5, 0xffff888000030000, b"spin")
BLOCKED, RUNNABLE = 2, 1                  # the record's state byte


def offcpu(state, weight):
    return bytes([3, 5, state]) + struct.pack("<I", weight)


def samples():
    """Three rounds: spin on vCPU 1 (on-CPU, weight 1 each), sleep blocked in nap (weight 10 each),
    shell blocked (weight 10), then runnable once (weight 3)."""
    out = []
    for r in range(3):
        t = r * 10000000
        out.append((t, 1, 0, (K + 0x110, K + 0x10), (), SPIN, b""))
        out.append((t, 0, 0, (K + 0x300, K + 0x210, K + 0x20), (), SLEEP, offcpu(BLOCKED, 10)))
        out.append((t, 0, 0, (K + 0x300, K + 0x30), (), SHELL, offcpu(BLOCKED if r < 2 else RUNNABLE, 10 if r < 2 else 3)))
    return out


def write(tmp_path, version=6):
    path = tmp_path / ("off-v%d.cap" % version)
    body = [capgen.record(t, cpu, flags, frames, exact, version=version, task=task, extra=extra)
            for t, cpu, flags, frames, exact, task, extra in samples()]
    data = (capgen.header(version=version, ncpus=2, task_os=capgen.TASK_OS_TESTKERNEL)
            + capgen.chunk(1, b"".join(body), len(body), version)
            + capgen.chunk(2, capgen.summary_text({"duration_ns": 30000000, "samples": 3}), 1, version))
    path.write_bytes(data)
    mp = tmp_path / "k.map"
    mp.write_text(MAP)
    return str(path), str(mp)


def folded(text):
    return dict((line.rsplit(" ", 1)[0], int(line.rsplit(" ", 1)[1])) for line in text.splitlines())


def test_the_reader_gives_state_and_weight(tmp_path):
    cap, _ = write(tmp_path)
    got = list(Capture(cap).samples())
    assert [(s.offcpu, s.weight) for s in got[:3]] == [(None, 1), ("blocked", 10), ("blocked", 10)]
    assert (got[-1].offcpu, got[-1].weight, got[-1].task.comm) == ("runnable", 3, "shell")


def test_before_version_6_the_record_is_skipped(tmp_path):
    cap, _ = write(tmp_path, version=5)
    got = list(Capture(cap).samples())
    assert all(s.offcpu is None and s.weight == 1 for s in got) and len(got) == 9


def test_fold_state_all_folds_as_gdbsample_does(tmp_path):
    cap, mp = write(tmp_path)
    r = run("fold", cap, "-e", mp, "--state", "all")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    assert folded(r.stdout) == {
        "spin;main;spin": 3,
        "sleep;off-cpu/blocked;main;nap;swtch": 30,
        "shell;off-cpu/blocked;main;swtch": 20,
        "shell;off-cpu/runnable;main;swtch": 3,
    }


@pytest.mark.parametrize("state, want", [
    ("blocked", {"sleep;off-cpu/blocked;main;nap;swtch", "shell;off-cpu/blocked;main;swtch"}),
    ("runnable", {"shell;off-cpu/runnable;main;swtch"}),
    ("off-cpu", {"sleep;off-cpu/blocked;main;nap;swtch", "shell;off-cpu/blocked;main;swtch",
                 "shell;off-cpu/runnable;main;swtch"}),
    ("on-cpu,runnable", {"spin;main;spin", "shell;off-cpu/runnable;main;swtch"}),
])
def test_state_selects(tmp_path, state, want):
    cap, mp = write(tmp_path)
    r = run("fold", cap, "-e", mp, "--state", state)
    assert r.returncode == 0 and set(folded(r.stdout)) == want, r.stdout


def test_the_default_is_on_cpu_and_says_what_it_left_out(tmp_path):
    """Off-CPU samples are no vCPU's: by default they are left out of every command -- counted in
    one line -- so `report`, `compare` and the rest see what they always saw."""
    cap, mp = write(tmp_path)
    r = run("fold", cap, "-e", mp)
    assert r.returncode == 0 and folded(r.stdout) == {"spin;main;spin": 3}
    assert r.stderr == ("gdbsample-analyze: 6 off-CPU samples (gdbsample record --off-cpu) left out: fold, "
                        "flamegraph, report, pprof and speedscope show them with --state all\n")
    r = run("report", cap, "-e", mp)
    assert r.returncode == 0 and "6 off-CPU samples" in r.stderr and "nap" not in r.stdout


def test_cpu_roots_and_filters_leave_off_cpu_stacks_alone(tmp_path):
    cap, mp = write(tmp_path)
    r = run("fold", cap, "-e", mp, "--state", "all", "--group-by-cpu", "--task-format", "comm", "--cpu", "1")
    assert folded(r.stdout) == {"spin;cpu1;main;spin": 3, "sleep;off-cpu/blocked;main;nap;swtch": 30,
                                "shell;off-cpu/blocked;main;swtch": 20, "shell;off-cpu/runnable;main;swtch": 3}
    r = run("fold", cap, "-e", mp, "--state", "off-cpu", "--comm", "^sleep$", "--until", "15ms")
    assert folded(r.stdout) == {"sleep;off-cpu/blocked;main;nap;swtch": 20}


@pytest.mark.parametrize("args, message", [
    (["--state", "asleep"], "--state: bad state 'asleep'"),
    (["--state", "all", "--split-by-cpu", "-o", "OUT"], "--split-by-cpu: off-CPU samples ran on no vCPU"),
])
def test_state_errors_are_one_line(tmp_path, args, message):
    cap, mp = write(tmp_path)
    args = [str(tmp_path / "o.folded") if a == "OUT" else a for a in args]
    r = run("fold", cap, "-e", mp, *args)
    assert r.returncode == 2 and one_line_error(r) and message in r.stderr, r.stderr


def test_state_on_a_capture_without_off_cpu_samples_is_refused(tmp_path):
    cap, mp = write(tmp_path, version=5)
    r = run("fold", cap, "-e", mp, "--state", "blocked")
    assert r.returncode == 2 and one_line_error(r) and "holds no off-CPU samples (capture version 5" in r.stderr


def test_report_counts_periods_and_marks_off_cpu_chains(tmp_path):
    """report --state all: wall time in sample periods (3 vCPU samples + 53 off-CPU periods), the
    off-CPU line's shares by state, each off-CPU chain's leaf marked with its state, each task's
    off-CPU share; --state runnable alone: only shell's 3 periods."""
    cap, mp = write(tmp_path)
    r = run("report", cap, "-e", mp, "--state", "all", "--chains", "10")
    assert r.returncode == 0 and r.stderr == "", r.stderr
    lines = r.stdout.splitlines()
    assert lines[1] == "56 samples on 2 cpus, 0 dropped, source gdbstub 100 Hz", lines
    assert lines[2] == "off-cpu 53 periods, 94.6% of the report, over 2 tasks: blocked 94.3%, runnable 5.7%", lines
    assert lines[3:6] == ["task 53.6% 30 sleep pid 4 tgid 4, user 0.0%, off-cpu 100.0%",
                          "task 41.1% 23 shell pid 3 tgid 3, user 0.0%, off-cpu 100.0%",
                          "task 5.4% 3 spin pid 5 tgid 5, user 0.0%, off-cpu 0.0%"], lines
    assert lines[6:9] == ["53.6% 30 swtch+0x0 [off-cpu/blocked]", "        <- nap+0x10", "        <- main+0x20"], lines
    assert lines[9:11] == ["35.7% 20 swtch+0x0 [off-cpu/blocked]", "        <- main+0x30"], lines
    assert "5.4% 3 spin+0x10" in lines and "5.4% 3 swtch+0x0 [off-cpu/runnable]" in lines, lines
    r = run("report", cap, "-e", mp, "--state", "runnable")
    lines = r.stdout.splitlines()
    assert lines[1:4] == ["3 samples on 2 cpus, 0 dropped, source gdbstub 100 Hz",
                          "off-cpu 3 periods, 100.0% of the report, over 1 tasks: runnable 100.0%",
                          "task 100.0% 3 shell pid 3 tgid 3, user 0.0%, off-cpu 100.0%"], lines


def test_flamegraph_shows_the_off_cpu_frames(tmp_path):
    cap, mp = write(tmp_path)
    out = tmp_path / "f.svg"
    r = run("flamegraph", cap, "-e", mp, "--state", "all", "-o", str(out))
    assert r.returncode == 0, r.stderr
    svg = out.read_text()
    assert "off-cpu/blocked" in svg and "off-cpu/runnable" in svg and "nap" in svg


def test_info_counts_off_cpu_stacks_apart_from_the_vcpus(tmp_path):
    import json
    cap, _ = write(tmp_path)
    r = run("info", "--json", cap)
    doc = json.loads(r.stdout)
    assert doc["offcpu"] == {"blocked": {"stacks": 5, "periods": 50}, "runnable": {"stacks": 1, "periods": 3},
                             "uninterruptible": {"stacks": 0, "periods": 0}}
    assert doc["samples"]["total"] == 3 and [c["cpu"] for c in doc["cpus"]] == [1]  # spin's, on vCPU 1
    assert [t["comm"] for t in doc["tasks"]["list"]] == ["shell", "sleep", "spin"]
    text = run("info", cap).stdout
    assert "off-CPU     6 stacks of tasks not running (record --off-cpu): blocked 5 standing for 50 periods, " \
           "uninterruptible 0 for 0, runnable 1 for 3" in text


def test_uninterruptible_is_a_state_of_its_own(tmp_path):
    """Linux's D (state byte 3): read, folded under off-cpu/uninterruptible, selected alone or with
    off-cpu, counted by info."""
    import json
    path = tmp_path / "d.cap"
    disk = (6, 6, 0xffff888000040000, b"disk")
    body = [capgen.record(0, 0, 0, (K + 0x300, K + 0x210), (), version=6, task=disk, extra=offcpu(3, 7)),
            capgen.record(0, 1, 0, (K + 0x110,), (), version=6, task=SPIN)]
    path.write_bytes(capgen.header(version=6, ncpus=2, task_os=capgen.TASK_OS_TESTKERNEL)
                     + capgen.chunk(1, b"".join(body), len(body), 6))
    mp = tmp_path / "k.map"
    mp.write_text(MAP)
    got = list(Capture(str(path)).samples())
    assert (got[0].offcpu, got[0].weight) == ("uninterruptible", 7)
    want = {"disk;off-cpu/uninterruptible;nap;swtch": 7}
    assert folded(run("fold", str(path), "-e", str(mp), "--state", "uninterruptible").stdout) == want
    assert folded(run("fold", str(path), "-e", str(mp), "--state", "off-cpu").stdout) == want
    assert folded(run("fold", str(path), "-e", str(mp), "--state", "blocked").stdout) == {}
    doc = json.loads(run("info", "--json", str(path)).stdout)
    assert doc["offcpu"]["uninterruptible"] == {"stacks": 1, "periods": 7}


def test_pprof_gives_off_cpu_stacks_a_state_and_their_wall_time(tmp_path):
    """pprof --state all: an off-CPU stack is a sample with a `state` label and no `cpu` one, its
    samples value its weight and its wall value that many periods (10 ms at the capture's 100 Hz);
    the default leaves them out, as every command does."""
    import importlib.util
    import gzip
    import os
    import conftest
    pb2 = os.path.join(conftest.BUILD, "pprof", "profile_pb2.py")
    if not os.path.exists(pb2):
        pytest.fail(f"{pb2} is missing: run `make`")
    spec = importlib.util.spec_from_file_location("offcpu_profile_pb2", pb2)
    pb = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(pb)
    cap, mp = write(tmp_path)
    got = {}
    for state in ("all", "on-cpu"):
        out = tmp_path / ("p-%s.pb.gz" % state)
        r = run("pprof", cap, "-e", mp, "--state", state, "-o", str(out))
        assert r.returncode == 0, r.stderr
        prof = pb.Profile()
        prof.ParseFromString(gzip.decompress(out.read_bytes()))
        st = list(prof.string_table)
        fn = {f.id: st[f.name] for f in prof.function}
        loc = {lc.id: fn[lc.line[0].function_id] for lc in prof.location}
        rows = {}
        for s in prof.sample:
            labels = dict((st[lb.key], st[lb.str]) for lb in s.label)
            key = (labels["comm"], labels.get("state") or "cpu" + labels["cpu"],
                   ";".join(loc[i] for i in reversed(s.location_id)))
            rows[key] = [a + b for a, b in zip(rows.get(key, [0, 0]), s.value)]
        got[state] = rows
    assert got["all"][("sleep", "off-cpu/blocked", "main;nap;swtch")] == [30, 300000000]
    assert got["all"][("shell", "off-cpu/runnable", "main;swtch")] == [3, 30000000]
    assert got["all"][("spin", "cpu1", "main;spin")][0] == 3
    assert set(got["on-cpu"]) == {("spin", "cpu1", "main;spin")}


def test_speedscope_adds_a_wall_profile_per_task(tmp_path):
    """speedscope --state all: the vCPUs' profiles as before, then one `comm-pid (wall)` profile a
    task, in pid order: its on-CPU samples a period each and its off-CPU stacks their periods,
    under off-cpu/STATE, in time order."""
    import json
    cap, mp = write(tmp_path)
    out = tmp_path / "s.json"
    r = run("speedscope", cap, "-e", mp, "--state", "all", "-o", str(out))
    assert r.returncode == 0, r.stderr
    doc = json.loads(out.read_text())
    names = [p["name"] for p in doc["profiles"]]
    assert names == ["cpu1", "shell-3 (wall)", "sleep-4 (wall)", "spin-5 (wall)"], names
    frames = [f["name"] for f in doc["shared"]["frames"]]
    shell = doc["profiles"][1]
    stacks = [";".join(frames[i] for i in s) for s in shell["samples"]]
    assert stacks == ["shell-3;off-cpu/blocked;main;swtch"] * 2 + ["shell-3;off-cpu/runnable;main;swtch"]
    assert shell["weights"] == [100000000, 100000000, 30000000]
    spin = doc["profiles"][3]
    assert spin["weights"] == [10000000] * 3 and shell["endValue"] - shell["startValue"] == 230000000
    r = run("speedscope", cap, "-e", mp, "-o", str(tmp_path / "plain.json"))
    assert [p["name"] for p in json.loads((tmp_path / "plain.json").read_text())["profiles"]] == ["cpu1"]
