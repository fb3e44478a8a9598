#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""analysis_bench.py: fold throughput and memory of gdbsample-analyze on synthetic captures.

Writes captures of 100k and 1M samples (2 vCPUs, 1-8 frame stacks over 64 distinct chains, the
committed tests/analysis/data/tiny.elf for names), folds each in a fresh child process and
reports samples/s and peak RSS (resource.getrusage of the child); flat memory shows as equal RSS
at 100k and 1M. With --out FILE, replaces the "analysis: fold throughput" section of FILE
(between its markers) and leaves the rest intact.

  /usr/bin/python3 bench/analysis_bench.py [--out docs/benchmarks.md] [--keep DIR]
"""
import argparse
import datetime
import os
import platform
import random
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tests", "analysis"))
import capgen  # noqa: E402
import benchdoc  # noqa: E402

TOOL = os.path.join(ROOT, "analysis", "gdbsample-analyze")
ELF = os.path.join(ROOT, "tests", "analysis", "data", "tiny.elf")
BEGIN, END = benchdoc.markers("analysis-bench")
SIZES = (1, 100_000, 1_000_000)  # 1: start-up cost (interpreter, pyelftools, ELF)


def write_capture(path, n):
    """n samples, 64 distinct chains, flushed in ~64 KiB chunks as gdbsample does."""
    rnd = random.Random(1)
    base = 0xffffffff80100000
    chains = [tuple(base + rnd.randrange(0x100) for _ in range(rnd.randint(1, 8))) for _ in range(64)]
    with open(path, "wb") as f:
        f.write(capgen.header(ncpus=2, rate_hz=1000))
        batch, size = [], 0
        for i in range(n):
            fr = chains[i % 64 if i % 7 else (i * 13) % 64]
            batch.append(capgen.record(i * 500_000, i & 1, 0, fr))
            size += 12 + 8 * len(fr)
            if size >= 65536:
                f.write(capgen.chunk(1, b"".join(batch), len(batch)))
                batch, size = [], 0
        if batch:
            f.write(capgen.chunk(1, b"".join(batch), len(batch)))
        f.write(capgen.chunk(2, capgen.summary_text({"duration_ns": n * 500_000, "samples": n}), 1))


def measure(path):
    """(seconds, peak RSS in KiB) of one `fold` run in a child process."""
    script = ("import resource, subprocess, sys, time\n"
              "t = time.perf_counter()\n"
              "r = subprocess.run(sys.argv[1:], stdout=subprocess.DEVNULL)\n"
              "t = time.perf_counter() - t\n"
              "print(r.returncode, t, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n")
    out = subprocess.run([sys.executable, "-c", script, TOOL, "fold", path, "-e", ELF, "--group-by-cpu"],
                         capture_output=True, text=True, check=True).stdout.split()
    if out[0] != "0":
        sys.exit("analysis_bench: fold failed with exit code %s" % out[0])
    return float(out[1]), int(out[2])


def section(rows):
    lines = [BEGIN, "## analysis: fold throughput", "",
             "Measured by `bench/analysis_bench.py` on %s: Python %s (Debian's /usr/bin/python3), %d host "
             "cores (%s). `gdbsample-analyze fold CAPTURE -e tiny.elf --group-by-cpu` on synthetic captures "
             "(2 vCPUs, stacks of 1-8 frames over 64 distinct chains, 64 KiB chunks); peak RSS of the "
             "child process from `getrusage`. Samples are decoded chunk by chunk and counted by raw stack, "
             "so memory follows the distinct stacks, not the samples."
             % (datetime.date.today().isoformat(), platform.python_version(), os.cpu_count() or 0,
                platform.machine()), "",
             "| samples | capture size | time | samples/s | samples/s after start-up | peak RSS |",
             "|---:|---:|---:|---:|---:|---:|"]
    t_up = rows[0][2]
    for n, size, t, rss in rows:
        net = "%.0f" % (n / (t - t_up)) if n > 1 and t > t_up else "(start-up)"
        lines.append("| %d | %.2f MiB | %.2f s | %.0f | %s | %.1f MiB |"
                     % (n, size / 2 ** 20, t, n / t, net, rss / 1024))
    (n0, _, t0, r0), (n1, _, t1, r1) = rows[1], rows[-1]
    lines += ["", "From %dk to %dk samples, time after start-up grows %.1f× (linear would be %.0f×); peak "
              "RSS grows %.2f×." % (n0 // 1000, n1 // 1000, (t1 - t_up) / (t0 - t_up), n1 / n0, r1 / r0), END]
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", help="markdown file whose analysis section to replace")
    ap.add_argument("--keep", help="write the captures into this directory (default: a temporary one)")
    a = ap.parse_args()
    d = a.keep or tempfile.mkdtemp(prefix="analysis-bench-")
    rows = []
    for n in SIZES:
        path = os.path.join(d, "bench-%d.cap" % n)
        write_capture(path, n)
        t, rss = measure(path)
        rows.append((n, os.path.getsize(path), t, rss))
        print("%8d samples: %.2f s, %.0f samples/s, peak RSS %.1f MiB" % (n, t, n / t, rss / 1024))
        if not a.keep:
            os.unlink(path)
    if not a.keep:
        os.rmdir(d)
    text = section(rows)
    if a.out:
        benchdoc.replace_section(a.out, "analysis-bench", text)
        print("wrote the analysis section of", a.out)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
