#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""throughput_bench.py: what sampling costs the guest's work -- gdbsample, the bare stop/continue and the TCG-plugin peer (issue 26).

The guest's clock cannot show a profiler's cost under TCG: it stands still only while the VM is
stopped, so a profiler that slows every instruction (a TCG plugin) looks free by it. This bench
counts the guest's *work* instead: one `work split 1 1 1` task per vCPU, their rounds (`work
rounds PID`, which the kernel keeps per task) per host second, for

    none          no profiler
    floor         bench/rtt's bare 0x03 -> stop reply -> c at 100 Hz: what any gdbstub client costs
    gdbsample     100 and 1000 Hz (-e the kernel: symbols, unwinding, the fold)
    plugin        bench/qperf_peer.so, qperf's method (a TCG plugin, see bench/qperf_peer.c):
                  insn  a clock check per executed instruction, 100 Hz (qperf's own)
                  tb    the same check per executed translation block, 100 Hz
                  count a sample every EVERY executed instructions, no clock

all on QEMU 10.0 (the plugin API's version; the same binary for every method), -smp 1 and 2, our
kernel on x86_64 and aarch64. The methods run interleaved: every guest is booted first, then each
round gives each method one window of SECS host seconds on its own guest while every other guest
is stopped (QMP stop/cont: a stopped QEMU costs nothing), so host noise hits all methods alike.
A ratio is a round's throughput over the same round's `none`; the table gives each method's median
ratio and its lowest and highest round. Rounds are counted around each window through the serial
shell (the same two commands for every method). Every QEMU is stopped by its pid.

    throughput_bench.py [--gdbsample G] [--rtt R] [--plugin P] [--rounds N] [--secs S] [--out F]
"""
import os
import re
import signal
import statistics
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
import crosscheck  # noqa: E402
from common import ROOT  # noqa: E402
from guest import Guest  # noqa: E402
import qemu_versions  # noqa: E402
from qmpclient import qmp  # noqa: E402

log = common.logger("throughput_bench")
QEMU = "10.0"
ARCHES = {"x86_64": (os.path.join(ROOT, "build", "kernel.elf"), None),
          "aarch64": (os.path.join(ROOT, "build", "aarch64", "kernel.elf"), "tcg-a64-max")}
EVERY = 10000000  # count mode: a sample every 10^7 instructions (the plugin's default; ~60 Hz on x86_64 here)
METHODS = ("none", "floor", "gdbsample 100", "gdbsample 1000", "plugin insn", "plugin tb", "plugin count")


class Run:
    """One guest for a set of methods: its pids, its running time (for the plugin's rate)."""

    def __init__(self, a, arch, smp, plugin_mode, tmp):
        kernel, config = ARCHES[arch]
        extra = []
        self.out = None
        if plugin_mode:
            self.out = os.path.join(tmp, f"{arch}-{smp}-{plugin_mode}.txt")
            arg = f"mode={plugin_mode},out={self.out}," + (f"every={EVERY}" if plugin_mode == "count" else "hz=100")
            extra = ["-plugin", f"{a.plugin},{arg}"]
        kw = {"config": config} if config else {}
        self.g = Guest(kernel, smp=smp, qmp=True, qemu=QEMU, extra=extra, **kw)
        self.smp, self.running_s, self.since = smp, 0.0, None

    def start(self):
        self.since = time.monotonic()
        self.g.start()
        self.pids = [self.g.work("split 1 1 1") for _ in range(self.smp)]
        self.pause()

    def pause(self):
        qmp(self.g.qmp_path, "stop")
        self.running_s += time.monotonic() - self.since

    def resume(self):
        self.since = time.monotonic()
        qmp(self.g.qmp_path, "cont")

    def rounds(self):
        """(the split tasks' rounds, guest ms) now."""
        total, ms = 0, 0
        for pid in self.pids:
            m = re.search(r"rounds (\d+) at (\d+) ms", self.g.cmd(f"work rounds {pid}", timeout=120))
            if not m:
                raise RuntimeError(f"work rounds {pid}: no count")
            total, ms = total + int(m.group(1)), int(m.group(2))
        return total, ms

    def plugin_rate(self):
        """Samples per vCPU per running second, from the plugin's file (written at QEMU's exit)."""
        with open(self.out) as f:
            per = [int(m.group(1)) for m in (re.match(r"vcpu \d+ samples (\d+)", ln) for ln in f) if m]
        return sum(per) / len(per) / self.running_s if per else None


def sampling(a, run, port, hz, tmp):
    """gdbsample at hz on run's guest, recording a capture, once its first chunk is flushed (it
    flushes every second): (process, its stderr file). Its start (the image, the connection,
    finding the kernel) is not in the window: that is the start's cost (kfind-bench), not sampling's."""
    err = tempfile.TemporaryFile(mode="w+")
    cap = os.path.join(tmp, "window.cap")
    p = subprocess.Popen([a.gdbsample, "-p", str(port), "-e", run.g.kernel, "-r", hz, "-f", "capture", "-o", cap,
                          *common.KV_FLAGS], stdout=subprocess.DEVNULL, stderr=err, text=True)
    end = time.monotonic() + 60
    while time.monotonic() < end and p.poll() is None:
        rec = crosscheck.recording(cap)
        if rec and os.path.getsize(rec) >= 128:
            return p, err
        time.sleep(0.05)
    err.seek(0)
    raise RuntimeError(f"gdbsample did not start sampling: {err.read()[-1500:]}")


def finish(p, err):
    """SIGINT gdbsample, wait, and return its summary."""
    p.send_signal(signal.SIGINT)
    p.wait(timeout=60)
    err.seek(0)
    text = err.read()
    kv = common.parse_kv(text)
    if p.returncode != 0 or "samples" not in kv:
        raise RuntimeError(f"gdbsample exited {p.returncode}: {text[-1500:]}")
    return kv


def window(a, run, method, port, tmp):
    """One window of method on run's guest: (rounds per host s, guest ms per host s, kv or None)."""
    run.resume()
    try:
        kv = p = None
        if method.startswith("gdbsample"):  # its steady state: the window opens once it samples
            p, err = sampling(a, run, port, method.split()[1], tmp)
        r0, g0 = run.rounds()
        t0 = time.monotonic()
        if method == "floor":
            common.rtt(a.rtt, port, "floor", int(a.secs * 100), 512, 10000)
        else:
            time.sleep(a.secs)
        t1 = time.monotonic()
        r1, g1 = run.rounds()
        t2 = time.monotonic()
        if p:
            kv = finish(p, err)
    finally:
        if p and p.poll() is None:
            p.kill()
            p.wait()
        run.pause()
    # the window is t0..t1 plus the two `work rounds` exchanges around it (the same for every method)
    host = t1 - t0 + (t2 - t1)
    return (r1 - r0) / host, (g1 - g0) / host, kv


def bench(a, arch, smp, tmp):
    runs = {"plain": Run(a, arch, smp, None, tmp)}
    for mode in ("insn", "tb", "count"):
        runs[mode] = Run(a, arch, smp, mode, tmp)
    where = {"none": "plain", "floor": "plain", "gdbsample 100": "plain", "gdbsample 1000": "plain",
             "plugin insn": "insn", "plugin tb": "tb", "plugin count": "count"}
    rows = {m: [] for m in METHODS}
    try:
        for r in runs.values():
            r.start()
        for rnd in range(a.rounds):
            order = METHODS if rnd % 2 == 0 else tuple(reversed(METHODS))
            for m in order:
                run = runs[where[m]]
                rows[m].append(window(a, run, m, run.g.gdbport, tmp))
            log(arch, smp, "round", rnd + 1, {m: round(rows[m][-1][0]) for m in METHODS})
    finally:
        for r in runs.values():
            r.g.stop()
    res = {}
    base = [x[0] for x in rows["none"]]
    for m in METHODS:
        ratios = [x[0] / b for x, b in zip(rows[m], base) if b > 0]
        kvs = [x[2] for x in rows[m] if x[2]]
        res[m] = {"rounds_per_s": statistics.median(x[0] for x in rows[m]),
                  "guest_ms_per_s": statistics.median(x[1] for x in rows[m]),
                  "ratio": statistics.median(ratios), "lo": min(ratios), "hi": max(ratios),
                  "rate": statistics.median(k["rate_achieved_hz"] for k in kvs) if kvs else None,
                  "stopped": statistics.median(k["stopped_fraction"] for k in kvs) if kvs else None}
    for mode in ("insn", "tb", "count"):
        res["plugin " + mode]["rate"] = runs[mode].plugin_rate()
    return res


def render(a, results, load, version):
    b, e = common.markers("throughput-bench")
    out = [b, "## Throughput: what sampling costs the guest's work (issue 26)", "",
           f"Measured by `make bench` (bench/throughput_bench.py) on {time.strftime('%Y-%m-%d')}: {version}, "
           f"TCG, 2 host cores, our kernel with one `work split 1 1 1` task per vCPU. Each method ran "
           f"{a.rounds} windows of {a.secs} s, interleaved with the others (every other guest stopped meanwhile); "
           f"the ratio is the guest's rounds per host second over the same round's run without a "
           f"profiler -- median, then the lowest and highest round. The host's 1-minute load was "
           f"{load[0]} before and {load[1]} after (other jobs included).", "",
           "This is the cost as the guest feels it. The guest's clock (last column: guest ms per host "
           "second) cannot show it: under TCG it stands still only while the VM is stopped, so a plugin "
           "that slows every instruction looks free by it. What this cannot see: where the time went "
           "(that is the pause table below), and a guest whose work is I/O-bound rather than CPU-bound. "
           "gdbsample records a capture, as `record` does, and its window opens once the first chunk is "
           "flushed (its start is kfind-bench's figure) and its rate is its own summary's; the plugin's is its samples per vCPU over all the "
           "time its guest ran, boot included (it counts only at QEMU's exit), so it understates the "
           "windows' rate where the boot idled.", "",
           "| guest | vCPUs | method | work per host s (× none) | spread | sampling rate (per vCPU) | "
           "guest ms per host s |",
           "|---|---:|---|---:|---:|---:|---:|"]
    names = {"none": "no profiler", "floor": "bare 0x03/`c` at 100 Hz (bench/rtt)",
             "gdbsample 100": "**gdbsample** 100 Hz", "gdbsample 1000": "**gdbsample** 1000 Hz",
             "plugin insn": "plugin: clock check per instruction, 100 Hz (qperf's method)",
             "plugin tb": "plugin: clock check per block, 100 Hz",
             "plugin count": f"plugin: a sample every {EVERY:,} instructions"}
    for (arch, smp), res in results.items():
        for m in METHODS:
            r = res[m]
            rate = f"{r['rate']:.0f} Hz" if r["rate"] is not None else "–"
            if m == "floor":
                rate = "100 Hz"
            ratio = f"{r['ratio']:.3f}" if m != "none" else f"1 ({r['rounds_per_s']:.0f} rounds/s)"
            spread = f"{r['lo']:.3f}–{r['hi']:.3f}" if m != "none" else "–"
            out.append(f"| {arch} | {smp} | {names[m]} | {ratio} | {spread} | {rate} | {r['guest_ms_per_s']:.0f} |")
    out += ["", "Reproduce: `make build/bench/qperf_peer.so && /usr/bin/python3 bench/throughput_bench.py "
            "--out docs/benchmarks.md` (QEMU 10.0 for x86_64 and aarch64 is fetched under build/qemu10 "
            "on first use; the plugin's qemu-plugin.h comes from QEMU 10.0's upstream source, "
            "bench/plugin_header.py).", e]
    return "\n".join(out) + "\n"


def main():
    ap = common.parser(__doc__.splitlines()[0], "gdbsample", "rtt", "out", out_default=False)
    ap.add_argument("--plugin", default=os.path.join(ROOT, "build", "bench", "qperf_peer.so"))
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=float, default=3.0)
    ap.add_argument("--arch", action="append", choices=sorted(ARCHES), help="default: both")
    ap.add_argument("--smp", action="append", type=int, help="default: 1 and 2")
    a = ap.parse_args()
    common.require("throughput_bench", a.gdbsample, a.rtt, a.plugin,
                   *(ARCHES[x][0] for x in (a.arch or ARCHES)))
    load = [common.loadavg()]
    results = {}
    with tempfile.TemporaryDirectory(prefix="throughput-") as tmp:
        for arch in a.arch or sorted(ARCHES, reverse=True):
            for smp in a.smp or (1, 2):
                results[(arch, smp)] = bench(a, arch, smp, tmp)
    load.append(common.loadavg())
    version = qemu_versions.reported_version(qemu_versions.command(QEMU))
    text = render(a, results, load, version)
    if a.out:
        common.benchdoc.replace_section(a.out, "throughput-bench", text, first=True)
        log("wrote", a.out)
    sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
