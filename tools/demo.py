#!/usr/bin/env python3
"""demo.py: the main job (`make demo`): boot the test kernel, run known workloads, profile them.

Boots build/kernel.elf under QEMU TCG with -smp 2, starts `work split 5 3 2` and
`work irqoff 2`, then samples the guest from outside with gdbsample for 2 s and prints
the report next to the known answer. QEMU is stopped by pid on every path.
"""
import argparse
import os
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from guest import Guest, GuestError  # noqa: E402

BOLD, DIM, RESET = ("\033[1m", "\033[2m", "\033[0m") if sys.stdout.isatty() else ("", "", "")


def step(text):
    print(f"{BOLD}==> {text}{RESET}", flush=True)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--kernel", default="build/kernel.elf")
    ap.add_argument("--gdbsample", default="build/gdbsample")
    ap.add_argument("--seconds", type=float, default=2.0)
    args = ap.parse_args()
    for path in (args.kernel, args.gdbsample):
        if not os.path.exists(path):
            sys.exit(f"demo: {path} is missing (run `make`)")
    t0 = time.monotonic()
    step("booting the test kernel under QEMU TCG, -smp 2")
    try:
        with Guest(args.kernel, smp=2) as g:
            print(DIM + g.cmd("cpus").rstrip() + RESET)
            step("starting workloads with a known answer")
            for w in ("split 5 3 2", "irqoff 2"):
                print("  " + g.cmd("work " + w).strip())
            time.sleep(0.2)
            step(f"sampling from outside with gdbsample for {args.seconds:g} s at 200 Hz")
            r = subprocess.run([args.gdbsample, "-p", str(g.gdbport), "-r", "200", "-d", str(args.seconds),
                                "-e", args.kernel, "--chains", "4"], capture_output=True, text=True,
                               timeout=args.seconds + 30)
            print(r.stdout.rstrip())
            print(DIM + r.stderr.rstrip() + RESET)
            if r.returncode != 0:
                sys.exit(f"demo: gdbsample failed with exit status {r.returncode}")
            step("known answer")
            print("  split_a : split_b : split_c = 50 : 30 : 20 of the split task's samples")
            print("  irqoff_spin = 20 % of the irqoff task's time (invisible to a timer-tick profiler)")
            g.cmd("work stop all")
    except GuestError as e:
        sys.exit(f"demo: {e}")
    step(f"done in {time.monotonic() - t0:.1f} s")


if __name__ == "__main__":
    main()
