"""linux_a64_bench.py: gdbsample's pause per sample on Debian's stock arm64 6.1 kernel (virt -cpu max,
busy with dd and a fork loop) against QEMU's bare stop/continue on the same guest, interleaved.

    bench/linux_a64_bench.py --gdbsample build/gdbsample --rtt build/rtt [--rounds 3]

Boots tools/linuxguest_arm64.py's guest (or uses --port/--image/--map of a running one) and
prints a markdown table: per round the bare floor p50 (200 cycles at 100 Hz, bench/floor.py)
and gdbsample's pause p50 and p99 (-r 100 -d 5), then the ratio of the medians.
"""
import argparse
import os
import re
import statistics
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tools"))
sys.path.insert(0, HERE)
from floor import rtt_floor  # noqa: E402


def pause(gdbsample, port, image, kmap):
    r = subprocess.run([gdbsample, "-p", str(port), "-e", image, "-e", kmap, "-r", "100", "-d", "5", "-f", "folded",
                        "-o", os.devnull], capture_output=True, text=True, timeout=300)
    m = re.search(r"pause per sample p50 (\d+) us, p99 (\d+) us", r.stderr)
    if r.returncode != 0 or not m:
        raise RuntimeError(f"gdbsample: {r.stderr[-500:]}")
    return int(m.group(1)), int(m.group(2))


def measure(args, port, image, kmap):
    rows = []
    for i in range(args.rounds):
        floor = rtt_floor(args.rtt, port, 200, 100)
        p50, p99 = pause(args.gdbsample, port, image, kmap)
        rows.append((i + 1, floor, p50, p99))
    print("| round | bare stop/continue p50 us | gdbsample pause p50 us | p99 us |")
    print("|---|---|---|---|")
    for r in rows:
        print("| %d | %d | %d | %d |" % r)
    f, p = statistics.median(r[1] for r in rows), statistics.median(r[2] for r in rows)
    print(f"\nmedian pause p50 {p:.0f} us against a bare floor of {f:.0f} us: {p / f:.2f}x")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--gdbsample", required=True)
    ap.add_argument("--rtt", required=True)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--port", type=int, help="a running guest's gdbstub (with --image and --map)")
    ap.add_argument("--image")
    ap.add_argument("--map")
    args = ap.parse_args()
    if args.port:
        return measure(args, args.port, args.image, args.map)
    from linuxguest_arm64 import Arm64Guest
    with Arm64Guest() as g:
        pids = g.start_workloads(("zerodd", "rngdd", "forker"))
        try:
            measure(args, g.gdb_port, g.vmlinuz, g.kallsyms_path())
        finally:
            g.stop_workloads(pids)


if __name__ == "__main__":
    main()
