#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""count_bench.py: `gdbsample count` (issue 25) -- cost per breakpoint hit and the guest's slowdown, into docs/benchmarks.md.

The test kernel (x86_64, QEMU 7.2 TCG, -smp 2) runs `work split 5 3 2`, which calls split_a,
split_b and split_c once a round. The guest's throughput is its rounds per host second: without
gdbsample from its own counter (`work rounds`, read before and after WINDOW s), while counted
from the hits themselves (split_a's hits over the armed time: one a round, exact). ROUNDS rounds,
interleaved: no profiler, `count split_a`, `count split_a split_b split_c`. One guest for all
(the same VM, so the ratios compare like with like); QEMU is stopped by its pid.
"""
import os
import re
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import ROOT  # noqa: E402
from guest import Guest  # noqa: E402

log = common.logger("count_bench")
KERNEL = os.path.join(ROOT, "build", "kernel.elf")
WINDOW = 3.0
RUNS = {"split_a": ["split_a"], "all three": ["split_a", "split_b", "split_c"]}


def rounds(g, pid):
    g.send(f"work rounds {pid}\n")
    return int(re.search(r"pid \d+ rounds (\d+)", g.read_until("\n> ")).group(1))


def baseline(g, pid):
    r0, t0 = rounds(g, pid), time.monotonic()
    time.sleep(WINDOW)
    return (rounds(g, pid) - r0) / (time.monotonic() - t0)


def counted(g, funcs, gdbsample):
    r = subprocess.run([gdbsample, "count", "-p", str(g.gdbport), "-e", KERNEL, "-d", str(WINDOW),
                        "--summary-format", "kv"] + funcs, capture_output=True, text=True, timeout=120)
    if r.returncode != 0:
        raise RuntimeError(r.stderr)
    kv = common.parse_kv(r.stderr)
    hits_a = int(next(line.split()[0] for line in r.stdout.splitlines()[1:] if line.split()[-1] == "split_a"))
    armed = float(kv["count_armed_seconds"])
    return {"rounds_s": hits_a / armed, "hits_s": int(kv["count_hits"]) / armed,
            "cost_us": float(kv["count_hit_cost_us"]), "stopped": float(kv["count_stopped_share"]),
            "step": kv["count_step"]}


def render(res, a):
    begin, end = common.markers("count-bench")
    base = statistics.median(res["base"])

    def span(xs, fmt):
        return f"{fmt(statistics.median(xs))} [{fmt(min(xs))}-{fmt(max(xs))}]"
    lines = [begin, "## count: calls at breakpoints (issue 25, bench/count_bench.py)", "",
             f"The test kernel (x86_64, QEMU 7.2 TCG, `-smp 2`) running `work split 5 3 2` (split_a, _b and _c "
             f"called once a round). {a.rounds} rounds of {WINDOW:.0f} s, interleaved, on one guest; medians "
             f"[lowest-highest]. Load average {res['load_before']} before, {res['load_after']} after. Regenerate "
             f"with `/usr/bin/python3 bench/count_bench.py`.", "",
             "| run | guest rounds per host second | of no profiler | hits per second | cost per hit | "
             "guest stood still |", "|---|---:|---:|---:|---:|---:|",
             f"| no profiler | {span(res['base'], lambda x: f'{x:.0f}')} | 1 | - | - | - |"]
    for name in RUNS:
        rows = res["runs"][name]
        rs = [r["rounds_s"] for r in rows]
        lines.append(f"| count {name} | {span(rs, lambda x: f'{x:.0f}')} | {statistics.median(rs) / base:.3f} | "
                     f"{statistics.median(r['hits_s'] for r in rows):.0f} | "
                     f"{statistics.median(r['cost_us'] for r in rows):.0f} us | "
                     f"{100 * statistics.median(r['stopped'] for r in rows):.1f} % |")
    lines += ["", "A hit costs the stop reply, a `p` for the pc, one single step (its own stop reply) and `c`: "
              "the cost column, from the stop reply to the resume, is what the guest stood still for. The "
              "slowdown is far larger than that share, so what limits the guest is QEMU's translation, not "
              "gdbsample's round trips: QEMU throws away all translated code when single-stepping is switched "
              "on or off and when a breakpoint comes or goes (read in QEMU's source, cpu_single_step and "
              "breakpoint_invalidate, not re-checked for 7.2), and a page holding a breakpoint is translated an "
              "instruction a block (the split loops share their page with the entries); which of the two "
              "dominates is not measured here. So counts are exact while they are taken, but the guest runs at "
              "a fraction of its speed meanwhile; --max-hits bounds the hits a second. "
              f"Step mode seen: {', '.join(sorted({r['step'] for rows in res['runs'].values() for r in rows}))} "
              "(`over`: a step runs over the breakpoint, no remove/insert).", end]
    return "\n".join(lines) + "\n"


def main():
    ap = common.parser(__doc__.splitlines()[0], "out")
    ap.add_argument("--gdbsample", default=os.path.join(ROOT, "build", "gdbsample"))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    common.require("count_bench", a.gdbsample, KERNEL)
    res = {"load_before": common.loadavg(), "base": [], "runs": {n: [] for n in RUNS}}
    with common.running(Guest(KERNEL, smp=2, gdb=True, qmp=True, qemu="7.2")) as g:
        g.send("work split 5 3 2\n")
        pid = int(re.search(r"pid (\d+) split", g.read_until("\n> ")).group(1))
        time.sleep(0.3)
        for rnd in range(a.rounds):
            res["base"].append(baseline(g, pid))
            for name, funcs in RUNS.items():
                res["runs"][name].append(counted(g, funcs, a.gdbsample))
            log("round", rnd, res["base"][-1], {n: v[-1]["rounds_s"] for n, v in res["runs"].items()})
    res["load_after"] = common.loadavg()
    text = render(res, a)
    common.write_section(a.out, "count-bench", text, log)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
