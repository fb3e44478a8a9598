# SPDX-License-Identifier: MIT
"""sample.py: a slow sampling profiler inside GDB, using GDB's own DWARF unwinder (the oracle for gdbsample).

Usage (parameters come from environment variables):

  GS_PORT=1234 GS_COUNT=200 GS_RATE=50 gdb -batch -nx build/kernel.elf -x gdbscripts/sample.py > out.folded
  GS_PORT=1234 GS_MODE=stop gdb -batch -nx build/kernel.elf -x gdbscripts/sample.py

  GS_TARGET   what to give `target remote`, e.g. HOST:PORT (default 127.0.0.1:$GS_PORT)
  GS_PORT     gdbstub TCP port on 127.0.0.1 (used when GS_TARGET is not set)
  GS_MODE     sample (default): GS_COUNT stops at GS_RATE Hz, folded stacks on stdout, one summary
              line on stderr, then detach (the VM runs on).
              stop: record every vCPU's stack at one stop, print them, then `disconnect`, which
              leaves the VM paused (another client, e.g. `gdbsample dump`, can read the same state).
  GS_COUNT    stops to take (default 100)
  GS_RATE     stops per second (default 20); paced against absolute deadlines
  GS_IDLE     1: keep samples of halted vCPUs in the folded output (default: counted, left out)
  GS_MAX_FRAMES  frames per stack (default 64)

Folded output: `cpuN;root;...;leaf COUNT` per distinct stack, sorted by stack text, as written by
`gdbsample -f folded`. Stop-mode output, one block per vCPU:

  cpuN[ idle]
    #0  0xffffffff80106480 chain6
    #1  0xffffffff80106502 chain5

Frames are GDB's: frame #0 is the stopped PC, callers are found by GDB's unwinders (DWARF CFI;
for the interrupt entry trap_common, which has none, the trapframe unwinder that kernel.py next
to this file registers), and named by GDB from `pc - 1` for callers. The walk ends at the first
frame GDB cannot name. No frame-pointer walk by hand: this is the independent check of
gdbsample's. A vCPU is idle when QEMU reports it halted. Never sends `kill`; the sample mode
always ends with `detach`, which resumes the VM. Errors exit non-zero with "sample.py: ...".

Also importable from a GDB Python script (see tests/gdbscripts/oracle_gdb.py):
connect(target), record_stacks(max_frames), disconnect().
"""
import importlib.util
import os
import sys
import threading
import time

import gdb

MASK64 = (1 << 64) - 1


class SampleError(Exception):
    """A bad parameter; the message starts with "sample.py:"."""


def quiet():
    """Returns (out, err) files on the real stdout/stderr, then points fd 1 at /dev/null.

    GDB prints every stop ("Thread 1 received signal SIGINT", the frame, the source line)
    to its stdout outside any to_string capture, and `set logging redirect` does not catch
    those in batch mode, so results go to a duplicate of the original descriptors instead.
    """
    out, err = os.fdopen(os.dup(1), "w"), os.fdopen(os.dup(2), "w")
    null = os.open(os.devnull, os.O_WRONLY)
    os.dup2(null, 1)
    os.close(null)
    return out, err


