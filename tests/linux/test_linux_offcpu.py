# SPDX-License-Identifier: MIT
"""record --off-cpu on Debian's stock 6.1 as it ships (KASLR on, -smp 2): the task list read from
outside through BTF (init_task.tasks), each task's state and switched-out stack (thread.sp, then
the kernel's own ORC), weighed by wall time -- checked against what the guest itself says:
/proc/PID/wchan for where each waits, /proc/PID/stat and /proc/uptime for how much each ran."""
import os
import subprocess
import sys
import time

import conftest
import crosscheck
import pytest

from gdbsample_analysis import capture as capmod
from linuxparse import parse_stat

pytestmark = pytest.mark.qemu  # a stock Linux guest

gdbsample = conftest.gdbsample
USER_HZ = 100
RATE, DURATION, STEP = 100, 24, 2  # -r, -d, and how often the guest's accounting is read meanwhile
WINDOW = 12  # s of the run, at least, between the first and last reading inside it: the shares' window
# The on-CPU share's tolerance against the guest's accounting: the issue's +-5 pp. Both sides see
# the same run of the tasks, so what differs is how each measures it: gdbsample's stops every
# 10 ms against a task whose phases last ~100 ms (each of ~150 phase edges in 15 s off by up to a
# period: < 0.5 pp), the guest's own runtime accounting (exact to the scheduler's clock), and the
# window's edges (a command's start on the serial console, within ~0.1 s of when it was sent:
# < 1 pp at each end for a task on or off all that time) -- visits add none, each giving the time
# the task was not seen on a vCPU. Measured (time-weighted, as the visits count): 0-2 pp on a
# quiet host; beside two CPU hogs 1.9-3.3 pp, ours the lower -- the stops come later while the
# host's cores are taken, which is when the busy task runs, a bias rather than noise: with the
# busiest vCPU thread waiting crosscheck.CONTENDED of the window or more the bound is the
# project's contention credit.
CONTENDED_PP = 12.0
TOLERANCE_PP = 5.0


