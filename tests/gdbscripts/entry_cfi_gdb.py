# SPDX-License-Identifier: MIT
"""GDB-side driver of test_entry_cfi.py: steps through the timer interrupt's entry code, recording bt.

Run as (see test_entry_cfi.py):
  CFI_PORT=P CFI_CPU=1 CFI_OUT=F CFI_ROUNDS=3 gdb -batch -nx build/kernel-nofp.elf -x entry_cfi_gdb.py
  CFI_PORT=P CFI_MODE=idle CFI_STOPS=4 CFI_OUT=F gdb -batch -nx build/kernel-nofp.elf -x entry_cfi_gdb.py

Only GDB's own unwinders run (no gdbscripts/kernel.py): what gets through the entry code is the
CFI in entry.S. Each round: a breakpoint at the first instruction of the timer's vector stub
on vCPU CFI_CPU; `stepi` through the stub and trap_common up to and including `call trap`; a
breakpoint at sched_tick (trap's callee, so trap_common is a caller frame named by its return
address); a breakpoint at that return address; `stepi` through the pops up to and including
`iretq`. Everything between the breakpoints runs at full speed. At the stub's first
instruction nothing has been touched yet, so the interrupted context is known without any
unwinding: the general registers are the live ones, RIP, RFLAGS and RSP are read from the iret
frame at RSP. A tick whose interrupted RIP is not in CFI_FUNC (the chain's spinning function)
is let go and the next one taken instead.

CFI_MODE=idle instead records every vCPU's stack at a few stops, to see where they end (see
idle() below): {"stop": i, "cpu": c, "frames": [...], "stop_reason": ..., "bt": text,
"end_slot": address of the zero return address that ended the walk or null,
"stack": [low, high) of the running task's stack}.

Otherwise one JSON line per stopped instruction goes to CFI_OUT:
  {"round": r, "phase": "entry"|"callee"|"exit", "pc": int, "where": "trap_common+0x12",
   "frames": [[pc, name or null, frame type]], "stop_reason": the last frame's unwind stop reason,
   "truth": {reg: int}, "unwound": {reg: int} (registers of the interrupted frame),
   "bt": GDB's `bt` text}
"""
import json
import os

import gdb

MASK64 = (1 << 64) - 1
VECTOR = os.environ.get("CFI_VECTOR", "vector240")  # T_TIMER = 0xf0 (kernel/arch/x86_64/trap.h)
GPRS = ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11", "r12", "r13",
        "r14", "r15")
MAX_FRAMES = 16
MAX_SKIPS = 20  # ticks that interrupted something other than CFI_FUNC before giving up
FRAME_TYPES = {getattr(gdb, n): n for n in ("NORMAL_FRAME", "SIGTRAMP_FRAME", "INLINE_FRAME",
                                            "TAILCALL_FRAME", "DUMMY_FRAME", "ARCH_FRAME",
                                            "SENTINEL_FRAME")}


def u64(v):
    return int(v) & MASK64


def reg(name, frame=None):
    return u64((frame or gdb.newest_frame()).read_register(name))


def read_u64(addr):
    return int.from_bytes(bytes(gdb.selected_inferior().read_memory(addr, 8)), "little")


def address(expr):
    return u64(gdb.parse_and_eval(f"(unsigned long)&{expr}"))


def where(pc):
    """name+0xOFF of pc, from the minimal symbols (stubs have no debug info of their own)."""
    out = gdb.execute(f"info symbol {pc:#x}", to_string=True)
    if " in section " not in out:
        return f"{pc:#x}"
    sym = out.split(" in section ")[0].split()
    return sym[0] if len(sym) == 1 else f"{sym[0]}+{int(sym[2]):#x}"


def truth_at_stub_entry():
    """The interrupted context at a vector stub's first instruction, read without unwinding."""
    t = {r: reg(r) for r in GPRS}
    sp = reg("rsp")
    t["rip"], t["eflags"], t["rsp"] = read_u64(sp), read_u64(sp + 16), read_u64(sp + 24)
    return t


def frames():
    """[(pc, name, type)] innermost first, and the stop reason of the last frame GDB made."""
    out, frame = [], gdb.newest_frame()
    while frame is not None and len(out) < MAX_FRAMES:
        out.append([u64(frame.pc()), frame.name(), FRAME_TYPES.get(frame.type(), str(frame.type()))])
        last = frame
        try:
            frame = frame.older()
        except gdb.error as e:
            return out, f"error: {e}"
    return out, gdb.frame_stop_reason_string(last.unwind_stop_reason())


def end_slot():
    """Where the walk's zero return address was read (the CFA of the last named frame, minus
    8), or None if the walk did not end at a zero return address."""
    frame = gdb.newest_frame()
    while frame is not None and frame.name() is not None:
        frame = frame.older()
    if frame is None or u64(frame.pc()) != 0:
        return None
    return u64(frame.read_register("rsp")) - 8  # the caller's RSP is the callee's CFA


def task_stack(cpu):
    """[low, high) of the stack of the task vCPU cpu runs (kernel/sched.h: struct task)."""
    t = gdb.parse_and_eval(f"cpus[{cpu}].current")
    lo = u64(t["stack"])
    return [lo, lo + int(t["stack_size"])]


