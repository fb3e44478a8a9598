# SPDX-License-Identifier: MIT
"""The cross-check on x86_64, where the timer tick is blind: irqoff code is seen outside only; per-pid
profiles; `make demo` runs from a clean clone. The split shares on every architecture:
tests/system/test_crosscheck_arches.py (which shares this file's helpers)."""
import os
import re
import subprocess
import sys

import conftest
import pytest

import crosscheck

pytestmark = pytest.mark.qemu  # tools/crosscheck.py boots the kernel

GDBSAMPLE = os.path.join(conftest.BUILD, "gdbsample")
ANALYZE = os.path.join(conftest.ROOT, "analysis", "gdbsample-analyze")
SPLIT = {"split_a": 50, "split_b": 30, "split_c": 20}
CONTENDED = crosscheck.CONTENDED


def leaf_counts(report_text):
    """{leaf function: samples} summed over every report in the text."""
    out = {}
    for count, leaf in re.findall(r"^\d+\.\d% (\d+) (\w+)", report_text, re.M):
        out[leaf] = out.get(leaf, 0) + int(count)
    return out


def shares(counts, names):
    total = sum(counts.get(n, 0) for n in names)
    return total, {n: 100.0 * counts.get(n, 0) / total for n in names}


def external_counts(res, kernel=conftest.KERNEL):
    r = subprocess.run([sys.executable, ANALYZE, "report", res.capture, "-e", kernel, "--chains", "128",
                        "--from", str(res.window[0]), "--until", str(res.window[1])],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return leaf_counts(r.stdout)


def inclusive_counts(res, names, kernel=conftest.KERNEL):
    """{name: samples} over the compared window, each sample counted for the innermost of `names`
    on its stack: a tick handler that interrupts irqon_spin is irqon_spin's time."""
    r = subprocess.run([sys.executable, ANALYZE, "fold", res.capture, "-e", kernel,
                        "--from", str(res.window[0]), "--until", str(res.window[1])],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    out = {}
    for frames, count in conftest.folded_rows(r.stdout.strip()):
        inner = [f for f in frames if f in names]
        if inner:
            out[inner[-1]] = out.get(inner[-1], 0) + count
    return out


@pytest.fixture(scope="module")
def irqoff_run(tmp_path_factory):
    """One run on -smp 2: `split 5 3 2` and `irqoff 3`, gdbsample at 400 Hz, in-guest windows
    until gdbsample has 6000 samples (~3000 of the irqoff vCPU). Two busy vCPUs on this 2-core
    host, not four: when QEMU's busy vCPU threads outnumber the host's cores, the stops are no
    longer uniform in guest time (measured: 42 % irqoff_spin against a true 31 % with two CPU
    hogs beside -smp 4; 29.4 % against 29.6 % with the same hogs beside -smp 2)."""
    out = str(tmp_path_factory.mktemp("irqoff"))
    return crosscheck.run(conftest.KERNEL, GDBSAMPLE, out, smp=2, works=("split 5 3 2", "irqoff 3"),
                          windows=3, ms=2000, rate=400, min_external=6000, max_windows=12)


def test_irqoff_spin_is_seen_outside_missed_by_the_tick_and_flagged_tick_blind(irqoff_run):
    """The truth is measured in the guest: `work time` gives the TSC time the task's code spent in
    each phase, interrupts included, over the compared window (by construction ~30 % irqoff_spin,
    but only while the vCPU runs without gaps; TCG on a busy host shifts it). External samples
    are counted for the innermost of the three functions on their stack, the same attribution.
    ~3000 samples of the task: σ of a 30 % share ≈ 0.85 pp, so ±4 pp is > 4.5σ -- while each vCPU
    thread has a host core. When they wait for one (the host's kernel counts it: schedstat), the
    stops stop being uniform in guest time (README, "Accuracy under TCG") and the error is a bias,
    not noise: measured 4.2 pp with two CPU hogs beside this -smp 2 run, 11 pp beside -smp 4. The
    bound is then the worst of those, ±12 pp: the irqoff time is still plainly seen outside."""
    res = irqoff_run
    task = ("irqoff_spin", "irqon_spin", "irqoff_exit")
    [truth] = res.phase_tsc.values()
    _, s_true = shares(truth, task)
    n_ext, s_ext = shares(inclusive_counts(res, task), task)
    assert n_ext >= 1500, n_ext
    assert res.vcpu_waited is not None, "no schedstat for QEMU's vCPU threads"
    bound = 4 if res.vcpu_waited <= CONTENDED else 12
    assert abs(s_ext["irqoff_spin"] - s_true["irqoff_spin"]) <= bound, (s_ext, s_true, res.vcpu_waited)
    n_in, s_in = shares(leaf_counts(open(res.inguest).read()), task)
    assert s_in["irqoff_spin"] <= s_ext["irqoff_spin"] / 10, (s_in, s_ext)
    row = next(l for l in res.compare_text.splitlines() if l.startswith("irqoff_spin"))
    assert "tick-blind" in row, res.compare_text
    if res.vcpu_waited <= CONTENDED:
        # compare's statistics assume stops uniform in guest time: judged only when they were
        # (seen contended: irqoff_exit's tick-shifted excess no longer matched the external
        # irqoff share, and compare said "differs")
        assert "differs on" not in res.compare_text and res.status == 0, res.compare_text


@pytest.fixture(scope="module")
def three_tasks(tmp_path_factory):
    """-smp 2 with three busy tasks (`split 5 3 2`, `chain 4`, `copy`); gdbsample at 400 Hz records
    the whole run while the guest profiles each pid in turn (`profile 2000 PID`, two windows each,
    more while gdbsample has fewer than 500 samples of that pid: a busy host lowers its rate --
    48 samples of a pid in two windows were seen beside two hogs and another QEMU)."""
    out = str(tmp_path_factory.mktemp("per_pid"))
    return crosscheck.run(conftest.KERNEL, GDBSAMPLE, out, smp=2, works=("split 5 3 2", "chain 4", "copy"),
                          windows=2, ms=2000, rate=400, per_pid=True, min_pid_external=500, max_windows=12)


def test_per_pid_profiles_agree_with_gdbsample_filtered_to_the_pid(three_tasks):
    """For each of the three tasks, its in-guest `profile MS PID` and gdbsample's samples of that
    pid over the same windows (compare --pid) are consistent; and the filter really selects: the
    external samples of the chain task are in chain4 -- its leaf, or under a timer interrupt taken
    in it (>= 99 % of them: their share of the leaves grows on a starved host, 5.3 % seen beside
    CPU hogs, since the guest's ticks come in host time), the other tasks' never are."""
    res = three_tasks
    assert len(res.per_pid) == 3
    for pid, d in res.per_pid.items():
        # consistent; or, where unequal vCPU progress or the host's measured wait blurs the pair,
        # inconclusive (compare's design, issue 23: never "differs" for contention) -- seen so
        # beside two hogs and a third load. A filter that took another task's samples differs.
        verdict = d["text"].strip().rsplit("verdict: ", 1)[-1]
        assert (d["status"], verdict) in ((0, "consistent"), (4, "inconclusive")), (d["work"], d["text"])
    by_work = {d["work"]: pid for pid, d in res.per_pid.items()}
    for work, pid in by_work.items():
        d = res.per_pid[pid]
        r = subprocess.run([sys.executable, ANALYZE, "fold", res.capture, "-e", conftest.KERNEL,
                            "--pid", str(pid), "--from", str(d["window"][0]), "--until", str(d["window"][1])],
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        rows = conftest.folded_rows(r.stdout)
        total = sum(n for _, n in rows)
        in_chain4 = sum(n for frames, n in rows if "chain4" in frames)
        assert total >= 200, (work, r.stdout)
        if work == "chain 4":
            assert in_chain4 >= 0.99 * total, (in_chain4, total, r.stdout)
        else:
            assert in_chain4 == 0, (work, r.stdout)


def test_make_demo_runs_from_a_clean_clone(tmp_path):
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", conftest.ROOT, str(clone)], check=True, timeout=120)
    r = subprocess.run(["make", "-j2", "demo"], cwd=clone, capture_output=True, text=True, timeout=900)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr[-3000:]
    out = r.stdout
    # consistent; or, on a host busy enough that the vCPUs advanced unequally, inconclusive with
    # the wait measured and a line saying it is not a failure -- never `differs`
    verdicts = re.findall(r"^verdict: (\w+)$", out, re.M)  # one per architecture
    assert verdicts and set(verdicts) <= {"consistent", "inconclusive"}, out[-3000:]
    notes = re.findall(r"^compare is inconclusive, not a failure: .*waited \d+ % of the window", out, re.M)
    assert len(notes) == verdicts.count("inconclusive"), out[-3000:]
    for path in ("demo/flamegraph.svg", "demo/external.speedscope.json", "demo/external.folded"):
        assert path in out and (clone / path).stat().st_size > 0, path
    assert re.search(r"==> done in (\d+) s", out), out[-500:]  # how long it took: said, never judged


def test_busiest_waited_picks_the_busy_threads():
    """The vCPU threads are the n that ran most; their worst wait share is what counts."""
    before = {1: (0, 0), 2: (0, 0), 3: (0, 0)}
    after = {1: (900, 100), 2: (600, 400), 3: (5, 990)}  # 3: a mostly idle thread that waited
    assert crosscheck.busiest_waited(before, after, 2, 1000) == 0.4
    assert crosscheck.busiest_waited(before, after, 1, 1000) == 0.1
    assert crosscheck.busiest_waited(before, {1: (1, 1)}, 2, 1000) is None  # threads gone
    assert crosscheck.busiest_waited(before, after, 2, 0) is None


def test_an_inconclusive_compare_is_not_a_failure_and_says_the_wait():
    """compare's exit 4 becomes crosscheck's (and the demo's) 0 with a line giving the measured
    wait; 0 and 1 stay as they are, with no line."""
    res = crosscheck.Result("/nonexistent")
    res.status, res.vcpu_waited = crosscheck.COMPARE_INCONCLUSIVE, 0.314
    note = crosscheck.inconclusive_note(res)
    assert note.startswith("compare is inconclusive, not a failure: ") and "waited 31 % of the window" in note
    res.vcpu_waited = None
    assert "no schedstat" in crosscheck.inconclusive_note(res)
    for status in (0, 1):
        res.status = status
        assert crosscheck.inconclusive_note(res) is None
