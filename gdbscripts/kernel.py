# SPDX-License-Identifier: MIT
"""kernel.py: GDB commands that show the test kernel's tasks, CPUs and profiler state, and unwind its interrupts.

Usage:

  gdb -nx build/kernel.elf -ex 'target remote 127.0.0.1:1234' -x gdbscripts/kernel.py -ex gs-tasks
  gdb -batch -nx build/kernel.elf -ex 'target remote 127.0.0.1:1234' -x gdbscripts/kernel.py \
      -ex gs-tasks -ex gs-cpus -ex gs-prof -ex detach

  gs-tasks   every used slot of tasks[]: pid, cpu, state, kind, ticks, stack high-water mark, name
  gs-cpus    per online CPU: APIC id, ticks, the task running now
  gs-prof    the profiler's active flag; per CPU: buffer allocated, records, taken, dropped,
             PMU armed/running; the PMU decision

Everything is read from kernel memory through GDB while the VM is stopped (connecting stops it;
`detach` resumes it). Loading this file also registers an unwinder for the interrupt entry
trap_common (assembly without CFI), so `bt` inside a handler reaches the interrupted code.
"""
import gdb
from gdb.unwinder import Unwinder

STACK_GUARD_WORDS = 8  # kernel/sched.h: canary words at the low end of every task stack
STACK_FILL = 0x5A      # kernel/sched.h: never-written stack bytes


def value(expr):
    return gdb.parse_and_eval(expr)


def static(file, name):
    """A file-static variable, e.g. static("profiler.c", "pcpu")."""
    return gdb.parse_and_eval(f"'{file}'::{name}")


def cstr(v):
    """A char array or char * as text (arrays need not be NUL-terminated)."""
    if v.type.strip_typedefs().code == gdb.TYPE_CODE_PTR:
        return v.string() if int(v) else "-"
    n = v.type.strip_typedefs().range()[1] + 1
    raw = bytes(int(v[i]) & 0xFF for i in range(n))
    return raw.split(b"\0")[0].decode(errors="replace")


def enum_name(v, prefix):
    """TASK_RUNNING -> running (prefix TASK_)."""
    text = str(v)
    return text[len(prefix):].lower() if text.startswith(prefix) else text


def source_name(kind):
    """A pmu_kind as the profiler's sample source: PMU_NONE is the timer tick."""
    name = enum_name(kind, "PMU_")
    return "tick" if name == "none" else f"pmu {name}"


def stack_used(task):
    """High-water mark in bytes, like task_stack_used(): untouched STACK_FILL bytes from the low end."""
    base, size = int(task["stack"]), int(task["stack_size"])
    if not base or size <= STACK_GUARD_WORDS * 8:
        return None
    low = base + STACK_GUARD_WORDS * 8
    mem = bytes(gdb.selected_inferior().read_memory(low, base + size - low))
    untouched = len(mem) - len(mem.lstrip(bytes([STACK_FILL])))
    return len(mem) - untouched


def task_rows():
    """[dict] for every used slot of tasks[] (state != TASK_FREE)."""
    tasks = value("tasks")
    rows = []
    for i in range(tasks.type.range()[1] + 1):
        t = tasks[i]
        state = enum_name(t["state"], "TASK_")
        if state == "free":
            continue
        used = stack_used(t)
        rows.append({"pid": int(t["pid"]), "cpu": int(t["cpu"]), "state": state,
                     "kind": enum_name(t["kind"], "KIND_"), "ticks": int(t["ticks"]),
                     "stack": f"{used}/{int(t['stack_size'])}" if used is not None else "-",
                     "name": cstr(t["name"])})
    return rows


