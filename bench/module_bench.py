#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""module_bench.py: the pause per sample with a hot kernel module against the same kind of work in
core text (issue 21), written into docs/benchmarks.md.

Debian's stock 6.1 guest under TCG, -smp 2, KASLR on, the out-of-tree test module hotmod loaded at
boot: in each round, gdbsample -e vmlinuz -e kallsyms samples (1) `hotmod` -- a read() spinning in
hotmod_spin [hotmod], its chain through three module frames unwound by the module's ORC read from
guest memory -- and (2) `zerodd` -- a read() spinning in clear_user_rep_good in core text, a chain
as deep. Rounds alternate the two, medians of the rounds' p50s; each workload is sampled again
with a map lacking `modules` (no module handling at all: the A/B of what reading modules costs). Target: hot module <= 1.1x core
text (module ORC lookups cached like the core's). Also the start-up cost of reading the modules:
the summary's bytes, stops and longest stop. Every QEMU is stopped by its pid.
"""
import os
import statistics
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import common  # noqa: E402
from linuxguest import LinuxGuest  # noqa: E402
import benchdoc  # noqa: E402
from common import rtt_floor  # noqa: E402

RATE = 100


log = common.logger("module_bench")


def summary(kv):
    """The fields this bench reports, from gdbsample's key value summary. The modules' start-up
    read: modules_read_bytes/modules_read_stops when gdbsample gives them keys (-1 until then:
    sampler/modules.c prints them for people only), modules_stop_max_us."""
    f = {"p50": kv["pause_p50_us"], "p99": kv["pause_p99_us"],
         "whole": kv.get("unwind_stop_end", 0) + kv.get("unwind_stop_user", 0), "orc_frames": kv["frames_orc"],
         "mods": kv.get("modules") or 0, "mod_bytes": kv.get("modules_read_bytes", -1),
         "mod_stops": kv.get("modules_read_stops", -1), "mod_longest": (kv.get("modules_stop_max_us") or 0) / 1000,
         "trips": kv["round_trips"], "stack_bytes": kv["mem_bytes"], "text_bytes": kv.get("text_reads", 0),
         "one_trip": common.one_trip(kv), "samples": kv["samples"]}
    f["trips_per"] = f["trips"] / max(1, f["samples"])        # round trips per sample (both vCPUs)
    f["bytes_per"] = f["stack_bytes"] / max(1, f["samples"])  # stack bytes read per sample
    return f


def bench(a):
    res = {"load_before": open("/proc/loadavg").read().split()[0], "rows": {}}
    lg = LinuxGuest(build=a.linux_build, series="6.1", smp=2, modules=("hotmod",))
    try:
        lg.start()
        ks = lg.kallsyms_path()
        # the A/B: the same map without `modules` (and module lines): no module is read at all
        bare = os.path.join(lg.dir, "nomodules.map")
        with open(ks) as f, open(bare, "w") as out:
            out.writelines(x for x in f if not x.rstrip().endswith((" modules", "]")))
        runs = {"hotmod": [], "zerodd": [], "hotmod, modules not read": [], "zerodd, modules not read": []}
        for rnd in range(a.rounds):
            for name in ("hotmod", "zerodd") if rnd % 2 == 0 else ("zerodd", "hotmod"):  # ABBA: drift cancels
                pids = lg.start_workloads([name])
                try:
                    floor = rtt_floor(a.rtt, lg.gdb_port, a.cycles, RATE)
                    for key, m in ((name, ks), (name + ", modules not read", bare)):
                        kv = common.gdbsample(a.gdbsample, "-p", lg.gdb_port, "-e", lg.vmlinuz, "-e", m,
                                              "-r", RATE, "-d", a.secs, "-f", "folded", "-o", os.devnull)
                        runs[key].append(dict(summary(kv), floor=floor))
                        log(key, runs[key][-1])
                finally:
                    lg.stop_workloads(pids)
        for name, rs in runs.items():
            res["rows"][name] = {k: statistics.median(x[k] for x in rs) for k in rs[0]}
            res["rows"][name]["range"] = (min(x["p50"] for x in rs), max(x["p50"] for x in rs))
        # each round's hotmod against that round's zerodd: the two ran seconds apart on one VM
        res["ratios"] = sorted(h["p50"] / max(1, z["p50"]) for h, z in zip(runs["hotmod"], runs["zerodd"]))
    finally:
        lg.stop()
    res["load_after"] = open("/proc/loadavg").read().split()[0]
    return res


def render(res, a):
    begin, end = benchdoc.markers("module-bench")
    h, z = res["rows"]["hotmod"], res["rows"]["zerodd"]
    lines = [begin, "## A hot kernel module (issue 21, bench/module_bench.py)", "",
             f"`make bench` on this project's 2-core machine (load average {res['load_before']} before, "
             f"{res['load_after']} after). Debian's 6.1 under TCG, -smp 2, KASLR on, hotmod loaded at boot; "
             f"gdbsample -e vmlinuz -e kallsyms -r {RATE} for {a.secs} s per run, {a.rounds} rounds alternating "
             "the two workloads, medians (lowest-highest round p50 in brackets). Regenerate with "
             "`/usr/bin/python3 bench/module_bench.py`.", "",
             "| workload | where the time goes | samples | one round trip | pause p50 (us) | p99 (us) | "
             "bare stop/continue p50 (us) | ORC frames |",
             "|---|---|---:|---:|---:|---:|---:|---:|",
             f"| hotmod | hotmod_spin [hotmod] <- 2 module frames <- read() | {h['samples']:.0f} | "
             f"{100 * h['one_trip']:.1f} % | {h['p50']:.0f} [{h['range'][0]}-{h['range'][1]}] | {h['p99']:.0f} | "
             f"{h['floor']:.0f} | {h['orc_frames']:.0f} |",
             f"| zerodd | clear_user_rep_good <- read_zero <- read() | {z['samples']:.0f} | "
             f"{100 * z['one_trip']:.1f} % | {z['p50']:.0f} [{z['range'][0]}-{z['range'][1]}] | {z['p99']:.0f} | "
             f"{z['floor']:.0f} | {z['orc_frames']:.0f} |"] + [
             f"| {n} | the same, a map without `modules`: no module handling | {r['samples']:.0f} | "
             f"{100 * r['one_trip']:.1f} % | {r['p50']:.0f} [{r['range'][0]}-{r['range'][1]}] | {r['p99']:.0f} | "
             f"{r['floor']:.0f} | {r['orc_frames']:.0f} |"
             for n, r in res["rows"].items() if "not read" in n] + [
             "",
             f"Hot module against core text: **{h['p50'] / max(1, z['p50']):.2f}x** the pause p50 (target <= 1.1x); "
             f"QEMU's bare stop/continue alone (bench/rtt, same guest, same workload, same rounds) is "
             f"{h['floor'] / max(1, z['floor']):.2f}x" + (
                 f", so what gdbsample adds on top of it is {(h['p50'] - h['floor']) / (z['p50'] - z['floor']):.2f}x. "
                 if h['p50'] > h['floor'] and z['p50'] > z['floor'] else
                 " (measured in its own runs; here a floor above the pause says the host's load changed "
                 "faster than the rounds, and no difference is computed). ") +
             "A module frame's ORC entry comes from the module's own table (found by a sorted range map, "
             "then the table's per-pc cache), a core frame's from the kernel's; both stacks are read in the "
             "same one round trip.", "",
             f"Round by round (each hotmod run against the zerodd run beside it, seconds apart): ratios "
             f"{', '.join('%.2f' % x for x in res['ratios'])}, median **{statistics.median(res['ratios']):.2f}x**. "
             f"What gdbsample sends and reads per sample, which the host's load does not change: "
             f"{h['trips_per']:.2f} round trips and {h['bytes_per']:.0f} stack bytes (hotmod) against "
             f"{z['trips_per']:.2f} and {z['bytes_per']:.0f} (zerodd), text bytes read in the whole run "
             f"{h['text_bytes']:.0f} and {z['text_bytes']:.0f}: a module frame costs no extra packet. "
             "What limits the ratio is this host: at the load averages above, QEMU's own stop/continue "
             "varies from round to round by more than any difference between the workloads (the floor "
             "column), and a round's p50 follows it.", "",
             f"Reading the modules at start ({h['mods']:.0f} loaded): " + (
                 f"{h['mod_bytes']:.0f} bytes in {h['mod_stops']:.0f} stop(s), " if h['mod_stops'] >= 0 else "") +
             f"the longest stop {h['mod_longest']:.1f} ms (median of the hotmod runs; "
             "reads yield to the guest every 32 KiB or 8 ms: sampler/slice.c).", end]
    return "\n".join(lines) + "\n"


def main():
    ap = common.parser(__doc__, "gdbsample", "rtt", "linux_build", "out")
    ap.add_argument("--cycles", type=int, default=200)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--secs", type=float, default=4)
    a = ap.parse_args()
    common.require("module_bench", a.gdbsample, a.rtt)
    res = bench(a)
    common.write_section(a.out, "module-bench", render(res, a), log)


if __name__ == "__main__":
    main()