def unwound():
    """Registers of the interrupted code (the frame older than the first signal frame) as
    GDB's unwinders compute them; {} if there is no such frame."""
    frame = gdb.newest_frame()
    while frame is not None and frame.type() != gdb.SIGTRAMP_FRAME:
        frame = frame.older()
    older = frame.older() if frame is not None else None
    if older is None:
        return {}
    return {r: reg(r, older) for r in GPRS + ("rip", "rsp", "eflags")}


def record(log, rnd, phase, truth):
    pc = reg("rip")
    fr, stop = frames()
    row = {"round": rnd, "phase": phase, "pc": pc, "where": where(pc), "frames": fr, "stop_reason": stop,
           "truth": truth, "unwound": unwound(), "bt": gdb.execute("bt", to_string=True)}
    log.write(json.dumps(row) + "\n")
    log.flush()


def run_to(addr, thread):
    """Continues the VM (every vCPU) until vCPU `thread` reaches addr; other vCPUs' hits of the
    thread-specific breakpoint are resumed by GDB itself."""
    gdb.execute(f"break *{addr:#x} thread {thread.num}", to_string=True)
    try:
        gdb.execute("continue", to_string=True)
    finally:
        gdb.execute("delete", to_string=True)
    if gdb.selected_thread().num != thread.num:
        raise gdb.GdbError(f"entry_cfi_gdb: stopped in thread {gdb.selected_thread().num}, not {thread.num}")


def step_until(log, rnd, phase, truth, last):
    """Records this instruction and every next one up to and including the one at `last`. Under
    TCG a `stepi` now and then returns without executing anything (the vCPU was kicked out of
    its single step): an instruction is recorded once, when the pc first reaches it."""
    pc = None
    for _ in range(128):
        if reg("rip") != pc:
            pc = reg("rip")
            record(log, rnd, phase, truth)
            if pc == last:
                return
        gdb.execute("stepi", to_string=True)
    raise gdb.GdbError(f"entry_cfi_gdb: {last:#x} not reached in 128 steps ({phase})")


def idle(log, stops):
    """CFI_MODE=idle: every vCPU's stack at the connect stop, then at `stops` - 1 timer ticks
    (any vCPU's sched_tick), so that idle stacks are seen bare and under an interrupt."""
    tick = address("sched_tick")
    for i in range(stops):
        if i:
            gdb.execute(f"break *{tick:#x}", to_string=True)
            try:
                gdb.execute("continue", to_string=True)
            finally:
                gdb.execute("delete", to_string=True)
        for thread in gdb.selected_inferior().threads():
            thread.switch()
            fr, stop = frames()
            cpu = thread.ptid[1] - 1
            log.write(json.dumps({"stop": i, "cpu": cpu, "frames": fr, "stop_reason": stop,
                                  "end_slot": end_slot(), "stack": task_stack(cpu),
                                  "bt": gdb.execute("bt", to_string=True)}) + "\n")


def main():
    port = os.environ["CFI_PORT"]
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    gdb.execute(f"target remote 127.0.0.1:{port}", to_string=True)
    if os.environ.get("CFI_MODE") == "idle":
        with open(os.environ["CFI_OUT"], "w") as log:
            idle(log, int(os.environ.get("CFI_STOPS", "4")))
        gdb.execute("detach", to_string=True)
        return
    cpu = int(os.environ["CFI_CPU"])
    rounds, func = int(os.environ.get("CFI_ROUNDS", "3")), os.environ.get("CFI_FUNC", "chain6")
    # stepi moves only the stepped vCPU (QEMU's vCont honours per-thread actions); `continue`
    # still runs them all, so trap() never waits on a lock another stopped vCPU holds. (Only
    # settable once connected: the `exec` target refuses it.)
    gdb.execute("set scheduler-locking step")
    thread = next(t for t in gdb.selected_inferior().threads() if t.ptid[1] == cpu + 1)
    stub = address(VECTOR)
    start = address("trap_common")
    insns = gdb.selected_inferior().architecture().disassemble(start, count=80)
    call = next(i for i in insns if i["asm"].startswith("call"))
    iret = next(i["addr"] for i in insns if i["asm"].startswith("iretq"))
    ret = call["addr"] + call["length"]
    tick = address("sched_tick")  # trap() -> sched_tick() on every timer interrupt
    skips = 0
    with open(os.environ["CFI_OUT"], "w") as log:
        rnd = 0
        while rnd < rounds:
            run_to(stub, thread)
            truth = truth_at_stub_entry()
            if where(truth["rip"]).split("+")[0] != func:
                skips += 1
                if skips > MAX_SKIPS:
                    raise gdb.GdbError(f"entry_cfi_gdb: {skips} ticks missed {func}")
                continue
            step_until(log, rnd, "entry", truth, call["addr"])
            sp_at_call = reg("rsp")
            run_to(tick, thread)  # inside trap: trap_common is now a caller, seen at `ret`
            record(log, rnd, "callee", truth)
            run_to(ret, thread)
            if reg("rsp") != sp_at_call:  # the same interrupt returning, not another one
                raise gdb.GdbError("entry_cfi_gdb: trap returned on another stack")
            step_until(log, rnd, "exit", truth, iret)
            rnd += 1
    gdb.execute("detach", to_string=True)  # resumes the VM


main()