class Tasks(gdb.Command):
    """gs-tasks: list the kernel's tasks (pid, cpu, state, kind, ticks, stack used/size, name)."""

    def __init__(self):
        super().__init__("gs-tasks", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        gdb.write(f"{'PID':>5} {'CPU':>3} {'STATE':<9} {'KIND':<6} {'TICKS':>10} {'STACK':>12} NAME\n")
        for r in task_rows():
            gdb.write(f"{r['pid']:>5} {r['cpu']:>3} {r['state']:<9} {r['kind']:<6} {r['ticks']:>10} "
                      f"{r['stack']:>12} {r['name']}\n")


class Cpus(gdb.Command):
    """gs-cpus: per CPU found in the MADT: APIC id, online, ticks, pid and name of the current task."""

    def __init__(self):
        super().__init__("gs-cpus", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        cpus = value("cpus")
        gdb.write(f"{'CPU':>3} {'APIC':>4} {'ONLINE':>6} {'TICKS':>10} {'PID':>5} TASK\n")
        for i in range(int(value("ncpu"))):
            c = cpus[i]
            cur = c["current"]
            pid, name = (int(cur["pid"]), cstr(cur["name"])) if int(cur) else ("-", "-")
            gdb.write(f"{i:>3} {int(c['apic_id']):>4} {int(c['online']):>6} {int(c['ticks']):>10} "
                      f"{pid:>5} {name}\n")


class Prof(gdb.Command):
    """gs-prof: profiler active flag, per-CPU buffer/records/taken/dropped and PMU armed/running, PMU decision."""

    def __init__(self):
        super().__init__("gs-prof", gdb.COMMAND_DATA)

    def invoke(self, arg, from_tty):
        pcpu, pmu = static("profiler.c", "pcpu"), value("pmu_cpu")
        gdb.write(f"profiler: active {int(static('profiler.c', 'prof_active'))} "
                  f"running {int(static('profiler.c', 'prof_running'))} "
                  f"source of the last run {source_name(static('profiler.c', 'run_kind'))}\n")
        gdb.write(f"{'CPU':>3} {'BUFFER':>6} {'RECORDS':>8} {'TAKEN':>10} {'DROPPED':>8} {'ARMED':>5} {'RUNNING':>7}\n")
        for i in range(int(value("ncpu"))):
            p, s = pcpu[i], pmu[i]
            gdb.write(f"{i:>3} {'yes' if int(p['buf']) else 'no':>6} {int(p['count']):>8} {int(p['taken']):>10} "
                      f"{int(p['dropped']):>8} {int(s['armed']):>5} {int(s['running']):>7}\n")
        d, ready = value("pmu_decision"), int(static("pmu.c", "decision_ready"))
        gdb.write(f"pmu decision: {'made' if ready else 'not made yet'}\n"
                  f"  kind     {enum_name(d['kind'], 'PMU_')}\n"
                  f"  claimed  {cstr(d['claimed'])}\n"
                  f"  reason   {cstr(d['reason'])}\n"
                  f"  detail   {cstr(d['detail'])}\n"
                  f"  probe    {int(d['probe_ns'])} ns\n"
                  f"  width    {int(d['width'])} bits\n")


TRAPFRAME_REGS = ("rax", "rbx", "rcx", "rdx", "rsi", "rdi", "rbp", "r8", "r9", "r10", "r11", "r12",
                  "r13", "r14", "r15")  # struct trapframe (kernel/arch/x86_64/trap.h), then vector, error, iret frame


class FrameId:
    """The identity GDB gives an unwound frame: its stack address and function start."""

    def __init__(self, sp, pc):
        u64 = gdb.lookup_type("unsigned long")
        self.sp, self.pc = gdb.Value(sp).cast(u64), gdb.Value(pc).cast(u64)  # GDB wants gdb.Value


class TrapFrameUnwinder(Unwinder):
    """Unwinds trap_common (kernel/arch/x86_64/entry.S) from the struct trapframe it built.

    trap_common has no CFI, and GDB's prologue analysis cannot see through it. While trap()
    runs, trap_common's frame has RSP at the two-word pair it pushed before `call trap`, and
    the struct trapframe sits right above the pair; the interrupted code's registers are the
    saved ones, its RIP and RSP those of the CPU's interrupt frame. Only PCs between the
    pair's `mov %rsp,%rbp` and the return from trap() are claimed; elsewhere in the entry
    code the trapframe is incomplete and GDB's own analysis is left to it.
    """

    def __init__(self, start, lo, hi):
        super().__init__("gdbsample-trapframe")
        self.start, self.lo, self.hi = start, lo, hi

    def __call__(self, pending_frame):
        pc = int(pending_frame.read_register("rip")) & 0xFFFFFFFFFFFFFFFF
        if not self.lo <= pc <= self.hi:
            return None
        u64 = pending_frame.read_register("rsp").type
        sp = int(pending_frame.read_register("rsp")) & 0xFFFFFFFFFFFFFFFF
        tf = sp + 16
        words = len(TRAPFRAME_REGS) + 7
        try:
            mem = bytes(gdb.selected_inferior().read_memory(tf, words * 8))
        except gdb.MemoryError:
            return None
        w = [int.from_bytes(mem[i * 8:i * 8 + 8], "little") for i in range(words)]
        info = pending_frame.create_unwind_info(FrameId(sp, self.start))
        for i, reg in enumerate(TRAPFRAME_REGS):
            info.add_saved_register(reg, gdb.Value(w[i]).cast(u64))
        iret = len(TRAPFRAME_REGS) + 2  # past vector and error code
        pc_type = pending_frame.read_register("rip").type
        info.add_saved_register("rip", gdb.Value(w[iret]).cast(pc_type))
        info.add_saved_register("rsp", gdb.Value(w[iret + 3]).cast(u64))
        return info


def install_trap_unwinder():
    """Registers TrapFrameUnwinder once, if the ELF has trap_common with the expected call sequence."""
    if any(u.name == "gdbsample-trapframe" for u in gdb.frame_unwinders):
        return
    try:
        start = int(value("(long)&trap_common")) & 0xFFFFFFFFFFFFFFFF
    except gdb.error:
        return
    insns = gdb.selected_inferior().architecture().disassemble(start, count=64)
    try:
        lo = next(insns[i + 1]["addr"] for i, x in enumerate(insns) if x["asm"].split()[:2] == ["mov", "%rsp,%rbp"])
        hi = next(insns[i + 1]["addr"] for i, x in enumerate(insns) if x["asm"].startswith("call"))
    except StopIteration:
        return
    gdb.unwinder.register_unwinder(None, TrapFrameUnwinder(start, lo, hi), replace=True)


Tasks()
Cpus()
Prof()
install_trap_unwinder()