def analyze(*args):
    r = subprocess.run([sys.executable, os.path.join(conftest.ROOT, "analysis", "gdbsample-analyze"), *args],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    return r.stdout


def images(g):
    return ["-e", g.vmlinuz, "-e", g.kallsyms_path()]


def snapshot(g, pids):
    """(guest uptime in s, {pid: utime + stime in s}, {pid: wchan}) read in one command."""
    ps = " ".join(str(p) for p in pids.values())
    out = g.cmd(f"cat /proc/uptime; for p in {ps}; do cat /proc/$p/stat; done; "
                f"for p in {ps}; do echo \"wchan $p $(cat /proc/$p/wchan)\"; done")
    lines = out.splitlines()
    up = float(lines[0].split()[0])
    cpu = {p: (u + s) / USER_HZ for p, (u, s) in parse_stat("\n".join(lines[1:])).items()}
    wchan = {int(w.split()[1]): (w.split() + [""])[2] for w in lines if w.startswith("wchan ")}
    return up, cpu, wchan


def per_task(folded, pid, comm):
    """The off-CPU stacks (frames, root first, below the state) with their weights, of the task
    comm-pid in folded text."""
    root = f"{comm}-{pid}"
    stacks = {}
    for line in folded.splitlines():
        stack, n = line.rsplit(" ", 1)
        frames = stack.split(";")
        if frames[0] == root and len(frames) > 1 and frames[1].startswith("off-cpu/"):
            stacks[tuple(frames[2:])] = stacks.get(tuple(frames[2:]), 0) + int(n)
    return stacks


def times(cap, pid, lo, hi):
    """{"on": ns, state: ns} of task pid over the capture's stops at [lo, hi) (ns since its start),
    as the off-CPU visits count it: a stop that finds the task on a vCPU stands for the interval
    since the stop before (on a busy host the stops come late while the host's cores are taken,
    so intervals differ), an off-CPU stack for its weight in sample periods (1 / -r)."""
    stops, on, off = set(), [], []
    for s in capmod.Capture(str(cap)).samples():
        if s.offcpu is None:
            stops.add(s.time_ns)
        if s.task is None or s.task.pid != pid or not lo <= s.time_ns < hi:
            continue
        (on if s.offcpu is None else off).append(s)
    stops = sorted(stops)
    before = dict(zip(stops[1:], (b - a for a, b in zip(stops, stops[1:]))))
    unit = 1e9 / RATE
    t = {"on": sum(before.get(s.time_ns, 0) for s in {s.time_ns: s for s in on}.values())}
    for s in off:
        t[s.offcpu] = t.get(s.offcpu, 0) + s.weight * unit
    return t


def test_off_cpu_on_a_stock_kernel_matches_the_guests_own_accounting(linux61, busy, tmp_path):
    """A sleeper's time is its sleep chain (do_nanosleep, as its wchan says) for >= 95 % of the run;
    a cat blocked on a pipe is in pipe_read; a spinning shell is on a CPU; a shell busy and asleep
    in turn is on a CPU for the share the guest's own accounting gives it, within 5 pp -- and so
    are the other three. The guest's accounting is read twice while gdbsample samples, and the
    shares compared over that window of the capture: gdbsample's start (the image's decompression,
    the walk of the task list) takes host time the guest's tasks would otherwise have, which on a
    busy host moves a task's share outside the window."""
    g = linux61
    pids = busy(g, ["sleeper", "piper", "halfer", "spinner"])
    cap = tmp_path / "off.cap"
    p = subprocess.Popen([conftest.GDBSAMPLE, "record", "-p", str(g.gdb_port), *images(g), "--off-cpu",
                          "--off-cpu-slice", "16", "-r", str(RATE), "-d", str(DURATION), "-f", "capture",
                          "--summary-format", "kv", "-o", str(cap)], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                         text=True)
    snaps = []  # (when the command was sent, ns since the epoch; the guest's view; QEMU's threads' schedstat)
    try:
        # Read the guest's accounting every STEP s while gdbsample runs (its start -- the image's
        # decompression, the walk of the task list -- takes 2-10 s as the host is busy); each
        # edge is when its command was sent: the guest reads its clock and the tasks' times first
        # thing, while the reply's way back over the serial line is longer.
        while p.poll() is None:
            t = time.time_ns()
            snaps.append((t, snapshot(g, pids), crosscheck.thread_schedstat(g.proc.pid)))
            time.sleep(STEP)
        _, err = p.communicate(timeout=300)
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()
    assert p.returncode == 0, err
    c = capmod.Capture(str(cap))
    stop_times = [s.time_ns for s in c.samples() if s.offcpu is None]
    inside = [x for x in snaps if min(stop_times) <= x[0] - c.start_ns <= max(stop_times)]
    assert len(inside) >= 2 and inside[-1][0] - inside[0][0] >= WINDOW * 1e9, (
        "no window of %d s inside the run's stops" % WINDOW, [x[0] - c.start_ns for x in snaps], err)
    (t0, (up0, cpu0, wchan), sched0), (t1, (up1, cpu1, _), sched1) = inside[0], inside[-1]
    lo, hi = t0 - c.start_ns, t1 - c.start_ns
    waited = crosscheck.busiest_waited(sched0, sched1, 1, t1 - t0) if sched0 and sched1 else None
    keys = dict(line.split(" ", 1) for line in err.splitlines() if line.startswith("offcpu_"))
    assert int(keys["offcpu_list_tasks"]) >= 20 and int(keys["offcpu_list_rounds"]) >= 10, err
    assert wchan[pids["sleeper"]] in ("hrtimer_nanosleep", "do_nanosleep"), wchan
    assert wchan[pids["piper"]] == "pipe_read", wchan
    folded = analyze("fold", str(cap), "-e", g.kallsyms_path(), "--state", "all", "--task-format", "comm-pid")
    shares = {}
    for name, pid in sorted(pids.items()):
        w = times(cap, pid, lo, hi)
        total = sum(w.values())
        assert total > 0, (name, w)
        guest = 100.0 * (cpu1[pid] - cpu0[pid]) / (up1 - up0)
        ours = 100.0 * w["on"] / total
        shares[name] = (round(ours, 1), round(guest, 1), {k: round(v / 1e9, 2) for k, v in w.items()})
        stacks = per_task(folded, pid, name)
        off = sum(stacks.values())
        if name == "sleeper":
            sleeping = sum(n for f, n in stacks.items() if "do_nanosleep" in f and "__schedule" in f)
            assert sleeping >= 0.95 * off, (sleeping, off, sorted(stacks.items(), key=lambda kv: -kv[1])[:5])
            assert w.get("blocked", 0) >= 0.95 * total, shares  # interruptible sleep: S
        if name == "piper":
            reading = sum(n for f, n in stacks.items() if "pipe_read" in f and "vfs_read" in f)
            assert reading >= 0.95 * off, (reading, off, sorted(stacks.items(), key=lambda kv: -kv[1])[:5])
        if name == "spinner":
            assert ours >= 90.0, shares
    # Contended (crosscheck.CONTENDED of the window), the bound is the 12 pp the project credits
    # contention with (compare's HOST_CONTENDED_PP), as the other wall-time tests do.
    assert waited is not None, "no schedstat for QEMU's vCPU threads"
    bound = TOLERANCE_PP if waited < crosscheck.CONTENDED else CONTENDED_PP
    print("shares (ours, the guest's, s by state):", shares, "vCPU wait %.3f" % waited)  # with -s, and on failure
    for name, (ours, guest, w) in shares.items():
        assert abs(ours - guest) <= bound, (name, shares, waited, err)
    assert 10.0 <= shares["halfer"][1] <= 90.0, shares  # the middle case is one: neither always on nor off


def test_off_cpu_stacks_start_where_the_task_resumes(linux61, busy, tmp_path):
    """Every off-CPU stack begins (leaf) in __switch_to_asm, the instruction after its store of
    rsp, and goes on through __schedule: the walk starts where the task will resume; none is an
    unreliable walk's, and the list walk's upkeep is in the summary."""
    g = linux61
    busy(g, ["sleeper"])
    out = tmp_path / "off.folded"
    r = gdbsample("record", "-p", g.gdb_port, *images(g), "--off-cpu", "-r", RATE, "-d", 3, "-f", "folded", "--summary-format", "kv",
                  "-o", out, timeout=300)
    assert r.returncode == 0, r.stderr
    off = [line for line in out.read_text().splitlines() if ";off-cpu/" in line]
    assert off
    for line in off:
        frames = line.rsplit(" ", 1)[0].split(";")
        assert frames[-1] == "__switch_to_asm" and "__schedule" in frames, line
    keys = dict(line.split(" ", 1) for line in r.stderr.splitlines() if line.startswith("offcpu_"))
    assert int(keys["offcpu_walk_other"]) <= 0.01 * int(keys["offcpu_samples"]), r.stderr
    assert int(keys["offcpu_census_reads"]) >= int(keys["offcpu_list_tasks"]), r.stderr


def test_off_cpu_without_btf_is_one_clear_line(linux61, tmp_path):
    """An image without BTF: one line, exit 2, the VM not left paused (the next run samples)."""
    g = linux61
    r = gdbsample("record", "-p", g.gdb_port, "-e", g.kallsyms_path(), "--off-cpu", "-d", 1, "-f", "folded",
                  "-o", tmp_path / "x.folded")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    assert "BTF" in r.stderr or "--off-cpu" in r.stderr, r.stderr
    assert not os.path.exists(tmp_path / "x.folded")
    r = gdbsample("-p", g.gdb_port, *images(g), "-d", 1)
    assert r.returncode == 0, r.stderr