def load_kernel_helpers():
    """Sources kernel.py next to this file: its unwinder takes GDB through interrupt entries."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel.py")
    if os.path.exists(path):  # imported, not `source`d: an error in it must stop us
        spec = importlib.util.spec_from_file_location("gs_kernel", path)
        spec.loader.exec_module(importlib.util.module_from_spec(spec))


def connect(target):
    """Connects to the gdbstub; QEMU pauses the VM when a client connects."""
    gdb.execute("set pagination off")
    gdb.execute("set confirm off")
    gdb.execute(f"target remote {target}", to_string=True)


def disconnect():
    """Drops the connection and leaves the VM paused (QEMU never resumes on a close)."""
    gdb.execute("disconnect", to_string=True)


def detach():
    """Detaches, which resumes the VM."""
    gdb.execute("detach", to_string=True)


def vcpu_halted(thread):
    """True if QEMU reports the vCPU halted (`hlt`: the kernel's idle), from qThreadExtraInfo."""
    return "halted" in (thread.details or "")


def frames_of(max_frames, physical=False):
    """[(pc, name)] of the selected thread, innermost first, until GDB cannot name a frame;
    physical: leave out the frames GDB makes for inlined calls (they have no stack frame)."""
    out = []
    frame = gdb.newest_frame()
    while frame is not None and len(out) < max_frames:
        name = frame.name()
        if name is None:
            break
        if not (physical and frame.type() == gdb.INLINE_FRAME):
            out.append((frame.pc() & MASK64, name))
        try:
            frame = frame.older()
        except gdb.error:  # unwinder gave up (unreadable memory)
            break
    return out


def vcpu_index(thread):
    """QEMU's gdbstub thread id is cpu_index + 1; GDB keeps it as the ptid's lwp. (GDB's own
    thread numbers are per session and need not restart at 1 after a reconnect.)"""
    return thread.ptid[1] - 1


def record_stacks(max_frames=64, physical=False):
    """{cpu: (halted, [(pc, name)])} for every vCPU of the stopped VM (see frames_of)."""
    stacks = {}
    for thread in gdb.selected_inferior().threads():
        thread.switch()
        stacks[vcpu_index(thread)] = (vcpu_halted(thread), frames_of(max_frames, physical))
    return stacks


def format_stacks(stacks):
    """The stop-mode text: a `cpuN` line per vCPU, then one `#i 0xPC name` line per frame."""
    lines = []
    for cpu in sorted(stacks):
        halted, frames = stacks[cpu]
        lines.append(f"cpu{cpu}{' idle' if halted else ''}")
        lines += [f"  #{i:<2} {pc:#018x} {name}" for i, (pc, name) in enumerate(frames)]
    return "\n".join(lines) + "\n"


def fold(samples):
    """Folded lines from {stack text: count}: sorted by stack text, `stack COUNT`."""
    return "".join(f"{stack} {n}\n" for stack, n in sorted(samples.items()))


def percentile(values, q):
    s = sorted(values)
    return s[min(len(s) - 1, int(q * len(s)))] if s else 0.0


class Stopper:
    """Interrupts the running VM at an absolute deadline from a timer thread.

    The main thread sits in a synchronous `continue`, during which GDB's event loop runs
    posted events; the posted `interrupt` sends the 0x03 that stops the VM. `when` records
    the moment the interrupt was issued: the pause of a sample runs from then to the next
    `continue`.
    """

    def __init__(self):
        self.when = 0.0

    def arm(self, deadline):
        delay = max(0.0, deadline - time.monotonic())
        timer = threading.Timer(delay, lambda: gdb.post_event(self.fire))
        timer.daemon = True
        timer.start()

    def fire(self):
        self.when = time.monotonic()
        gdb.execute("interrupt", to_string=True)


def sample(count, rate, max_frames, keep_idle):
    """Takes `count` stops at `rate` Hz; returns ({folded stack: n}, stats dict)."""
    folded, pauses = {}, []
    idle = late = 0
    period = 1.0 / rate
    stopper = Stopper()
    start = time.monotonic()  # the VM has been stopped since we connected: first sample now
    stopper.when = start
    for i in range(count):
        if i:
            deadline = start + i * period
            if time.monotonic() > deadline:
                late += 1
            stopper.arm(deadline)
            gdb.execute("continue", to_string=True)  # returns once the VM has stopped
        for cpu, (halted, frames) in sorted(record_stacks(max_frames).items()):
            if halted:
                idle += 1
                if not keep_idle:
                    continue
            key = ";".join([f"cpu{cpu}"] + [name for _, name in reversed(frames)])
            folded[key] = folded.get(key, 0) + 1
        pauses.append((time.monotonic() - stopper.when) * 1e6)
    elapsed = time.monotonic() - start
    stats = {"stops": count, "elapsed": elapsed, "idle": idle, "late": late,
             "rate": (count - 1) / elapsed if count > 1 and elapsed > 0 else 0.0,
             "pause_mean": sum(pauses) / len(pauses) if pauses else 0.0,
             "pause_p50": percentile(pauses, 0.5)}
    return folded, stats


def summary(s, rate):
    return (f"sample.py: {s['stops']} stops in {s['elapsed']:.2f} s, {s['rate']:.1f}/s achieved "
            f"(asked {rate:g}), pause mean {s['pause_mean']:.0f} us p50 {s['pause_p50']:.0f} us, "
            f"{s['idle']} idle vCPU samples, {s['late']} late deadlines")


def env_int(name, default, lo, hi):
    text = os.environ.get(name, str(default))
    try:
        v = int(text)
    except ValueError:
        v = None
    if v is None or not lo <= v <= hi:
        raise SampleError(f"sample.py: {name}={text!r}: want an integer from {lo} to {hi}")
    return v


def main():
    target = os.environ.get("GS_TARGET")
    if not target:
        if "GS_PORT" not in os.environ:
            raise SampleError("sample.py: set GS_PORT (127.0.0.1:PORT) or GS_TARGET")
        target = f"127.0.0.1:{env_int('GS_PORT', 0, 1, 65535)}"
    mode = os.environ.get("GS_MODE", "sample")
    max_frames = env_int("GS_MAX_FRAMES", 64, 1, 255)
    out, err = quiet()
    load_kernel_helpers()
    if mode == "stop":
        connect(target)
        try:
            out.write(format_stacks(record_stacks(max_frames)))
        finally:
            disconnect()  # the VM stays paused
    elif mode == "sample":
        count = env_int("GS_COUNT", 100, 1, 1000000)
        rate = env_int("GS_RATE", 20, 1, 1000)
        keep_idle = os.environ.get("GS_IDLE", "0") == "1"
        connect(target)
        try:
            folded, stats = sample(count, rate, max_frames, keep_idle)
        finally:
            detach()  # resumes the VM, also when sampling failed
        out.write(fold(folded))
        print(summary(stats, rate), file=err)
    else:
        raise SampleError(f"sample.py: GS_MODE={mode!r}: want sample or stop")
    out.close()
    err.close()


if __name__ == "__main__":
    try:
        main()
    except (SampleError, gdb.error) as e:  # GDB's exit status would be 0 after a failed -x script
        msg = str(e)
        sys.exit(msg if msg.startswith("sample.py:") else f"sample.py: {msg}")
