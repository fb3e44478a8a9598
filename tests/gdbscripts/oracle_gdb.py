# SPDX-License-Identifier: MIT
"""GDB-side driver of the oracle test: GDB and `gdbsample dump` read the stacks of the same stops.

Run as (see test_sample_oracle.py):
  ORACLE_PORT=P ORACLE_STOPS=100 ORACLE_OUT=F ORACLE_GDBSAMPLE=build/gdbsample \
      gdb -batch -nx build/kernel.elf -x tests/gdbscripts/oracle_gdb.py

Each iteration: `target remote` (connecting pauses the VM), record every vCPU's backtrace with
GDB's unwinders (gdbscripts/sample.py's record_stacks), `disconnect` (the VM stays paused), then
`gdbsample dump` reads the same paused state and leaves it paused (another client paused it: the
operator's intent, issue 22), so the driver resumes it with a bare `c` (stubresume.py). A short random run
lets the next stop land somewhere else. A stop at a random time nearly always finds a spinning
workload in its loop, so every ORACLE_TICK_EVERY-th stop (0: none) is instead a breakpoint at
the entry of sched_tick on vCPU ORACLE_TICK_CPU: the stack then crosses the interrupt entry and
starts in a function's prologue. One JSON line per stop goes to ORACLE_OUT:
{"stop": i, "tick": bool, "gdb": {cpu: [names]}, "dump": {cpu: [names]}, "dump_rc": rc,
"dump_err": text}.
"""
import importlib.util
import json
import os
import random
import subprocess
import time

import gdb

HERE = os.path.dirname(os.path.abspath(__file__))
SAMPLE_PY = os.path.join(HERE, "..", "..", "gdbscripts", "sample.py")


def load_sample(path=SAMPLE_PY, name="gs_sample"):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def parse_dump(text):
    """{cpu: [function names]} from `gdbsample dump` output (`cpuN ...`, `  #i 0xPC name+0xOFF`)."""
    stacks, cur = {}, None
    for line in text.splitlines():
        if line.startswith("cpu"):
            cur = int(line.split()[0][3:])
            stacks[cur] = []
        elif line.lstrip().startswith("#") and cur is not None:
            sym = line.split()[2]
            stacks[cur].append(sym.split("+0x")[0])
    return stacks


def stop_in_tick(cpu):
    """Runs the VM to sched_tick's first instruction on vCPU cpu (GDB resumes past other vCPUs' hits)."""
    thread = next(t for t in gdb.selected_inferior().threads() if t.ptid[1] == cpu + 1)
    gdb.execute(f"break *sched_tick thread {thread.num}", to_string=True)
    try:
        gdb.execute("continue", to_string=True)
    finally:
        gdb.execute("delete", to_string=True)  # GDB lifts breakpoints from the target at every stop


def main():
    sample = load_sample()
    stubresume = load_sample(os.path.join(HERE, "stubresume.py"), "stubresume")
    port = os.environ["ORACLE_PORT"]
    stops = int(os.environ.get("ORACLE_STOPS", "100"))
    dump_cmd = [os.environ["ORACLE_GDBSAMPLE"], "dump", "-p", port, "-e", gdb.current_progspace().filename]
    rng = random.Random(int(os.environ.get("ORACLE_SEED", "1")))
    tick_every = int(os.environ.get("ORACLE_TICK_EVERY", "0"))
    tick_cpu = int(os.environ.get("ORACLE_TICK_CPU", "0"))
    out, err = sample.quiet()
    sample.load_kernel_helpers()
    with open(os.environ["ORACLE_OUT"], "w") as log:
        for i in range(stops):
            tick = tick_every > 0 and i % tick_every == tick_every - 1
            sample.connect(f"127.0.0.1:{port}")
            try:
                if tick:
                    stop_in_tick(tick_cpu)
                stacks = sample.record_stacks(physical=True)  # gdbsample walks stack frames, not inlined calls
            finally:
                sample.disconnect()  # the VM stays paused for gdbsample
            r = subprocess.run(dump_cmd, capture_output=True, text=True, timeout=30)
            stubresume.resume(port)  # dump left the VM paused, as it must: GDB paused it
            row = {"stop": i, "tick": tick, "gdb": {c: [n for _, n in fr] for c, (_, fr) in stacks.items()},
                   "dump": parse_dump(r.stdout), "dump_rc": r.returncode, "dump_err": r.stderr[-500:]}
            log.write(json.dumps(row) + "\n")
            log.flush()
            if r.returncode != 0:
                print(f"oracle_gdb: gdbsample dump failed at stop {i}: {r.stderr.strip()}", file=err)
                break
            time.sleep(rng.uniform(0.002, 0.02))  # let the VM run so the next stop differs
    out.close()
    err.close()


main()
