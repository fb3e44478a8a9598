#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""crosscheck.py: the in-guest `profile` and gdbsample over the same window, fed to `compare`.

Boots the test kernel (QEMU TCG) with a gdbstub, starts workloads, starts gdbsample recording a
capture, then runs the in-guest `profile MS all 64` WINDOWS times over the serial shell. The
host clock brackets each window (command sent, report received); gdbsample's capture is cut to
[first sent, last received] with compare's --from/--until, so both sides cover the same guest
time (the guest's clocks stop while gdbsample holds the VM, so wall time is not guest time).
Writes OUT/inguest.txt, OUT/external.cap, OUT/compare.txt; exit status is compare's, except
that `inconclusive` (compare's 4: the vCPUs' progress was too unequal to tell) is not a failure
here: it exits 0 with a line saying so and how long the busiest vCPU thread waited for a host core.

  tools/crosscheck.py --smp 2 --work "split 5 3 2" --work "irqoff 3" --out build/crosscheck
"""
import argparse
import glob
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
from guest import Guest, GuestError  # noqa: E402

ANALYZE = os.path.join(ROOT, "analysis", "gdbsample-analyze")
COMPARE_INCONCLUSIVE = 4  # compare's exit status for `inconclusive` (docs/compare.md)
sys.path.insert(0, os.path.join(ROOT, "analysis"))
from gdbsample_analysis.capture import FLAG_IDLE, Capture, CaptureError  # noqa: E402
HEADER_START_NS = 40  # capture header: start time, ns since the epoch (docs/capture-format.md)


# --arch: (kernel under build/, configuration) -- the PMU samples only where a counter counts: aarch64
ARCH_DEFAULTS = {"x86_64": (("kernel.elf",), "tcg-qemu64"), "aarch64": (("aarch64", "kernel.elf"), "tcg-a64-max"),
                 "riscv64": (("riscv64", "kernel.elf"), "tcg-rv64-sscofpmf")}


def capture_start_ns(path):
    with open(path, "rb") as f:
        head = f.read(48)
    if len(head) < 48 or head[:8] != b"GDBSAMP\0":
        raise GuestError(f"{path}: not a gdbsample capture")
    return int.from_bytes(head[HEADER_START_NS:HEADER_START_NS + 8], "little")


class Result:
    def __init__(self, out):
        self.out = out
        self.inguest = os.path.join(out, "inguest.txt")     # the in-guest report(s)
        self.capture = os.path.join(out, "external.cap")    # gdbsample's capture
        self.compare = os.path.join(out, "compare.txt")     # compare's output
        self.window = (0, 0)                                # ns since the capture started
        self.reports = []                                   # each in-guest report's text
        self.gdbsample_stderr = ""
        self.status = None                                  # compare's exit status
        self.compare_text = ""
        self.phase_tsc = {}                                 # irqoff pid -> {phase: TSC ticks in the window}
        self.per_pid = {}                                   # pid -> its own in-guest windows and compare
        self.vcpu_waited = None                             # the largest share of the window a busy
                                                            # vCPU thread spent waiting for a host core


def thread_schedstat(pid):
    """{tid: (ns on a CPU, ns runnable but waiting for one)} of every thread of process pid, from
    the host kernel's /proc/PID/task/TID/schedstat; {} where that is not available."""
    out = {}
    for task in glob.glob(f"/proc/{pid}/task/*"):
        try:
            with open(os.path.join(task, "schedstat")) as f:
                run, wait = f.read().split()[:2]
            out[int(os.path.basename(task))] = (int(run), int(wait))
        except (OSError, ValueError):
            pass
    return out


def busiest_waited(before, after, n, wall_ns):
    """Of the n threads that ran most between two thread_schedstat snapshots (QEMU's busy vCPU
    threads: their names say so only with -name debug-threads=on), the largest share of wall_ns
    one of them spent waiting for a host CPU; None without data."""
    deltas = [(after[t][0] - before[t][0], after[t][1] - before[t][1]) for t in before if t in after]
    if len(deltas) < n or wall_ns <= 0:
        return None
    return max(w for _, w in sorted(deltas, reverse=True)[:n]) / wall_ns


class WaitWindow:
    """From now on, how long process pid's threads waited for a host core: waited(n) is
    busiest_waited over the window so far, for the n threads that ran most (None: every thread
    that lived through it); None without schedstat."""

    def __init__(self, pid):
        self.pid, self.before, self.t0 = pid, thread_schedstat(pid), time.monotonic_ns()

    def waited(self, n=1):
        after = thread_schedstat(self.pid)
        if n is None:
            n = len(set(self.before) & set(after))
        return busiest_waited(self.before, after, n, time.monotonic_ns() - self.t0)


# A busy vCPU thread that waited for a host core this share of a window or more: contended (its
# stops were no longer uniform in guest time; the tests then allow the bias they measured).
CONTENDED = 0.10

IRQOFF_PHASES = ("irqoff_spin", "irqoff_exit", "irqon_spin")


def work_time(g, pid):
    """`work time PID` -> {phase: TSC ticks the irqoff task's code has spent there}."""
    out = g.cmd(f"work time {pid}")
    m = re.search(r"(?:tsc|cntvct|time) irqoff_spin (\d+) irqoff_exit (\d+) irqon_spin (\d+)", out)
    if not m:
        raise GuestError(f"work time {pid}: {out.strip()!r}")
    return dict(zip(IRQOFF_PHASES, map(int, m.groups())))


def inguest_samples(reports, leaves=None):
    """Samples (idle ones left out) over the in-guest reports so far; with leaves, only those whose
    leaf function is one of them (the report's `P% COUNT NAME` rows: what a test of those
    functions' shares counts, so the run goes on until the test has its samples)."""
    if leaves is not None:
        return sum(int(c) for r in reports for c, leaf in re.findall(r"^\d+\.\d% (\d+) (\w+)", r, re.M)
                   if leaf in leaves)
    return sum(int(n) for r in reports for n in re.findall(r"^(\d+) samples on \d+ cpus", r, re.M))


def recording(path):
    """Where gdbsample is writing the capture it will move to path when done (path.partial-*),
    or None before it has started."""
    found = glob.glob(glob.escape(path) + ".partial-*")
    return found[0] if found else None


def external_so_far(path, pid=None):
    """Non-idle samples (of task pid, if given) in the chunks gdbsample has flushed so far (it
    flushes every second)."""
    n = 0
    try:
        for s in Capture(recording(path) or path).samples():
            n += not s.flags & FLAG_IDLE and (pid is None or (s.task is not None and s.task.pid == pid))
    except (CaptureError, TypeError):
        pass
    return n


def inconclusive_note(res):
    """The line that says an inconclusive compare is not a failure, with the wait measured on the
    host; None when compare was not inconclusive."""
    if res.status != COMPARE_INCONCLUSIVE:
        return None
    waited = ("the busiest vCPU thread waited %.0f %% of the window for a host core" % (100 * res.vcpu_waited)
              if res.vcpu_waited is not None else "no schedstat to say how long the vCPU threads waited")
    return ("compare is inconclusive, not a failure: the vCPUs' host time was too contended to tell (%s); "
            "give the VM a quieter host or fewer busy vCPUs than host cores" % waited)


def run(kernel, gdbsample, out, smp=2, works=("split 5 3 2",), windows=1, ms=2000, rate=200,
        settle=0.3, config="tcg-qemu64", compare_args=(), min_external=0, max_windows=None, per_pid=False,
        min_pid_external=0, min_inguest=0, inguest_leaves=None):
    """Runs `windows` in-guest windows, then more (up to max_windows) while gdbsample has
    recorded fewer than min_external non-idle samples, or the in-guest reports hold fewer than
    min_inguest (of those whose leaf is in inguest_leaves, if given): a busy host lowers the rate
    either side reaches, and a statistical check needs its samples, not a lower bar.
    per_pid: after those, `windows` windows of `profile MS PID` for each workload in turn (more,
    up to max_windows, while gdbsample has fewer than min_pid_external samples of that pid since
    its first window), each compared (compare --pid) with gdbsample's samples of that pid over
    its own windows:
    res.per_pid[pid] = {"work", "inguest", "window", "status", "text"}."""
    os.makedirs(out, exist_ok=True)
    res = Result(out)
    with Guest(kernel, smp=smp, config=config) as g:
        started = [(w, g.work(w)) for w in works]
        irqoff = [pid for w, pid in started if w.split()[0] == "irqoff"]
        time.sleep(settle)
        gs = subprocess.Popen([gdbsample, "-p", str(g.gdbport), "-r", str(rate), "-e", kernel, "-q",
                               "-f", "capture", "-o", res.capture],
                              stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        try:
            deadline = time.monotonic() + 10
            # gdbsample records into a temporary file beside -o and moves it into place at the end
            while True:
                rec = recording(res.capture)
                if rec and os.path.getsize(rec) >= 128:
                    break
                if gs.poll() is not None or time.monotonic() > deadline:
                    raise GuestError("gdbsample did not start: " + (gs.stderr.read() if gs.stderr else ""))
                time.sleep(0.01)
            time.sleep(0.3)  # sampling is under way
            before = {pid: work_time(g, pid) for pid in irqoff}
            sched0 = thread_schedstat(g.proc.pid)
            t_first = time.time_ns()
            while True:
                res.reports.append(g.cmd(f"profile {ms} all 64", timeout=ms / 1000 * 10 + 60))
                done = len(res.reports)
                if done >= windows and (done >= (max_windows or windows) or
                                        (external_so_far(res.capture) >= min_external and
                                         inguest_samples(res.reports, inguest_leaves) >= min_inguest)):
                    break
            t_last = time.time_ns()
            res.vcpu_waited = busiest_waited(sched0, thread_schedstat(g.proc.pid), len(works), t_last - t_first)
            for w, pid in started if per_pid else ():
                t0, base, texts = time.time_ns(), external_so_far(res.capture, pid), []
                while True:
                    texts.append(g.cmd(f"profile {ms} {pid} 64", timeout=ms / 1000 * 10 + 60))
                    if len(texts) >= windows and (len(texts) >= (max_windows or windows) or
                                                  external_so_far(res.capture, pid) - base >= min_pid_external):
                        break
                res.per_pid[pid] = {"work": w, "text_in": "".join(texts), "t": (t0, time.time_ns())}
            for pid in irqoff:
                after = work_time(g, pid)
                res.phase_tsc[pid] = {k: after[k] - before[pid][k] for k in IRQOFF_PHASES}
        finally:
            if gs.poll() is None:
                gs.send_signal(signal.SIGINT)  # finish the sample, resume, detach, flush
            _, res.gdbsample_stderr = gs.communicate(timeout=30)
        if gs.returncode != 0:
            raise GuestError(f"gdbsample exited {gs.returncode}: {res.gdbsample_stderr.strip()}")
        g.cmd("work stop all", timeout=30)
    start = capture_start_ns(res.capture)
    res.window = (t_first - start, t_last - start)
    with open(res.inguest, "w") as f:
        f.write("".join(res.reports))
    rel = os.path.relpath  # shorter names in compare's output
    # the wait measured here, for compare to tell contention's blur from a difference
    waited = ("--host-wait", "%.3f" % res.vcpu_waited) if res.vcpu_waited is not None else ()
    r = subprocess.run([sys.executable, ANALYZE, "compare", rel(res.inguest), rel(res.capture), "-e", kernel,
                        "--from", str(res.window[0]), "--until", str(res.window[1]), *waited, *compare_args],
                       capture_output=True, text=True, timeout=120)
    res.status, res.compare_text = r.returncode, r.stdout + r.stderr
    with open(res.compare, "w") as f:
        f.write(res.compare_text)
    for pid, d in res.per_pid.items():
        d["inguest"] = os.path.join(out, f"inguest-{pid}.txt")
        d["window"] = (d["t"][0] - start, d["t"][1] - start)
        with open(d["inguest"], "w") as f:
            f.write(d["text_in"])
        r = subprocess.run([sys.executable, ANALYZE, "compare", rel(d["inguest"]), rel(res.capture), "-e", kernel,
                            "--pid", str(pid), "--from", str(d["window"][0]), "--until", str(d["window"][1]),
                            *waited, *compare_args], capture_output=True, text=True, timeout=120)
        d["status"], d["text"] = r.returncode, r.stdout + r.stderr
        with open(os.path.join(out, f"compare-{pid}.txt"), "w") as f:
            f.write(d["text"])
    return res


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", choices=ARCH_DEFAULTS, default="x86_64",
                    help="x86_64: the pc machine, tick source under TCG; aarch64: QEMU virt, PMU source; "
                         "riscv64: QEMU virt, SBI PMU source")
    ap.add_argument("--kernel", help="the kernel (default: build/kernel.elf, or build/ARCH/kernel.elf)")
    ap.add_argument("--config", help="a row of vm-configs/configs.toml (default: tcg-qemu64, tcg-a64-max or "
                                     "tcg-rv64-sscofpmf)")
    ap.add_argument("--gdbsample", default=os.path.join(ROOT, "build", "gdbsample"))
    ap.add_argument("--smp", type=int, default=2)
    ap.add_argument("--work", action="append", help='a workload, e.g. "split 5 3 2" (repeatable)')
    ap.add_argument("--windows", type=int, default=1, help="in-guest profile windows (summed)")
    ap.add_argument("--ms", type=int, default=2000, help="each window, 1-2000 ms")
    ap.add_argument("--rate", type=int, default=200, help="gdbsample's rate, Hz")
    ap.add_argument("--out", default=os.path.join(ROOT, "build", "crosscheck"))
    a = ap.parse_args()
    a.kernel = a.kernel or os.path.join(ROOT, "build", *ARCH_DEFAULTS[a.arch][0])
    a.config = a.config or ARCH_DEFAULTS[a.arch][1]
    for path in (a.kernel, a.gdbsample):
        if not os.path.exists(path):
            sys.exit(f"crosscheck: {path} is missing (run `make`)")
    if not 1 <= a.ms <= 2000 or a.windows < 1 or not 1 <= a.smp <= 8:
        sys.exit("crosscheck: --ms must be 1-2000, --windows >= 1, --smp 1-8")
    try:
        res = run(a.kernel, a.gdbsample, a.out, a.smp, a.work or ["split 5 3 2", "irqoff 3"], a.windows,
                  a.ms, a.rate, config=a.config)
    except GuestError as e:
        sys.exit(f"crosscheck: {e}")
    print(res.compare_text, end="")
    print(f"crosscheck: in-guest {res.inguest}, external {res.capture}, compare {res.compare}")
    note = inconclusive_note(res)
    if note:
        print(f"crosscheck: {note}")
        return 0
    return res.status


if __name__ == "__main__":
    sys.exit(main())
