#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""demo.py: the main job (`make demo`): where is the guest kernel spending its time, seen from
inside (the kernel's own `profile`) and from outside (gdbsample over QEMU's gdbstub)?

Boots build/kernel.elf under QEMU TCG with -smp 2, starts `work split 5 3 2` and
`work irqoff 2`, profiles the same 2 s window from both sides, prints the two reports side by
side and compare's verdict, and writes demo/ (folded stacks, speedscope JSON, SVG flame graph).
--arch aarch64 does the same on QEMU virt (build/aarch64/kernel.elf, demo/aarch64/), where the
kernel's own profile samples from the PMU, which sees the interrupts-off code the tick cannot;
--arch riscv64 on QEMU virt in S-mode (build/riscv64/kernel.elf, demo/riscv64/), where it samples
on the SBI PMU's cycle-counter overflow -- an interrupt, masked with interrupts off like the tick.
"""
import argparse
import os
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "tools"))
import crosscheck  # noqa: E402
from guest import GuestError  # noqa: E402

ANALYZE = os.path.join(ROOT, "analysis", "gdbsample-analyze")
TTY = sys.stdout.isatty()
BOLD, DIM, GREEN, RED, RESET = ("\033[1m", "\033[2m", "\033[32m", "\033[31m", "\033[0m") if TTY else ("",) * 5
COL = 54  # width of each side of the side-by-side view


def step(text):
    print(f"\n{BOLD}==> {text}{RESET}", flush=True)


def analyze(*args):
    r = subprocess.run([sys.executable, ANALYZE, *args], capture_output=True, text=True, timeout=120)
    if r.returncode not in (0, 1):
        raise GuestError(f"gdbsample-analyze {args[0]} failed: {r.stderr.strip()}")
    return r.stdout


def trim(report, chains):
    """The header and the first `chains` chains of a report."""
    out, seen = [], 0
    for line in report.splitlines():
        if line[:1].isdigit() and "%" in line.split()[0]:
            seen += 1
            if seen > chains:
                break
        if line.strip():
            out.append(line)
    return out


def side_by_side(left_title, left, right_title, right):
    print(f"{BOLD}{left_title:<{COL}}  {right_title}{RESET}")
    print(f"{DIM}{'-' * COL}  {'-' * COL}{RESET}")
    for i in range(max(len(left), len(right))):
        a = left[i] if i < len(left) else ""
        b = right[i] if i < len(right) else ""
        print(f"{a[:COL]:<{COL}}  {b[:COL]}")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--arch", choices=crosscheck.ARCH_DEFAULTS, default="x86_64")
    ap.add_argument("--kernel", help="default build/kernel.elf, or build/ARCH/kernel.elf")
    ap.add_argument("--gdbsample", default=os.path.join(ROOT, "build", "gdbsample"))
    ap.add_argument("--out", help="default demo/, or demo/ARCH/")
    ap.add_argument("--chains", type=int, default=5, help="chains shown per side")
    a = ap.parse_args()
    a64, rv = a.arch == "aarch64", a.arch == "riscv64"
    a.kernel = a.kernel or os.path.join(ROOT, "build", *crosscheck.ARCH_DEFAULTS[a.arch][0])
    a.out = a.out or os.path.join(ROOT, "demo", *((a.arch,) if a.arch != "x86_64" else ()))
    config = crosscheck.ARCH_DEFAULTS[a.arch][1]
    source = ("the PMU's cycle counter" if a64 else "the SBI PMU's cycle-counter overflow" if rv
              else "the timer tick")
    for path in (a.kernel, a.gdbsample):
        if not os.path.exists(path):
            sys.exit(f"demo: {path} is missing (run `make`)")
    t0 = time.monotonic()
    print(f"{BOLD}gdbsample demo{RESET} ({a.arch}): one guest kernel, profiled from inside and from outside.")
    machine = "QEMU virt, GICv3" if a64 else "QEMU virt, S-mode under OpenSBI" if rv else "TCG"
    step(f"boot the test kernel under QEMU ({machine}, -smp 2); start `work split 5 3 2` and `work irqoff 2`")
    print("   split runs split_a/b/c for 5:3:2 of its time (truth: 50/30/20 %); irqoff spends 2 ms in")
    if a64:
        print("   every 10 with interrupts off in irqoff_spin (20 %): the tick cannot look there, but the")
        print("   PMU's overflow is a pseudo-NMI above the kernel's interrupt mask, so this profile sees it.")
    elif rv:
        print("   every 10 with interrupts off in irqoff_spin (20 %): S-mode has no NMI, so the PMU's overflow")
        print("   interrupt cannot look there either; gdbsample, stopping the VM from outside, can.")
    else:
        print("   every 10 with interrupts off in irqoff_spin, where the timer tick can never look (20 %).")
    step(f"profile the same 2 s window: in-guest `profile 2000` ({source}) and gdbsample at 200 Hz")
    try:
        res = crosscheck.run(a.kernel, a.gdbsample, a.out, smp=2, works=("split 5 3 2", "irqoff 2"),
                             windows=1, ms=2000, rate=200, config=config)
        window = ["--from", str(res.window[0]), "--until", str(res.window[1])]
        external = analyze("report", res.capture, "-e", a.kernel, "--chains", str(a.chains), *window)
        print()
        side_by_side(f"in-guest: profile 2000 ({'pmu' if a64 or rv else 'tick'})", trim(res.reports[0], a.chains),
                     "external: gdbsample (gdbstub)", trim(external, a.chains))
        step("compare: the same story?")
        print(res.compare_text.split("\ntop ")[0].rstrip())
        verdict = res.compare_text.strip().splitlines()[-1]
        for line in res.compare_text.splitlines():
            if line.startswith(("total variation", "tick-blind", "differs on", "inconclusive:")):
                print(line)
        note = crosscheck.inconclusive_note(res)
        colour = GREEN if res.status == 0 else DIM if note else RED
        print(f"{BOLD}{colour}{verdict}{RESET}")
        if note:
            print(note)

        step(f"write {os.path.relpath(a.out)}/")
        os.makedirs(a.out, exist_ok=True)
        paths = {
            "folded": os.path.join(a.out, "external.folded"),
            "speedscope": os.path.join(a.out, "external.speedscope.json"),
            "svg": os.path.join(a.out, "flamegraph.svg"),
            "inguest": os.path.join(a.out, "inguest.txt"),
            "capture": os.path.join(a.out, "external.cap"),
            "compare": os.path.join(a.out, "compare.txt"),
        }
        analyze("fold", res.capture, "-e", a.kernel, "--group-by-cpu", "-o", paths["folded"], *window)
        analyze("speedscope", res.capture, "-e", a.kernel, "-o", paths["speedscope"], *window)
        analyze("flamegraph", paths["folded"], "-o", paths["svg"], "--title", f"gdbsample demo ({a.arch}): split 5 3 2 + irqoff 2")
    except GuestError as e:
        sys.exit(f"demo: {e}")
    rel = {k: os.path.relpath(v) for k, v in paths.items()}
    print(f"  {rel['svg']:<34} flame graph: open it in a web browser (hover, click to zoom)")
    print(f"  {rel['speedscope']:<34} drop it on https://www.speedscope.app (time-ordered view per vCPU)")
    print(f"  {rel['folded']:<34} folded stacks for flamegraph.pl or `gdbsample-analyze flamegraph`")
    print(f"  {rel['capture']:<34} the raw capture: `analysis/gdbsample-analyze info {rel['capture']}`")
    print(f"  {rel['inguest']:<34} the in-guest report; {rel['compare']}: compare's full output")
    step(f"done in {time.monotonic() - t0:.0f} s — {verdict}")
    return 0 if note else res.status


if __name__ == "__main__":
    sys.exit(main())
