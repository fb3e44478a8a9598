#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""soak_bench.py: gdbsample over a long run (issue 13), written into docs/benchmarks.md.

`gdbsample -r 1000` for --secs (default 600) against the test kernel on -smp 4 with workloads on
every vCPU, writing a capture. Every 5 s: gdbsample's resident set and open descriptors
(/proc/PID/status, /proc/PID/fd). At the end: the summary's failed rounds, whether the capture
reads whole (gdbsample-analyze info, exit 0), and the guest's own clock against gdbsample's
"guest stopped X % of wall time": under TCG the guest's clock stands still while the VM is
stopped, so its uptime advances by the wall time minus the stopped time. QEMU is stopped by its pid.
"""
import datetime
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import ROOT  # noqa: E402
from guest import Guest  # noqa: E402
import benchdoc  # noqa: E402


log = common.logger("soak_bench")


def proc_stats(pid):
    """(RSS in KiB, open descriptors) of a live process, or None once it is gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            rss = int(re.search(r"VmRSS:\s+(\d+) kB", f.read()).group(1))
        return rss, len(os.listdir(f"/proc/{pid}/fd"))
    except (OSError, AttributeError):
        return None


def guest_uptime_ms(g):
    return int(re.search(r"uptime (\d+) ms", g.cmd("cpus")).group(1))


def run(a, rate, secs):
    kernel = os.path.join(ROOT, "build", "kernel.elf")
    tmp = tempfile.mkdtemp(prefix="gdbsample-soak-")
    cap = os.path.join(tmp, "soak.cap")
    g = Guest(kernel, smp=a.smp)
    res = {"secs": secs, "rate": rate}
    try:
        g.start()
        g.work("split 5 3 2")
        g.work("chain 8")
        g.work("copy")
        g.work("irqoff 2")
        time.sleep(0.5)
        up0, wall0 = guest_uptime_ms(g), time.monotonic()
        p = subprocess.Popen([a.gdbsample, "-p", str(g.gdbport), "-e", kernel, "-r", str(rate), "-d", str(secs),
                              "-f", "capture", "-o", cap, "-q"] + common.KV_FLAGS, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                             text=True)
        series = []
        while p.poll() is None:
            time.sleep(5)
            s = proc_stats(p.pid)
            if s:
                series.append((time.monotonic() - wall0, s[0], s[1]))
        out, err = p.communicate(timeout=120)
        wall1 = time.monotonic()
        up1 = guest_uptime_ms(g)
        res["exit"] = p.returncode
        res["stderr"] = err[-2000:]
        kv = common.parse_kv(err)
        res["stopped_pct"] = round(100 * kv["stopped_fraction"], 2) if "stopped_fraction" in kv else None
        res["paused_pct"] = round(100 * kv["paused_fraction"], 2) if "paused_fraction" in kv else None
        res["failed_rounds"] = kv.get("failed_rounds")
        res["samples"], res["run_secs"], res["achieved"] = ((kv["samples"], kv["duration_ns"] / 1e9,
                                                             kv["rate_achieved_hz"]) if "samples" in kv else (0, 0, 0))
        # The guest's clock ran for (up1 - up0) of (wall1 - wall0); the cmd round trips around the
        # run are tiny next to a 10-minute run and run outside gdbsample's window on both ends.
        res["guest_stopped_pct"] = 100.0 * (1 - (up1 - up0) / 1000.0 / (wall1 - wall0))
        warm = [r for r in series if r[0] >= 60] or series
        res["rss_warm"], res["rss_end"] = warm[0][1], series[-1][1] if series else (0, 0)
        res["rss_max"] = max(r[1] for r in warm) if warm else 0
        res["fds"] = sorted({r[2] for r in series})
        info = subprocess.run([os.path.join(ROOT, "analysis", "gdbsample-analyze"), "info", cap], capture_output=True,
                              text=True, timeout=600)
        res["info_exit"] = info.returncode
        res["capture_mb"] = os.path.getsize(cap) / 1e6 if os.path.exists(cap) else 0
    finally:
        g.stop()
        shutil.rmtree(tmp, ignore_errors=True)
    return res


