# SPDX-License-Identifier: MIT
"""common.py: what the benchmarks share -- paths and options, gdbsample's key value summary, bench/rtt, percentiles, guests, their docs section.

Every bench/*_bench.py imports it first (it puts tools/ and vm-configs/ on sys.path). gdbsample's
end-of-run summary is read in its `--summary-format kv` form (docs/json.md, sampler/summary.c):
`key value` lines whose keys never change meaning, so no bench parses the text written for people.
"""
import argparse
import contextlib
import os
import re
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BENCH = os.path.join(ROOT, "bench")
for _d in (os.path.join(ROOT, "tools"), os.path.join(ROOT, "vm-configs"), BENCH):
    if _d not in sys.path:
        sys.path.insert(0, _d)

import benchdoc  # noqa: E402

# The paths a bench may take as an option (`make bench` passes them explicitly).
DEFAULTS = {
    "gdbsample": os.path.join(ROOT, "build", "gdbsample"),
    "rtt": os.path.join(ROOT, "build", "rtt"),
    "kernel": os.path.join(ROOT, "build", "kernel.elf"),
    "linux_build": os.path.join(ROOT, "build", "linux"),
    "out": os.path.join(ROOT, "docs", "benchmarks.md"),
}
KV_FLAGS = ["--summary-format", "kv"]  # the summary as `key value` lines on stderr (implies --summary)
# The summary keys the benches read from every run (tests/system/test_bench_common.py checks that
# gdbsample still gives each of them; the task_* and modules_* keys come only when counted).
KV_KEYS = ("samples", "duration_ns", "rate_achieved_hz", "pause_p50_us", "pause_p99_us", "pause_max_us",
           "stopped_fraction", "paused_fraction", "prediction_hits", "prediction_misses", "round_trips",
           "mem_bytes", "deadlines_skipped", "failed_rounds", "idle", "frames_orc", "unwind_stop_end",
           "unwind_stop_user")


def logger(name):
    """A log(*words) that prints `name: words` on stderr at once."""
    def log(*a):
        print(f"{name}:", *a, file=sys.stderr, flush=True)
    return log


def parser(description, *paths, kernel=None, out_default=True):
    """An ArgumentParser with the path options named in paths
    ("gdbsample", "rtt", "kernel", "linux_build", "out") at their defaults; kernel: another
    default for --kernel; out_default=False: --out has none (the section is only printed)."""
    ap = argparse.ArgumentParser(description=description)
    for p in paths:
        flag = "--" + p.replace("_", "-")
        default = kernel if p == "kernel" and kernel else DEFAULTS[p]
        if p == "out" and not out_default:
            ap.add_argument(flag, help="markdown file whose section to replace (default: print it)")
        else:
            ap.add_argument(flag, default=default, help=f"default {os.path.relpath(default, ROOT)}")
    return ap


def require(name, *paths):
    """Exits with `name: PATH is missing (make PATH)` for the first path that does not exist."""
    for f in paths:
        if not os.path.exists(f):
            sys.exit(f"{name}: {f} is missing (make {os.path.relpath(f, ROOT)})")


# -- gdbsample's summary ---------------------------------------------------------------------
def parse_kv(text):
    """`key value` lines (gdbsample --summary-format kv) -> {key: int, float, str or None (a key
    with no value)}; a line that is not a summary row (a warning) is left out."""
    out = {}
    for line in text.splitlines():
        m = re.fullmatch(r"([a-z][a-z0-9_-]*)(?: (.*))?", line)  # (keys may hold a -: unwind_stop_out-of-range)
        if not m:
            continue
        v = m.group(2)
        if v is None or v == "":
            out[m.group(1)] = None
        elif re.fullmatch(r"-?\d+", v):
            out[m.group(1)] = int(v)
        elif re.fullmatch(r"-?\d+\.\d+", v):
            out[m.group(1)] = float(v)
        else:
            out[m.group(1)] = v
    return out


def gdbsample(exe, *args, timeout=300):
    """Runs `exe ARGS -q --summary-format kv` and returns its summary ({key: value}); a failure,
    or no summary, raises RuntimeError with gdbsample's stderr."""
    r = subprocess.run([exe, *map(str, args), "-q"] + KV_FLAGS, capture_output=True, text=True, timeout=timeout)
    kv = parse_kv(r.stderr)
    if r.returncode != 0 or "samples" not in kv:
        raise RuntimeError(f"gdbsample {' '.join(map(str, args))}: exit {r.returncode}: {r.stderr[-1500:]}")
    return kv


def one_trip(kv):
    """The share of samples read in one round trip (prediction hits of hits + misses)."""
    return kv["prediction_hits"] / max(1, kv["prediction_hits"] + kv["prediction_misses"])


# -- bench/rtt and statistics ----------------------------------------------------------------
def rtt(exe, port, mode="floor", count=200, k=512, gap_us=None):
    """bench/rtt's (p50, p99) in us of `count` cycles of mode (floor: bare 0x03 -> stop reply ->
    c); gap_us: the guest runs that long between cycles (None: rtt's default)."""
    argv = [exe, str(port), mode, str(count)] + ([str(k), str(gap_us)] if gap_us is not None else
                                                 ([str(k)] if k != 512 else []))
    out = subprocess.run(argv, capture_output=True, text=True, timeout=300)
    m = re.search(r"p50 (\d+) p99 (\d+)", out.stdout)
    if not m:
        raise RuntimeError(f"rtt {mode}: {out.stderr}")
    return int(m.group(1)), int(m.group(2))


def span(xs, fmt="{:.0f}"):
    """A table cell: the median of xs, then [lowest-highest], each formatted with fmt."""
    import statistics
    return f"{fmt.format(statistics.median(xs))} [{fmt.format(min(xs))}-{fmt.format(max(xs))}]"


def pause_base(runs, name="record (on-CPU only)"):
    """The median pause p50 of the baseline runs[name] (summaries), what the ratios divide by."""
    import statistics
    return statistics.median(r["pause_p50_us"] for r in runs[name])


def percentile(values, p):
    """The p-th percentile (0-100) of values: the value at rank round(p/100 * (n-1)) in order."""
    v = sorted(values)
    return v[min(len(v) - 1, int(round(p / 100 * (len(v) - 1))))]


def loadavg():
    """The host's 1-minute load average, as /proc/loadavg says it."""
    with open("/proc/loadavg") as f:
        return f.read().split()[0]


# -- guests and the docs ---------------------------------------------------------------------
@contextlib.contextmanager
def running(guest, works=(), settle=0.3):
    """Starts guest (a tools/ Guest or LinuxGuest), runs `work W` for each of works (our kernel),
    waits settle s, yields it; QEMU is stopped by its pid however the block ends."""
    try:
        guest.start()
        for w in works:
            guest.work(w)
        if works:
            time.sleep(settle)
        yield guest
    finally:
        guest.stop()


def write_section(out, name, text, log=None):
    """Puts text (between name's markers) into the markdown file out, or prints it when out is
    None; log: told where it went."""
    if out:
        benchdoc.replace_section(out, name, text)
        if log:
            log("wrote", out)
    else:
        print(text, end="")


def markers(name):
    """The begin/end comment lines of section name (bench/benchdoc.py)."""
    return benchdoc.markers(name)


def rtt_floor(exe, port, count, rate):
    """p50 in us of `count` bare 0x03 -> stop reply -> c cycles, one every 1/rate s: QEMU's own
    stop/continue, the baseline the benches set gdbsample's pause against."""
    return rtt(exe, port, "floor", count, 512, 1000000 // rate)[0]
