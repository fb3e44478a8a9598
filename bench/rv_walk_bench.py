#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""rv_walk_bench.py: host CPU per stack walk on riscv64 (issue 24), written into docs/benchmarks.md.

walk-bench (bench/walk_bench.c, the sampler's own walk) samples stacks of the riscv64 test kernel
(QEMU virt, TCG, -smp 2, `chain 8` and `split 5 3 2` running) and times each unwinding method on
them: on the frame-record build, frame pointers alone and DWARF CFI alone on the very same stacks;
on the CFI-only build, CFI. CPU time of the walking thread only, warm rule caches, so other load
on the host counts little; rounds interleaved between the builds, medians. Every QEMU is stopped
by its pid.
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

log = common.logger("rv_walk_bench")
CONFIG = "tcg-rv64-sscofpmf"
BUILDS = {"fp": os.path.join(ROOT, "build", "riscv64", "kernel.elf"),
          "nofp": os.path.join(ROOT, "build", "riscv64", "kernel-nofp.elf")}


def walk_bench(exe, samples, repeat, port, kernel):
    """{method: {ns, frames, complete}} from one walk-bench run."""
    r = subprocess.run([exe, str(samples), str(repeat), "-p", str(port), "-e", kernel], capture_output=True,
                       text=True, timeout=600)
    if r.returncode != 0:
        raise RuntimeError(f"walk-bench on {kernel}: {r.stderr}")
    return {m.group(1): {"ns": int(m.group(2)), "frames": float(m.group(3)), "complete": float(m.group(4))}
            for m in re.finditer(r"(\w+) ns_per_walk (\d+) frames_per_walk ([\d.]+) complete_pct ([\d.]+)", r.stdout)}


def measure(a):
    """{(build, method): [rounds of {ns, frames, complete}]}, rounds interleaved between the builds."""
    rows = {}
    guests = {b: Guest(k, config=CONFIG, smp=2) for b, k in BUILDS.items()}
    try:
        for b, g in guests.items():
            g.start()
            g.work("chain 8")
            g.work("split 5 3 2")
        for rnd in range(a.rounds):
            for b, g in guests.items():
                got = walk_bench(a.walk_bench, a.samples, a.repeat, g.gdbport, BUILDS[b])
                for m in ("fp", "cfi") if b == "fp" else ("cfi",):
                    rows.setdefault((b, m), []).append(got[m])
                log("round", rnd, b, got)
    finally:
        for g in guests.values():
            g.stop()
    return rows


def render(rows, res, a):
    begin, end = common.markers("rv-walk-bench")
    med = {k: {f: statistics.median(r[f] for r in v) for f in ("ns", "frames", "complete")} for k, v in rows.items()}
    rng = {k: (min(r["ns"] for r in v), max(r["ns"] for r in v)) for k, v in rows.items()}
    fp, cfi = med[("fp", "fp")], med[("fp", "cfi")]
    per = {k: m["ns"] / max(m["frames"], 1e-9) for k, m in med.items()}
    lines = [begin, "## riscv64: host CPU per stack walk (issue 24, bench/rv_walk_bench.py)", "",
             f"QEMU 7.2 TCG, `-M virt -cpu rv64,sscofpmf=true -smp 2`, `work chain 8` and `split 5 3 2`; "
             f"{a.samples} samples of each build, each walked {a.repeat} times per method by `build/walk-bench` "
             f"(CPU time of that thread only), {a.rounds} rounds interleaved between the builds: medians "
             f"[lowest-highest round]. Load average {res['load_before']} before, {res['load_after']} after. "
             "Regenerate with `/usr/bin/python3 bench/rv_walk_bench.py`.", "",
             "| build | method | ns per walk | frames per walk | ns per frame | complete walks |",
             "|---|---|---:|---:|---:|---:|"]
    for (b, m), v in sorted(med.items(), key=lambda kv: (kv[0][0] != "fp", kv[0][1] != "fp")):
        lines.append(f"| {'frame records + CFI' if b == 'fp' else 'CFI only'} | {m} | {v['ns']:.0f} "
                     f"[{rng[(b, m)][0]}-{rng[(b, m)][1]}] | {v['frames']:.2f} | {per[(b, m)]:.0f} | "
                     f"{v['complete']:.1f} % |")
    lines += ["", f"Target (issue 12's, on x86_64): CFI at most 2x the frame-pointer walk. On the same stacks "
              f"CFI costs {cfi['ns'] / max(fp['ns'], 1):.2f}x per walk and {per[('fp', 'cfi')] / max(per[('fp', 'fp')], 1e-9):.2f}x "
              f"per frame ({'met' if per[('fp', 'cfi')] <= 2 * per[('fp', 'fp')] else 'not met'} per frame); "
              "per walk the two do not do the same work: frame records alone complete "
              f"{fp['complete']:.1f} % of the walks, since the kernel's leaf functions (split_a..c) keep no frame "
              "record and no frame record crosses a trap frame, where CFI's signal frame does -- gdbsample's "
              "default (CFI, frame records where it has no rule) completes all of them.", end]
    return "\n".join(lines) + "\n"


def main():
    ap = common.parser(__doc__.splitlines()[0], "out")
    ap.add_argument("--walk-bench", default=os.path.join(ROOT, "build", "walk-bench"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--samples", type=int, default=300)
    ap.add_argument("--repeat", type=int, default=20)
    a = ap.parse_args()
    common.require("rv_walk_bench", a.walk_bench, *BUILDS.values())
    res = {"load_before": common.loadavg()}
    rows = measure(a)
    res["load_after"] = common.loadavg()
    text = render(rows, res, a)
    common.write_section(a.out, "rv-walk-bench", text, log)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
