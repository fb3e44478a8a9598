#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""replay_bench.py: `gdbsample replay` (issue 25) -- replay speed and determinism, into docs/benchmarks.md.

The test kernel (x86_64, QEMU 7.2 TCG, -smp 1) is recorded once running `work split 5 3 2`
(-icount shift=5,rr=record) to RECORD_TO instructions. Then, each ROUNDS times, interleaved: the
replay alone (QEMU from its start to its exit at the recording's end), and the replay driven by
gdbsample at several --every values over the same window [FROM, UNTIL]. Figures are guest
instructions per host second: for the replay alone over the whole recording, for gdbsample over
its window (the host time of the window: gdbsample's own duration, which starts at its attach).
Determinism: every folded output of one --every must be byte-identical. Every QEMU is stopped by
its pid.
"""
import hashlib
import os
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import ROOT  # noqa: E402
from guest import Guest  # noqa: E402
import qmpclient  # noqa: E402

log = common.logger("replay_bench")
KERNEL = os.path.join(ROOT, "build", "kernel.elf")
RECORD_TO = 1_500_000_000
FROM, UNTIL = 300_000_000, 1_300_000_000
EVERIES = (10_000_000, 1_000_000, 200_000)


def rr_guest(mode, path):
    return Guest(KERNEL, smp=1, gdb=(mode == "replay"), qmp=True, qemu="7.2",
                 extra=["-icount", f"shift=5,rr={mode},rrfile={path}", "-rtc", "clock=vm"])


def icount_of(g):
    text = qmpclient.hmp(g.qmp_path, "info replay")
    return int(text.rsplit("instruction count = ", 1)[1].split()[0])


def record(path):
    g = rr_guest("record", path).start()
    try:
        g.send("work split ")  # two pieces: a longer line never completes in rr=record (QEMU 7.2)
        g.read_until("work split ")
        g.send("5 3 2\n")
        g.read_until("\n> ")
        t0 = time.monotonic()
        while icount_of(g) < RECORD_TO:
            time.sleep(0.1)
        n = icount_of(g)
        return n, time.monotonic() - t0
    finally:
        g.stop()


def replay_alone(path, total):
    """Host seconds from the start of a replay to QEMU's exit at the recording's end."""
    g = rr_guest("replay", path)
    t0 = time.monotonic()
    g.start()
    try:
        g.proc.wait(600)
        return total / (time.monotonic() - t0)
    finally:
        g.stop()


def replay_gdbsample(path, every, gdbsample):
    g = rr_guest("replay", path).start()
    try:
        r = subprocess.run([gdbsample, "replay", "-p", str(g.gdbport), "-e", KERNEL, "--every", str(every),
                            "--from", str(FROM), "--until", str(UNTIL), "-f", "folded", "--summary-format", "kv"],
                           capture_output=True, text=True, timeout=900)
        if r.returncode != 0:
            raise RuntimeError(r.stderr)
        kv = common.parse_kv(r.stderr)
        return {"ips": (UNTIL - FROM) / (int(kv["duration_ns"]) / 1e9), "samples": int(kv["replay_samples"]),
                "p50": float(kv["pause_p50_us"]), "digest": hashlib.sha256(r.stdout.encode()).hexdigest()[:16]}
    finally:
        g.stop()


def render(res, a):
    begin, end = common.markers("replay-bench")
    alone = statistics.median(res["alone"])
    lines = [begin, "## replay: profiles by instruction count (issue 25, bench/replay_bench.py)", "",
             f"The test kernel (x86_64, QEMU 7.2 TCG, `-smp 1`, `-icount shift=5`) recorded once running "
             f"`work split 5 3 2` for {res['recorded']:,} instructions ({res['record_s']:.1f} s of host time after "
             f"the prompt: {res['recorded'] / res['record_s'] / 1e6:.0f} M instructions a second while recording). "
             f"{a.rounds} rounds, interleaved; medians [lowest-highest]. Load average {res['load_before']} before, "
             f"{res['load_after']} after. Regenerate with `/usr/bin/python3 bench/replay_bench.py`.", "",
             "| run | guest instructions per host second | samples | pause p50 | identical outputs |",
             "|---|---:|---:|---:|---|"]
    lines.append(f"| the replay alone (start to exit) | {alone / 1e6:.0f} M "
                 f"[{min(res['alone']) / 1e6:.0f}-{max(res['alone']) / 1e6:.0f}] | - | - | - |")
    for every in EVERIES:
        rows = res["every"][every]
        ips = [r["ips"] for r in rows]
        same = len({r["digest"] for r in rows}) == 1
        lines.append(f"| gdbsample replay --every {every:,} over [{FROM:,}, {UNTIL:,}] | "
                     f"{statistics.median(ips) / 1e6:.0f} M [{min(ips) / 1e6:.0f}-{max(ips) / 1e6:.0f}] "
                     f"({statistics.median(ips) / alone:.2f}x alone) | {rows[0]['samples']} | "
                     f"{statistics.median(r['p50'] for r in rows):.0f} us | "
                     f"{'yes, all ' + str(len(rows)) if same else 'NO'} |")
    lines += ["", "Each sample costs the replay a stop: replay_break, `c`, the stop reply, `info replay`, one "
              "sampling batch (the pause p50), so the rate falls as --every shrinks; what limits it is that "
              "round trip, as for a live sample. The identical column is the determinism check: every replay of "
              "the one recording gave the same folded bytes.", end]
    return "\n".join(lines) + "\n"


def main():
    ap = common.parser(__doc__.splitlines()[0], "out")
    ap.add_argument("--gdbsample", default=os.path.join(ROOT, "build", "gdbsample"))
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    common.require("replay_bench", a.gdbsample, KERNEL)
    res = {"load_before": common.loadavg(), "alone": [], "every": {e: [] for e in EVERIES}}
    with tempfile.TemporaryDirectory(prefix="gdbsample-replay-bench-") as d:
        path = os.path.join(d, "split.rr")
        res["recorded"], res["record_s"] = record(path)
        for rnd in range(a.rounds):
            res["alone"].append(replay_alone(path, res["recorded"]))
            for every in EVERIES:
                res["every"][every].append(replay_gdbsample(path, every, a.gdbsample))
            log("round", rnd, res["alone"][-1], {e: v[-1] for e, v in res["every"].items()})
    res["load_after"] = common.loadavg()
    text = render(res, a)
    common.write_section(a.out, "replay-bench", text, log)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
