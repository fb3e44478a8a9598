#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""taskdesc_bench.py: what tasks by description (--tasks FILE) cost against the built-in attribution (issue 24), into docs/benchmarks.md.

On our x86_64 test kernel (-smp 2, work chain 4 and split): gdbsample's pause per sample and its
task reads per sample with the built-in layout, with the same layout as a description file
(docs/tasks/testkernel.tasks), and with `cpus[cpu].current` (no register). Interleaved rounds on
the same guest, medians. Every QEMU is stopped by its pid.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from guest import Guest  # noqa: E402
import benchdoc  # noqa: E402

RATE = 100
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
log = common.logger("taskdesc_bench")


def run(a, port, elf, extra):
    kv = common.gdbsample(a.gdbsample, "-p", port, "-e", elf, "-r", RATE, "-d", a.secs, *extra)
    n = max(1, sum(kv.get(f"task_{k}", 0) for k in ("verified", "hits", "misses", "lost")))
    return {"p50": kv["pause_p50_us"], "trips": kv["round_trips"] / max(1, kv["samples"]),
            "reads": kv.get("task_reads", 0) / n, "lost": kv.get("task_lost", 0) / n, "os": kv.get("task_os")}


def rounds(a, port, elf, configs):
    got = {name: [] for name, _ in configs}
    for _ in range(a.rounds):
        for name, extra in configs:
            got[name].append(run(a, port, elf, extra))
    out = {}
    for name, rs in got.items():
        out[name] = {k: statistics.median(r[k] for r in rs) for k in ("p50", "trips", "reads", "lost")}
        out[name]["range"] = (min(r["p50"] for r in rs), max(r["p50"] for r in rs))
        out[name]["os"] = rs[0]["os"]
    return out


def bench(a, tmp):
    res = {}
    bycpu = os.path.join(tmp, "bycpu.tasks")
    with open(bycpu, "w") as f:
        f.write("current = cpus[cpu].current\npid = pid\nname = name\n")
    with Guest(a.kernel, smp=2) as g:
        for w in ("chain 4", "split 5 3 2"):
            g.work(w)
        res["test kernel x86_64: chain 4, split"] = rounds(a, g.gdbport, a.kernel, [
            ("built-in", []),
            ("--tasks testkernel.tasks", ["--tasks", os.path.join(ROOT, "docs", "tasks", "testkernel.tasks")]),
            ("--tasks cpus[cpu].current", ["--tasks", bycpu])])
        log(res)
    return res


def render(res, a, load):
    begin, end = benchdoc.markers("taskdesc-bench")
    lines = [begin, "## Tasks by description (issue 24, bench/taskdesc_bench.py)", "",
             f"`make bench` on this project's 2-core machine (load average {load[0]} before, {load[1]} after); "
             f"gdbsample -r {RATE} for {a.secs} s per run, {a.rounds} interleaved rounds of each configuration "
             "on the same guest and workload; medians, lowest-highest run in brackets. Regenerate with "
             "`/usr/bin/python3 bench/taskdesc_bench.py`.", "",
             "| guest | attribution | pause p50 (us) | ratio to the first | round trips per sample | "
             "task reads per attributed sample | unattributed |",
             "|---|---|---:|---:|---:|---:|---:|"]
    for guest, cfgs in res.items():
        first = None
        for name, r in cfgs.items():
            first = first or r["p50"]
            lines.append(f"| {guest} | {name} | {r['p50']:.0f} [{r['range'][0]:.0f}-{r['range'][1]:.0f}] | "
                         f"{r['p50'] / max(1, first):.2f}x | {r['trips']:.3f} | {r['reads']:.3f} | "
                         f"{100 * r['lost']:.2f} % |")
    lines += ["",
              "Target: the same packets as the built-in layout (task reads per sample, round trips) and a "
              "pause p50 at most 1.05x. A description resolves, once at start, to the same reads the "
              "built-in layout makes: the task pointer's address (fixed per vCPU once learned) and the "
              "identity span of the task the previous sample found, both in the sample's one round trip. "
              "A register the description names is read with `p` in a vCPU's first sample only (kept "
              "after); `cpus[cpu]` needs no register. The pause is QEMU's answer to each packet under TCG "
              "on a shared host: runs differ by more than the configurations do.", end]
    return "\n".join(lines) + "\n"


def main():
    import tempfile
    ap = common.parser(__doc__, "gdbsample", "kernel", "out")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=float, default=3)
    a = ap.parse_args()
    common.require("taskdesc_bench", a.gdbsample, a.kernel)
    load = [common.loadavg()]
    with tempfile.TemporaryDirectory() as tmp:
        res = bench(a, tmp)
    load.append(common.loadavg())
    common.write_section(a.out, "taskdesc-bench", render(res, a, load), log)


if __name__ == "__main__":
    main()
