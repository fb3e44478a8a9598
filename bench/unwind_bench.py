#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""unwind_bench.py: what unwinding real kernels costs (issue 12), written into docs/benchmarks.md.

(a) Host CPU per stack walk for each method, on stacks sampled from live guests by walk-bench
    (bench/walk_bench.c, the sampler's own code): frame pointers and DWARF CFI on the very same
    stacks of our kernel (its frame-pointer build also carries CFI), ORC on Debian's stock 6.1.
    CPU time of the walking thread only, warm rule caches; rounds interleaved, medians.
(b) On the stock 6.1 guest under TCG, -smp 2: the share of samples done in one round trip, and
    gdbsample's pause per sample next to QEMU's bare stop/continue (bench/rtt's floor) at the same
    cadence in the same run, for a steady workload (dd from /dev/zero) and a mixed one
    (dd, the RNG, a fork+exec loop). Every QEMU is stopped by its pid.
"""
import os
import re
import statistics
import subprocess
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import ROOT  # noqa: E402
from guest import Guest  # noqa: E402
from linuxguest import LinuxGuest  # noqa: E402
import benchdoc  # noqa: E402
from common import rtt_floor  # noqa: E402

RATE = 100


log = common.logger("unwind_bench")


def walk_bench(exe, samples, repeat, args):
    """{method: {ns, frames, complete}} from one walk-bench run."""
    r = subprocess.run([exe, str(samples), str(repeat)] + args, capture_output=True, text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"walk-bench {args}: {r.stderr}")
    out = {}
    for m in re.finditer(r"(\w+) ns_per_walk (\d+) frames_per_walk ([\d.]+) complete_pct ([\d.]+)", r.stdout):
        out[m.group(1)] = {"ns": int(m.group(2)), "frames": float(m.group(3)), "complete": float(m.group(4))}
    return out


def summary(kv):
    """The fields this bench reports, from gdbsample's key value summary."""
    return {"p50": kv["pause_p50_us"], "p99": kv["pause_p99_us"], "hits": kv["prediction_hits"],
            "misses": kv["prediction_misses"], "trips": kv["round_trips"], "idle": kv["idle"]}



def bench_walks(a, res):
    """(a): rounds interleaved between our kernel (fp, cfi) and the 6.1 guest (orc)."""
    kernel = os.path.join(ROOT, "build", "kernel.elf")
    rows = {"fp": [], "cfi": [], "orc": [], "fp_frames": [], "orc_frames": [], "cfi_complete": [],
            "orc_complete": []}
    g = Guest(kernel, smp=2)
    lg = LinuxGuest(build=a.linux_build, series="6.1", smp=2)
    try:
        g.start()
        g.work("chain 8")
        g.work("split 5 3 2")
        lg.start()
        pids = lg.start_workloads(["zerodd", "rngdd", "forker"])
        for rnd in range(a.rounds):
            ours = walk_bench(a.walk_bench, a.walk_samples, a.repeat, ["-p", str(g.gdbport), "-e", kernel])
            theirs = walk_bench(a.walk_bench, a.walk_samples, a.repeat,
                                ["-p", str(lg.gdb_port), "-e", lg.vmlinuz, "-e", lg.kallsyms_path()])
            rows["fp"].append(ours["fp"]["ns"])
            rows["cfi"].append(ours["cfi"]["ns"])
            rows["fp_frames"].append(ours["fp"]["frames"])
            rows["cfi_complete"].append(ours["cfi"]["complete"])
            rows["orc"].append(theirs["orc"]["ns"])
            rows["orc_frames"].append(theirs["orc"]["frames"])
            rows["orc_complete"].append(theirs["orc"]["complete"])
            log("walks round", rnd, ours, theirs)
        lg.stop_workloads(pids)
    finally:
        g.stop()
        lg.stop()
    res["walks"] = {k: statistics.median(v) for k, v in rows.items()}
    res["walks_range"] = {k: (min(v), max(v)) for k, v in rows.items() if k in ("fp", "cfi", "orc")}


def bench_linux(a, res):
    """(b): per workload, rounds of (floor, gdbsample) on the same 6.1 guest."""
    res["linux"] = {}
    lg = LinuxGuest(build=a.linux_build, series="6.1", smp=2)
    try:
        lg.start()
        ks = lg.kallsyms_path()
        for name, loads in (("steady: zerodd", ["zerodd"]), ("mixed: zerodd, rngdd, forker",
                                                              ["zerodd", "rngdd", "forker"])):
            pids = lg.start_workloads(loads)
            floor, p50, hits, misses = [], [], 0, 0
            for _ in range(a.rounds):
                floor.append(rtt_floor(a.rtt, lg.gdb_port, a.cycles, RATE))
                s = summary(common.gdbsample(a.gdbsample, "-p", lg.gdb_port, "-e", lg.vmlinuz, "-e", ks,
                                             "-r", RATE, "-d", a.secs))
                p50.append(s["p50"])
                hits += s["hits"]
                misses += s["misses"]
            lg.stop_workloads(pids)
            res["linux"][name] = {"floor": statistics.median(floor), "p50": statistics.median(p50),
                                  "one_trip": hits / max(1, hits + misses), "samples": hits + misses}
            log(name, res["linux"][name])
    finally:
        lg.stop()


def render(res, a):
    begin, end = benchdoc.markers("unwind-bench")
    w, rng = res["walks"], res["walks_range"]
    fp_f = w["fp"] / w["fp_frames"]
    orc_f = w["orc"] / w["orc_frames"]
    lines = [begin, "## Unwinding real kernels (issue 12, bench/unwind_bench.py)", "",
             f"`make bench` on this project's 2-core machine (load average {res['load_before']} before, "
             f"{res['load_after']} after); {a.rounds} interleaved rounds, medians (lowest-highest round in "
             "brackets). Regenerate with `/usr/bin/python3 bench/unwind_bench.py`.", "",
             "### (a) Host CPU per stack walk, warm caches", "",
             f"{a.walk_samples} samples of each guest, each walked {a.repeat} times per method by `build/walk-bench` "
             "(the sampler's own walk; CPU time of that thread only, so other load on the host does not count).", "",
             "| method | guest, stacks | ns per walk | frames per walk | ns per frame | complete walks | vs frame pointers |",
             "|---|---|---:|---:|---:|---:|---:|",
             f"| fp | our kernel (frame pointers), chain 8 + split | {w['fp']:.0f} [{rng['fp'][0]}-{rng['fp'][1]}] | "
             f"{w['fp_frames']:.2f} | {fp_f:.0f} | 100 % | 1.00x |",
             f"| cfi | the same stacks (.debug_frame, .eh_frame) | {w['cfi']:.0f} [{rng['cfi'][0]}-{rng['cfi'][1]}] | "
             f"{w['fp_frames']:.2f} | {w['cfi'] / w['fp_frames']:.0f} | {w['cfi_complete']:.1f} % | "
             f"{w['cfi'] / w['fp']:.2f}x per walk |",
             f"| orc | Debian 6.1, dd + RNG + fork loop | {w['orc']:.0f} [{rng['orc'][0]}-{rng['orc'][1]}] | "
             f"{w['orc_frames']:.2f} | {orc_f:.0f} | {w['orc_complete']:.1f} % | {orc_f / fp_f:.2f}x per frame |",
             "",
             "Target: CFI and ORC at most 2x the frame-pointer walk once pcs are cached. CFI is measured on "
             "the very same stacks; ORC's stacks are a stock kernel's, which has no frame pointers, so its "
             "cost is compared per frame. Each CFI rule comes from libdw once and then from a hash table; "
             "each ORC lookup (a binary search over ~385 000 entries) is remembered per pc, and a register "
             "frame from user mode stops before reading the rest of pt_regs.", "",
             "### (b) The stock Debian 6.1 guest: one round trip, and the pause", "",
             f"gdbsample -e vmlinuz -e kallsyms -r {RATE} for {a.secs} s per round; bench/rtt's bare 0x03 -> "
             "stop reply -> c cycle at the same cadence on the same guest in the same rounds.", "",
             "| workload | samples | one round trip | pause p50 (us) | bare stop/continue p50 (us) | ratio |",
             "|---|---:|---:|---:|---:|---:|"]
    for name, r in res["linux"].items():
        lines.append(f"| {name} | {r['samples']} | {100 * r['one_trip']:.1f} % | {r['p50']:.0f} | {r['floor']:.0f} | "
                     f"{r['p50'] / max(1, r['floor']):.2f}x |")
    lines += ["",
              "Target: >= 95 % of samples in one round trip. A sample needs a second trip when its "
              "stack is not where the previous one's was: a different task (each `true` the fork loop "
              "execs runs on a fresh stack), an interrupt on the IRQ stack after a sample in task "
              "context, or a deeper call than any recent one. A steady workload shows the predictor; "
              "the mixed one, how far task churn takes it.", end]
    return "\n".join(lines) + "\n"


def main():
    ap = common.parser(__doc__, "gdbsample", "rtt", "linux_build", "out")
    ap.add_argument("--walk-bench", default=os.path.join(ROOT, "build", "walk-bench"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--walk-samples", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--secs", type=float, default=5)
    a = ap.parse_args()
    common.require("unwind_bench", a.gdbsample, a.walk_bench, a.rtt)
    res = {"load_before": common.loadavg()}
    bench_walks(a, res)
    bench_linux(a, res)
    res["load_after"] = common.loadavg()
    common.write_section(a.out, "unwind-bench", render(res, a), log)


if __name__ == "__main__":
    main()
