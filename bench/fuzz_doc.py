#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""fuzz_doc.py: puts the table `make fuzz` printed (fuzz/run.sh) into docs/benchmarks.md, with the
crashes that earlier runs found and that stay fixed (fuzz/crashes/HARNESS/, replayed by make test)."""
import argparse
import datetime
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import benchdoc  # noqa: E402

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def parse_table(text):
    """Rows (harness, executions, coverage, crashes) of run.sh's table; the header is skipped."""
    rows = []
    for line in text.splitlines():
        f = line.split()
        if len(f) == 4 and f[0] != "harness":
            rows.append(tuple(f))
    return rows


def fixed_crashes():
    """(harness, file) of every committed crash input."""
    d = os.path.join(ROOT, "fuzz", "crashes")
    return sorted((h, n) for h in sorted(os.listdir(d)) for n in os.listdir(os.path.join(d, h)))


def render(rows, secs, load):
    begin, end = benchdoc.markers("fuzz")
    total = sum(int(r[1]) for r in rows if r[1].isdigit())
    lines = [begin, "## Fuzzing (issue 13, `make fuzz`)", "",
             f"{datetime.date.today()}, {os.cpu_count()} host CPUs, load average {load[0]} before, {load[1]} after. "
             f"Each libFuzzer harness (clang, ASan + UBSan, any report fatal) runs {secs} s from its committed "
             f"seeds (fuzz/corpus) and what earlier runs found (build/fuzz/corpus): {total:,} executions in all. "
             "`make test` replays the seeds and every fixed crash through the normal build.", "",
             "| harness | executions | coverage (edges) | crashes this run |", "|---|---:|---:|---:|"]
    lines += [f"| {h} | {int(e):,} | {c} | {k} |" if e.isdigit() else f"| {h} | {e} | {c} | {k} |"
              for h, e, c, k in rows]
    lines += ["", "Crashes found by fuzzing and fixed (each kept as a regression input):", ""]
    lines += [f"- `fuzz/crashes/{h}/{n}`" for h, n in fixed_crashes()] or ["- none"]
    lines.append(end)
    return "\n".join(lines) + "\n"


def main():
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--table", required=True)
    ap.add_argument("--seconds", type=int, required=True)
    ap.add_argument("--load-before", default="?")
    ap.add_argument("--out", default=os.path.join(ROOT, "docs", "benchmarks.md"))
    a = ap.parse_args()
    rows = parse_table(open(a.table).read())
    if not rows:
        sys.exit("fuzz_doc: no table in %s" % a.table)
    load = (a.load_before, open("/proc/loadavg").read().split()[0])
    benchdoc.replace_section(a.out, "fuzz", render(rows, a.seconds, load))
    print("fuzz_doc: wrote", a.out, file=sys.stderr)


if __name__ == "__main__":
    main()
