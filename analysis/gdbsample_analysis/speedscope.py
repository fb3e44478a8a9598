# SPDX-License-Identifier: MIT
"""speedscope.py: `speedscope` -- a capture as speedscope's JSON file format, one profile per vCPU.

The format (https://www.speedscope.app/file-format-schema.json), as written here:
  {"$schema": ".../file-format-schema.json", "exporter": "gdbsample-analyze speedscope",
   "name": CAPTURE's file name, "activeProfileIndex": 0,
   "shared": {"frames": [{"name": N, "file": F, "line": L}, ...]},   file/line where DWARF knows
   "profiles": [{"type": "sampled", "name": "cpuN", "unit": "nanoseconds",
                 "startValue": T0, "endValue": T1,
                 "samples": [[frame index, ... root first], ...], "weights": [ns, ...]}, ...]}
speedscope lays a sampled profile out by weights alone, so each weight is the real time from the
sample to the next one of the same vCPU (the last one gets the vCPU's median interval), and every
profile starts at the first kept sample of any vCPU (an empty stack fills a later start): the
time-ordered views of all vCPUs line up on the capture's clock (ns since the run started).
Idle samples are kept as empty stacks unless --idle: their time stays on the time axis, and
speedscope counts it as idle rather than as any function. A frame is a function (its file and
line are those of its first instruction), so per-function totals match `fold`. With task
attribution (version 3) each stack starts with its task's frame, named as `fold` names it
(--task-format, default comm: the task is the root of every flame, per vCPU), and a user-mode
sample is that frame and `[user]` (with --task-format none, its pc, as without tasks); a firmware
sample (riscv64 M-mode) is `[firmware]` under any root, as `fold` shows it.
Off-CPU stacks (a version 6 capture of record --off-cpu, chosen with --state) ran on no vCPU: they
go, with the on-CPU samples of the same task, to one more profile per task, named `TASK (wall)`
(TASK as --task-format comm-pid names it), in time order -- the task's wall clock: each on-CPU
sample weighs one sample period, each off-CPU stack its periods, under `off-cpu/STATE` as `fold`
shows it. Tasks are ordered by pid, then comm.

Memory: one streaming pass; distinct stacks are interned once and per sample only a time and a
stack id are kept, in compact arrays (12 bytes a sample, no objects per sample), since the output
lists every sample anyway. Writing one vCPU's weights takes a transient list of its intervals.
"""
import array
import itertools
import json
import os

from . import common, filters, inputs, output
from .capture import FLAG_FIRMWARE, FLAG_IDLE, FLAG_USER
from .fold import TASK_ROOTS, Namer, add_task_format_argument, mode_frame, task_format, task_frame
from .symbols import is_return

HELP = "convert a capture to speedscope's JSON format (one time-ordered profile per vCPU)"
SCHEMA = "https://www.speedscope.app/file-format-schema.json"
EXPORTER = "gdbsample-analyze speedscope"


def add_arguments(p):
    p.add_argument("capture", metavar="CAPTURE")
    p.add_argument("-e", "--elf", metavar="ELF",
                   help="kernel ELF (names, and file/line from DWARF) or System.map/nm map")
    common.add_offset_argument(p)
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout)")
    filters.add_arguments(p, off_cpu=True)
    add_task_format_argument(p, TASK_ROOTS + ("none",))


class Timeline:
    """One vCPU's kept samples, in time order."""

    def __init__(self):
        self.times = array.array("Q")    # sample times, ns since the run started
        self.stacks = array.array("I")   # stack ids (index into Collector.stack_keys)


