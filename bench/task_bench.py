#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""task_bench.py: what per-sample task attribution costs (issue 14), written into docs/benchmarks.md.

On the stock Debian 6.1 guest under TCG (-smp 2) and on our test kernel (-smp 2): gdbsample's pause
per sample with task attribution (the default) and without (--os none), in interleaved rounds on
the same guest with the same workload, medians; and how each attributed sample got its task --
confirmed by the read that rode in its own round trip, from the cache, or at the cost of another
trip. Every QEMU is stopped by its pid.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from guest import Guest  # noqa: E402
from linuxguest import LinuxGuest  # noqa: E402
import benchdoc  # noqa: E402

RATE = 100


log = common.logger("task_bench")


def run(a, port, images, extra):
    """One gdbsample run's pause p50, round trips and task counters (those only when some task
    was counted: the key value summary leaves them out otherwise)."""
    kv = common.gdbsample(a.gdbsample, "-p", port, *images, "-r", RATE, "-d", a.secs, *extra)
    f = {"p50": kv["pause_p50_us"], "trips": kv["round_trips"]}
    f.update({k: kv[f"task_{k}"] for k in ("verified", "hits", "misses", "lost", "renamed") if f"task_{k}" in kv})
    return f


def rounds(a, port, images):
    on, off, t = [], [], {"verified": 0, "hits": 0, "misses": 0, "lost": 0, "renamed": 0}
    for _ in range(a.rounds):
        off.append(run(a, port, images, ["--os", "none"])["p50"])
        r = run(a, port, images, [])
        on.append(r["p50"])
        for k in t:
            t[k] += r.get(k, 0)
    n = sum(t[k] for k in ("verified", "hits", "misses", "lost"))
    return {"on": statistics.median(on), "off": statistics.median(off), "on_range": (min(on), max(on)),
            "off_range": (min(off), max(off)), "n": n, **t}


def bench(a):
    res = {}
    lg = LinuxGuest(build=a.linux_build, series="6.1", smp=2)
    try:
        lg.start()
        images = ["-e", lg.vmlinuz, "-e", lg.kallsyms_path()]
        for name, loads in (("Linux 6.1, steady: zerodd + spinner", ["zerodd", "spinner"]),
                            ("Linux 6.1, churn: zerodd, rngdd, forker", ["zerodd", "rngdd", "forker"])):
            pids = lg.start_workloads(loads)
            res[name] = rounds(a, lg.gdb_port, images)
            lg.stop_workloads(pids)
            log(name, res[name])
    finally:
        lg.stop()
    with Guest(a.kernel, smp=2) as g:
        for w in ("split 5 3 2", "chain 4", "copy"):
            g.work(w)
        name = "test kernel: split, chain 4, copy"
        res[name] = rounds(a, g.gdbport, ["-e", a.kernel])
        log(name, res[name])
    return res


def render(res, a, load):
    begin, end = benchdoc.markers("task-bench")
    lines = [begin, "## Task attribution (issue 14, bench/task_bench.py)", "",
             f"`make bench` on this project's 2-core machine (load average {load[0]} before, {load[1]} after); "
             f"gdbsample -r {RATE} for {a.secs} s per run, {a.rounds} interleaved rounds of `--os none` and "
             "the default (attribution on) on the same guest and workload; medians, lowest-highest run in "
             "brackets. Regenerate with `/usr/bin/python3 bench/task_bench.py`.", "",
             "| guest, workload | pause p50 off (us) | pause p50 on (us) | ratio | samples | confirmed in the "
             "same trip | from the cache | another trip | unattributed | renamed |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for name, r in res.items():
        n = max(1, r["n"])
        lines.append(f"| {name} | {r['off']:.0f} [{r['off_range'][0]}-{r['off_range'][1]}] | {r['on']:.0f} "
                     f"[{r['on_range'][0]}-{r['on_range'][1]}] | {r['on'] / max(1, r['off']):.2f}x | {r['n']} | "
                     f"{100 * r['verified'] / n:.1f} % | {100 * r['hits'] / n:.1f} % | {100 * r['misses'] / n:.1f} % | "
                     f"{100 * r['lost'] / n:.2f} % | {r['renamed']} |")
    lines += ["",
              "Target: pause p50 with attribution at most 1.1x without. Each vCPU's sample carries two "
              "more `m` requests in its one round trip: the per-CPU current-task pointer (8 bytes) and "
              "the identity fields (pid, tgid, comm: one span of a few hundred bytes) of the task the "
              "previous sample found there. When the pointer names that task, those fields are this "
              "sample's identity, read fresh (so an exec or a recycled task struct is seen at once: "
              "'renamed'); another task comes from the cache (entries are trusted for 1 s after they "
              "were read) or costs one more trip. QEMU answers each packet separately, so the two "
              "extra packets per vCPU are what the ratio measures.", end]
    return "\n".join(lines) + "\n"


def main():
    ap = common.parser(__doc__, "gdbsample", "kernel", "linux_build", "out")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=float, default=5)
    a = ap.parse_args()
    common.require("task_bench", a.gdbsample, a.kernel)
    load = [common.loadavg()]
    res = bench(a)
    load.append(common.loadavg())
    common.write_section(a.out, "task-bench", render(res, a, load), log)


if __name__ == "__main__":
    main()
