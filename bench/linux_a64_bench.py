# SPDX-License-Identifier: MIT
"""linux_a64_bench.py: gdbsample's pause per sample on Debian's stock arm64 6.1 kernel (virt -cpu max,
busy with dd and a fork loop) against QEMU's bare stop/continue on the same guest, interleaved.

    bench/linux_a64_bench.py --gdbsample build/gdbsample --rtt build/rtt [--rounds 3] [--out docs/benchmarks.md]

Boots tools/linuxguest_arm64.py's guest (or uses --port/--image/--map of a running one), runs the
mixed workload x86's unwind bench uses (zerodd, rngdd, forker) and writes a markdown section:
per round the bare floor p50 (200 cycles at 100 Hz, bench/common.py rtt_floor) and gdbsample's pause p50
and p99 (-r 100 -d 5), then the ratio of the medians -- to stdout, or into its section of --out.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from common import markers, rtt_floor  # noqa: E402


def pause(gdbsample, port, image, kmap):
    """gdbsample's pause (p50, p99) in us over 5 s at 100 Hz."""
    kv = common.gdbsample(gdbsample, "-p", port, "-e", image, "-e", kmap, "-r", 100, "-d", 5, "-f", "folded",
                          "-o", os.devnull)
    return kv["pause_p50_us"], kv["pause_p99_us"]


def measure(args, port, image, kmap):
    load0 = os.getloadavg()[0]
    rows = []
    for i in range(args.rounds):
        floor = rtt_floor(args.rtt, port, 200, 100)
        p50, p99 = pause(args.gdbsample, port, image, kmap)
        rows.append((i + 1, floor, p50, p99))
    f, p = statistics.median(r[1] for r in rows), statistics.median(r[2] for r in rows)
    begin, end = markers("linux-a64-bench")
    out = [begin, "## arm64 Linux: gdbsample's pause against the bare stop/continue (issue 21, bench/linux_a64_bench.py)",
           "", "Debian's stock 6.1 arm64 kernel on QEMU 7.2 TCG `-M virt -cpu max -smp 2` (pointer authentication "
           "and KASLR on), `-e vmlinuz -e kallsyms`, zerodd + rngdd + forker running (the mixed workload of x86's "
           "table in \"Unwinding real kernels (b)\" above: 399 us against 163 us, 2.45x); gdbsample -r 100 for "
           "5 s and bench/rtt's bare 0x03 -> stop reply -> c (200 cycles at 100 Hz) interleaved on the same guest; "
           f"load average {load0:.2f} before, {os.getloadavg()[0]:.2f} after. Regenerate with "
           "`/usr/bin/python3 bench/linux_a64_bench.py --gdbsample build/gdbsample --rtt build/rtt --out docs/benchmarks.md`.",
           "", "| round | bare stop/continue p50 (us) | pause p50 (us) | pause p99 (us) |", "|---:|---:|---:|---:|"]
    out += ["| %d | %d | %d | %d |" % r for r in rows]
    out += ["", f"Median pause p50 {p:.0f} us against a bare floor of {f:.0f} us: **{p / f:.2f}x** (x86 6.1: 2.45x).",
            "An arm64 sample needs more round trips than an x86 one: ELR_EL1 (a stop on an exception vector, "
            "7-25 % of samples) comes only with `p` (TPIDR_EL1 too, once per vCPU), and a user-mode vCPU's task is read through the "
            "other vCPU (KPTI).", end]
    text = "\n".join(out) + "\n"
    common.write_section(args.out, "linux-a64-bench", text)


def main():
    ap = common.parser(__doc__.splitlines()[0], "gdbsample", "rtt", "linux_build")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--port", type=int, help="a running guest's gdbstub (with --image and --map)")
    ap.add_argument("--image")
    ap.add_argument("--map")
    ap.add_argument("--out", help="the markdown file whose linux-a64-bench section to replace")
    args = ap.parse_args()
    if args.port:
        return measure(args, args.port, args.image, args.map)
    from linuxguest_arm64 import Arm64Guest
    with Arm64Guest(build=args.linux_build) as g:
        pids = g.start_workloads(("zerodd", "rngdd", "forker"))
        try:
            measure(args, g.gdb_port, g.vmlinuz, g.kallsyms_path())
        finally:
            g.stop_workloads(pids)


if __name__ == "__main__":
    main()