class Collector:
    """Streams samples into per-vCPU timelines of interned stacks."""

    def __init__(self, keep_idle, task_fmt="none", walls=False, period_ns=0):
        self.keep_idle = keep_idle       # idle samples keep their frames (else an empty stack)
        self.walls = walls               # off-CPU stacks asked for: a wall profile per task too
        self.period_ns = period_ns or 1  # what an on-CPU sample and an off-CPU period stand for
        self.tasks = {}                  # Task -> [(time, stack id, weight ns)] (walls only)
        self.task_fmt = task_fmt if task_fmt in TASK_ROOTS else None  # the task root's format
        self.roots = {}                  # Task or None -> its root frame name
        self.labelled = FLAG_FIRMWARE | (FLAG_USER if self.task_fmt else 0)  # shown as one frame
        self.stack_ids = {}              # (root, frames, exact) -> stack id; EMPTY is the empty stack
        self.stack_keys = []             # stack id -> (root or None, frames or mode_frame's str, exact)
        self.cpus = {}                   # vCPU -> Timeline

    EMPTY = (None, (), (), None)

    def intern(self, key):
        sid = self.stack_ids.get(key)
        if sid is None:
            sid = self.stack_ids[key] = len(self.stack_keys)
            self.stack_keys.append(key)
        return sid

    def add(self, s):
        if s.offcpu is not None:         # a task that was not running: its wall profile only
            root = task_frame(s.task, "comm-pid")
            sid = self.intern((root, s.frames, s.exact, "off-cpu/" + s.offcpu))
            self.tasks.setdefault(s.task, []).append((s.time_ns, sid, s.weight * self.period_ns))
            return
        if self.walls and s.task is not None and not s.flags & FLAG_IDLE:
            root = task_frame(s.task, "comm-pid")
            frames = mode_frame(s.flags, True) if s.flags & (FLAG_FIRMWARE | FLAG_USER) else s.frames
            sid = self.intern((root, frames, None if isinstance(frames, str) else s.exact, None))
            self.tasks.setdefault(s.task, []).append((s.time_ns, sid, self.period_ns))
        if not self.keep_idle and s.flags & FLAG_IDLE:
            key = self.EMPTY
        else:
            root = None
            if self.task_fmt:
                root = self.roots.get(s.task)
                if root is None:
                    root = self.roots[s.task] = task_frame(s.task, self.task_fmt)
            if s.flags & self.labelled:
                key = (root, mode_frame(s.flags, self.task_fmt is not None), None, None)
            else:
                key = (root, s.frames, s.exact, None)
        sid = self.intern(key)
        tl = self.cpus.get(s.cpu)
        if tl is None:
            tl = self.cpus[s.cpu] = Timeline()
        tl.times.append(s.time_ns)
        tl.stacks.append(sid)


class FrameTable:
    """Frame names and locations -> speedscope's shared frame list, one entry per function."""

    def __init__(self, syms):
        self.syms = syms                 # Symbolizer or None
        self.namer = Namer(syms)         # the names `fold` gives
        self.keys = {}                   # (name, file, line) -> frame index, before sorting
        self.where = {}                  # (addr, is_ret) -> (name, file, line)

    def frame(self, addr, is_ret):
        """One frame's key; is_ret: it is a return address (symbols.is_return)."""
        got = self.where.get((addr, is_ret))
        if got is None:
            name = self.namer.frames(addr, is_ret)[0]
            file = line = None
            sym = self.syms.frame(addr, is_ret) if self.syms else None
            if sym is not None and self.syms.is_elf:
                loc = self.syms.line(sym[1])
                if loc and loc[0] and loc[1]:
                    file, line = loc
            got = self.where[(addr, is_ret)] = (name, file, line)
            self.keys.setdefault(got, None)
        return got

    def named(self, name):
        """A frame with a name only (a task, fold's mode_frame)."""
        got = (name, None, None)
        self.keys.setdefault(got, None)
        return got

    def stack(self, key):
        """A stack key (root frame name or None, frames pc first or mode_frame's one name,
        exact frame indexes, off-CPU state frame or None) -> frame keys, root first."""
        root, frames, exact, state = key
        out = [self.named(root)] if root is not None else []
        if state is not None:
            out.append(self.named(state))
        if isinstance(frames, str):
            return out + [self.named(frames)]
        return out + [self.frame(frames[i], is_return(i, exact)) for i in range(len(frames) - 1, -1, -1)]

    def finish(self):
        """Sorts the frames (name, then file and line) -> {key: index}, [frame objects]."""
        order = sorted(self.keys, key=lambda k: (k[0], k[1] or "", k[2] or 0))
        index = {k: i for i, k in enumerate(order)}
        objs = []
        for name, file, line in order:
            o = {"name": name}
            if file:
                o["file"] = file
                o["line"] = line
            objs.append(o)
        return index, objs