def gap(res):
    """How gdbsample's bracket [stopped, paused] of the stopped share sits around the guest's own
    figure: (lower - guest, upper - guest) in pp, and the lower bound's shortfall per stop (us)."""
    if res["stopped_pct"] is None or res["paused_pct"] is None or not res["samples"]:
        return float("nan"), float("nan"), float("nan")
    lo, hi = res["stopped_pct"] - res["guest_stopped_pct"], res["paused_pct"] - res["guest_stopped_pct"]
    rounds = res["samples"] / res["smp"]
    return lo, hi, -lo / 100 * res["run_secs"] / rounds * 1e6


def verdict(lo, hi):
    inside = lo <= 0 <= hi
    near = min(abs(lo), abs(hi))
    return (f"{'inside' if inside else 'OUTSIDE'} the bracket; the nearer bound {near:.2f} pp off: "
            f"{'met' if inside and near <= 0.5 else 'NOT met'}")


def render(res, short, a, load):
    begin, end = benchdoc.markers("soak-bench")
    lo, hi, per = gap(res)
    slo, shi, sper = gap(short)
    lines = [begin, "## Soak: a long run at -r 1000 (issue 13, bench/soak_bench.py)", "",
             f"`gdbsample -r {res['rate']} -d {res['secs']:.0f} -f capture` against the test kernel on -smp {res['smp']} "
             f"(split, chain 8, copy and irqoff running), load average {load[0]} before, {load[1]} after; "
             f"then the same for {short['secs']:.0f} s at -r {short['rate']}. {datetime.date.today()}.", "",
             "| what | measured | target |", "|---|---:|---|",
             f"| samples, achieved rate | {res['samples']} in {res['run_secs']:.0f} s, {res['achieved']:.0f} Hz | - |",
             f"| resident set after 60 s warm-up, at the end, highest (KiB) | {res['rss_warm']}, {res['rss_end']}, "
             f"{res['rss_max']} | growth <= 1024 KiB: "
             f"{'met' if res['rss_max'] - res['rss_warm'] <= 1024 else 'NOT met'} |",
             f"| open descriptors seen | {', '.join(map(str, res['fds']))} | constant: "
             f"{'met' if len(res['fds']) == 1 else 'NOT met'} |",
             f"| failed rounds | {res['failed_rounds']} | 0 |",
             f"| capture ({res['capture_mb']:.0f} MB) reads whole (`gdbsample-analyze info` exit) | {res['info_exit']} | 0 |",
             f"| guest stopped, gdbsample's bracket (from the stop reply .. from the stop byte) | "
             f"{res['stopped_pct']:.2f} .. {res['paused_pct']:.2f} % | - |",
             f"| guest stopped, from the guest's own uptime | {res['guest_stopped_pct']:.2f} % | "
             f"within 0.5 pp: {verdict(lo, hi)} |",
             f"| the lower bound's shortfall, per stop | {per:.0f} us | - |",
             f"| at -r {short['rate']}: bracket, guest | {short['stopped_pct']:.2f} .. {short['paused_pct']:.2f} %, "
             f"{short['guest_stopped_pct']:.2f} % | within 0.5 pp: {verdict(slo, shi)} |",
             "",
             "The guest's clock stands still from QEMU's handling of the stop byte -- it freezes the clock, then "
             "waits for every vCPU thread to leave its translated block, then sends the stop reply -- to its "
             "handling of `c`. From outside, that first moment is only known to lie between writing the stop byte "
             "and reading the stop reply, so gdbsample reports the guest's loss as a bracket: from the stop reply "
             "(a lower bound, short by the time the vCPU threads take to stop, which grows when they wait for a host core: the rows above) to "
             "from the stop byte (an upper bound, loose when busy vCPU threads outnumber the host's cores and "
             "QEMU's main loop reads the stop byte late while the guest runs).", end]
    return "\n".join(lines) + "\n"


def main():
    ap = common.parser(__doc__, "gdbsample", "out")
    ap.add_argument("--secs", type=float, default=600)
    ap.add_argument("--rate", type=int, default=1000)
    ap.add_argument("--smp", type=int, default=4)
    a = ap.parse_args()
    load0 = common.loadavg()
    res = run(a, a.rate, a.secs)
    res["smp"] = a.smp
    short = run(a, 100, 60)
    short["smp"] = a.smp
    log(short)
    load1 = common.loadavg()
    log(res)
    if res["exit"] != 0:
        log("gdbsample failed:", res["stderr"])
    common.write_section(a.out, "soak-bench", render(res, short, a, (load0, load1)), log)


if __name__ == "__main__":
    main()
