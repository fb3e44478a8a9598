# SPDX-License-Identifier: MIT
"""GDB script for test_fp_walk: stop the VM, walk every vCPU's RBP chain by hand, print it.

Run as: FPWALK_PORT=P gdb -batch -nx kernel.elf -x fpwalk_gdb.py (see test_fp_walk.py).
Each walk prints one line: `WALK cpuN name name ...` from the stopped RIP upwards.
FPWALK_MODE=stops (default): one stop, every vCPU walked, then detach (which resumes).
FPWALK_MODE=tick: break in sched_tick (inside the timer interrupt) FPWALK_COUNT times,
so each walk must step through the interrupt entry's frame into the interrupted code.
"""
import os

import gdb

PORT = os.environ["FPWALK_PORT"]
MODE = os.environ.get("FPWALK_MODE", "stops")
COUNT = int(os.environ.get("FPWALK_COUNT", "5"))
MAX_FRAMES = 32


def symbol(addr):
    out = gdb.execute(f"info symbol {addr:#x}", to_string=True)
    return out.split()[0] if " in section " in out else f"{addr:#x}"


def walk():
    inf = gdb.selected_inferior()
    rip = int(gdb.parse_and_eval("$rip")) & (2**64 - 1)
    rbp = int(gdb.parse_and_eval("$rbp")) & (2**64 - 1)
    names = [symbol(rip)]
    for _ in range(MAX_FRAMES):
        if rbp == 0 or rbp & 7:
            break
        try:
            mem = bytes(inf.read_memory(rbp, 16))
        except gdb.MemoryError:
            break
        nxt, ret = int.from_bytes(mem[:8], "little"), int.from_bytes(mem[8:], "little")
        if ret >> 63 == 0:  # left the kernel (task_entry's zero return address)
            break
        names.append(symbol(ret))
        if nxt <= rbp:
            break
        rbp = nxt
    return names


def walk_all():
    for t in sorted(gdb.selected_inferior().threads(), key=lambda t: t.num):
        t.switch()
        print(f"WALK cpu{t.num - 1} " + " ".join(walk()), flush=True)


gdb.execute("set pagination off")
gdb.execute("set confirm off")
gdb.execute(f"target remote 127.0.0.1:{PORT}")  # connecting stops the VM
if MODE == "tick":
    # Break just after sched_tick's frame is set up (after `mov %rsp,%rbp`): a hand walk
    # from the entry instruction would start from the caller's RBP instead.
    insns = gdb.selected_inferior().architecture().disassemble(
        int(gdb.parse_and_eval("(long)&sched_tick")) & (2**64 - 1), count=4)
    after = next(insns[i + 1]["addr"] for i, x in enumerate(insns) if "%rsp,%rbp" in x["asm"])
    gdb.execute(f"break *{after:#x}")
    for _ in range(COUNT):
        gdb.execute("continue", to_string=True)
        print(f"WALK cpu{gdb.selected_thread().num - 1} " + " ".join(walk()), flush=True)
    gdb.execute("delete")
else:
    walk_all()
gdb.execute("detach")  # resumes the VM