def weights(times):
    """Sample times -> array of the time to the next sample each; the last gets the median
    interval (1 ns when there is only one sample). A repeated time (which gdbsample never
    writes) weighs 1 ns, as speedscope drops zero weights."""
    n = len(times)
    out = array.array("q", (times[i + 1] - times[i] for i in range(n - 1)))
    last = sorted(out)[(n - 2) // 2] if n > 1 else 1
    out.append(last)
    for i in range(n):
        if out[i] <= 0:
            out[i] = 1
    return out


def write_items(out, texts, block=4096):
    """Writes an iterable of JSON texts comma-separated, a block at a time."""
    buf, sep = [], ""
    for t in texts:
        buf.append(t)
        if len(buf) == block:
            out.write(sep + ",".join(buf))
            buf, sep = [], ","
    if buf:
        out.write(sep + ",".join(buf))


def write_file(out, name, collector, syms):
    """Writes the speedscope JSON for the collected timelines to out (anything with write)."""
    table = FrameTable(syms)
    stack_keys = [table.stack(k) for k in collector.stack_keys]
    index, frames = table.finish()
    stack_text = ["[" + ",".join(str(index[k]) for k in keys) + "]" for keys in stack_keys]
    cpus = sorted(collector.cpus)
    t0 = min((collector.cpus[c].times[0] for c in cpus), default=0)
    dump = json.dumps
    out.write('{"$schema":%s,"exporter":%s,"name":%s,"activeProfileIndex":0,\n'
              % (dump(SCHEMA), dump(EXPORTER), dump(name)))
    out.write('"shared":{"frames":[\n%s]},\n"profiles":['
              % ",\n".join(dump(f, sort_keys=True, separators=(",", ":")) for f in frames))
    for n, cpu in enumerate(cpus):
        tl = collector.cpus[cpu]
        w = weights(tl.times)
        # a vCPU first seen later starts with an empty stack as long as the gap: clocks align
        lead = [tl.times[0] - t0] if tl.times[0] > t0 else []
        out.write('%s\n{"type":"sampled","name":%s,"unit":"nanoseconds","startValue":%d,'
                  '"endValue":%d,\n"samples":[' % ("," if n else "", dump("cpu%d" % cpu), t0,
                                                  t0 + sum(lead) + sum(w)))
        write_items(out, itertools.chain(["[]"] * len(lead), (stack_text[i] for i in tl.stacks)))
        out.write('],\n"weights":[')
        write_items(out, map(str, itertools.chain(lead, w)))
        out.write("]}")
    walls = sorted(collector.tasks.items(), key=lambda kv: (kv[0].pid, kv[0].tgid, kv[0].comm, kv[0].ptr))
    for k, (task, line) in enumerate(walls):
        line = sorted(line, key=lambda e: e[0])       # stable: a stop's samples keep their order
        start = line[0][0]
        out.write('%s\n{"type":"sampled","name":%s,"unit":"nanoseconds","startValue":%d,'
                  '"endValue":%d,\n"samples":[' % ("," if cpus or k else "", dump(task_frame(task, "comm-pid") + " (wall)"),
                                                  start, start + sum(e[2] for e in line)))
        write_items(out, (stack_text[e[1]] for e in line))
        out.write('],\n"weights":[')
        write_items(out, (str(e[2]) for e in line))
        out.write("]}")
    out.write("]}\n")


def run(args):
    flt = filters.Filter(args)                                   # --cpu, --from/--until, --idle
    out = output.Output(args.output, (args.capture, args.elf))   # not an input; a bad path fails early
    cap = common.open_capture(args.capture)                      # header checked
    flt.check(cap)
    fmt = task_format(args.task_format, cap)                     # comm if the capture has tasks
    syms = common.load_symbols(args.elf) if args.elf else None  # sorted table, once
    syms = common.symbols_for(syms, cap, args.kaslr_offset)      # the capture's KASLR offset
    walls = bool(flt.states - {"on-cpu"})                       # --state asks for off-CPU stacks
    col = Collector(flt.idle, fmt, walls, 1000000000 // cap.rate_hz if cap.rate_hz else 0)
    flt.idle = True   # idle samples reach the collector, which empties their stacks unless --idle
    for s in flt.apply(cap.samples()):                           # one streaming pass
        col.add(s)
    write_file(out, os.path.basename(inputs.name(args.capture)), col, syms)
    out.commit()
    return common.loss_status(cap)
