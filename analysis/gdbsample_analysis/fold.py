# SPDX-License-Identifier: MIT
"""fold.py: `fold` -- a capture to folded stacks (root first, sorted), filtered, optionally per vCPU.

Samples are first counted by their raw (vCPU, task, frames, exact frames) key, so memory grows with
the distinct stacks, not the samples; names (and DWARF lines or inlined frames) are then resolved
once per distinct (address, return address or not), by symbols.py's one naming rule, with the
KASLR offset chosen for the capture.

Root frames, outermost first: the task (--task-format comm, comm-pid or pid, as perf's
stackcollapse names it: `bash`, `bash-1234`, `1234`; `[unknown]` for a sample without a task
record), then `cpuN` (--group-by-cpu or --task-format cpu). Under a task root a user-mode sample
is the one frame `[user]` (its pc, a user address, is in the capture but not shown); without one
it shows as gdbsample -f folded shows it (cpu format: byte for byte the same). A firmware sample
(riscv64 M-mode: OpenSBI) is the one frame `[firmware]` under any root, as gdbsample shows it.
"""
from . import common, filters, output
from .capture import FLAG_FIRMWARE, FLAG_USER
from .common import EXIT_USAGE, Failure
from .folded import format_folded
from .symbols import is_return

TASK_FORMATS = ("comm", "comm-pid", "pid", "cpu", "none")
TASK_ROOTS = ("comm", "comm-pid", "pid")    # the formats that put a task frame at the root
UNKNOWN_TASK = "[unknown]"                  # the task frame of a sample without a task record
USER_FRAME = "[user]"                       # under a task root: a user-mode sample's one frame
FIRMWARE_FRAME = "[firmware]"               # under any root: a firmware (riscv64 M-mode) sample's

HELP = "fold a capture into folded stacks (root;...;leaf COUNT), sorted"


def add_arguments(p):
    p.add_argument("capture", metavar="CAPTURE")
    p.add_argument("-e", "--elf", metavar="ELF", help="kernel ELF or System.map/nm map (without it, frames are hex)")
    common.add_offset_argument(p)
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout)")
    filters.add_arguments(p, off_cpu=True)
    p.add_argument("--group-by-cpu", action="store_true",
                   help="a cpuN root frame (after the task's with --task-format), as gdbsample -f folded "
                        "--task-format cpu")
    add_task_format_argument(p)
    p.add_argument("--split-by-cpu", action="store_true",
                   help="one file per vCPU: OUT with .cpuN before its extension (needs -o)")
    p.add_argument("--lines", action="store_true", help="add (file:line) from DWARF to each frame (needs an ELF)")
    p.add_argument("--inline", action="store_true", help="expand inlined functions from DWARF (needs an ELF)")


def add_task_format_argument(p, formats=TASK_FORMATS):
    p.add_argument("--task-format", choices=formats, metavar="{%s}" % ",".join(formats),
                   help="root frame naming each sample's task: comm (bash), comm-pid (bash-1234), pid "
                        "(1234)%s or none (default: comm for a capture with task attribution%s, else "
                        "none)" % ((", cpu (cpuN, as --group-by-cpu)", " unless --group-by-cpu")
                                   if "cpu" in formats else ("", "")))


def task_format(given, cap, group_by_cpu=False):
    """The task format for one capture: given (--task-format, Failure if it names tasks and cap has
    none), else comm when cap has task attribution (and no --group-by-cpu: a cpuN root alone, as
    gdbsample -f folded), else none."""
    if given is None:
        return "comm" if cap.task_os and not group_by_cpu else "none"
    if given in TASK_ROOTS and not cap.task_os:
        raise filters.no_tasks(cap, "--task-format " + given)
    return given


def shared_task_format(given, paths, group_by_cpu=False):
    """The task format for inputs drawn or compared together (diff, flamegraph --diff): given,
    else comm when every input is a capture with task attribution, else none (so roots match);
    none with --group-by-cpu, as task_format."""
    if given is not None or group_by_cpu:
        return given or "none"
    for path in paths:
        if path is None:
            continue
        if not common.is_capture(path) or not common.open_capture(path).task_os:
            return "none"
    return "comm"


def task_frame(task, fmt):
    """A sample's task as a root frame in format fmt (one of TASK_ROOTS); `;` would split the
    frame, so it prints as \\x3b."""
    if task is None:
        return UNKNOWN_TASK
    if fmt == "pid":
        return "%d" % task.pid
    name = (task.comm or "[unnamed]").replace(";", "\\x3b")
    return name if fmt == "comm" else "%s-%d" % (name, task.pid)


class Namer:
    """Frame addresses -> folded frame names, memoised per (address, return address or not)."""

    def __init__(self, syms, lines=False, inline=False):
        self.syms = syms        # Symbolizer or None (hex frames)
        self.lines = lines      # append " (file:line)"
        self.inline = inline    # expand inlined subroutines
        self.cache = {}

    def frames(self, addr, is_ret):
        """Names for one stack slot, outermost first (several when inlined frames expand);
        is_ret: the slot holds a return address (symbols.is_return)."""
        key = (addr, is_ret)
        got = self.cache.get(key)
        if got is None:
            got = self.cache[key] = self._resolve(addr, is_ret)
        return got

    def _resolve(self, addr, is_ret):
        syms = self.syms
        if syms is None:
            return ("0x%x" % addr,)
        at = syms.frame_addr(addr, is_ret)
        base = syms.frame_name(addr, is_ret)
        if not (self.lines or self.inline):
            return (base,)
        chain = syms.inline_chain(at) if self.inline else []
        names = [base] + [c[0] for c in chain]
        if not self.lines:
            return tuple(names)
        # the innermost frame is at the address's own line; each outer one at its call site
        where = [(c[1], c[2]) for c in chain] + [syms.line(at)]
        out = []
        for name, loc in zip(names, where):
            if loc and loc[0] and loc[1]:
                out.append("%s (%s:%d)" % (name, loc[0], loc[1]))
            else:
                out.append(name)
        return tuple(out)


def mode_frame(flags, by_task):
    """The one frame that stands for a sample's stack, or None: FIRMWARE_FRAME for a firmware
    sample (any root), USER_FRAME for a user-mode one under a task root."""
    if flags & FLAG_FIRMWARE:
        return FIRMWARE_FRAME
    return USER_FRAME if by_task and flags & FLAG_USER else None


def count_raw(samples, by_cpu, by_task=False):
    """Samples -> {(cpu or None, task or None, state, frames, exact): count}; memory grows with
    distinct stacks only. by_task: keyed by task too. state: None for a vCPU's sample, else an
    off-CPU sample's ("blocked", "runnable": v6), which counts its weight and has no vCPU. frames
    is a str (mode_frame) for a sample shown as one named frame: firmware, or user mode under a
    task."""
    raw = {}
    get = raw.get
    for s in samples:
        if s.offcpu is not None:     # record --off-cpu: a task that was not running, its periods
            k = (None, s.task if by_task else None, s.offcpu, s.frames, s.exact)
            raw[k] = get(k, 0) + s.weight
            continue
        label = mode_frame(s.flags, by_task)
        cpu = s.cpu if by_cpu else None
        if label:
            k = (cpu, s.task if by_task else None, None, label, None)
        else:
            k = (cpu, s.task if by_task else None, None, s.frames, s.exact)
        raw[k] = get(k, 0) + 1
    return raw


def name_stacks(raw, namer, cpu_root, task_fmt="none"):
    """{(cpu, task, state, frames, exact): count} -> {folded stack text: count}, root first: the
    task (task_fmt in TASK_ROOTS), then cpuN (cpu_root) -- or, for an off-CPU stack, its state
    (off-cpu/blocked, off-cpu/runnable) as gdbsample record --off-cpu folds it."""
    out = {}
    by_task = task_fmt in TASK_ROOTS
    for (cpu, task, state, frames, exact), count in raw.items():
        parts = [task_frame(task, task_fmt)] if by_task else []
        if state is not None:
            parts.append("off-cpu/" + state)
        elif cpu_root:
            parts.append("cpu%d" % cpu)
        if isinstance(frames, str):     # mode_frame's one frame
            parts.append(frames)
        else:
            for i in range(len(frames) - 1, -1, -1):
                parts.extend(namer.frames(frames[i], is_return(i, exact)))
        stack = ";".join(parts)
        out[stack] = out.get(stack, 0) + count
    return out


def fold_capture(cap, syms, flt, group_by_cpu=False, lines=False, inline=False, kaslr_offset=None,
                 task_fmt=None):
    """A capture -> {stack: count} (task roots by task_fmt, --task-format or None for the
    capture's default; cpuN roots when group_by_cpu); reads the capture once. syms is rebased for
    this capture (kaslr_offset: --kaslr-offset, None to choose from the capture)."""
    task_fmt = task_format(task_fmt, cap, group_by_cpu)
    cpu_root = group_by_cpu or task_fmt == "cpu"
    raw = count_raw(flt.apply(cap.samples()), cpu_root, task_fmt in TASK_ROOTS)
    syms = common.symbols_for(syms, cap, kaslr_offset)
    return name_stacks(raw, Namer(syms, lines, inline), cpu_root, task_fmt)


def run(args):
    if (args.lines or args.inline) and not args.elf:
        raise Failure("--lines and --inline need -e ELF", EXIT_USAGE)
    if args.split_by_cpu and (not args.output or args.output == "-"):
        raise Failure("--split-by-cpu writes one file per vCPU: give -o OUT", EXIT_USAGE)
    if args.split_by_cpu and args.group_by_cpu:
        raise Failure("--split-by-cpu and --group-by-cpu do not go together", EXIT_USAGE)
    if args.split_by_cpu and args.task_format == "cpu":
        raise Failure("--split-by-cpu and --task-format cpu do not go together", EXIT_USAGE)
    inputs = (args.capture, args.elf)
    flt = filters.Filter(args)                                      # --cpu, --from/--until, --idle
    if not args.split_by_cpu:
        out = output.Output(args.output, inputs)                    # not an input; a bad path fails early
    cap = common.open_capture(args.capture)                         # header checked
    flt.check(cap)
    fmt = task_format(args.task_format, cap, args.group_by_cpu)     # task roots: comm if it has tasks
    by_task, cpu_root = fmt in TASK_ROOTS, args.group_by_cpu or fmt == "cpu"
    if args.split_by_cpu:                                           # one file per vCPU, none an input
        cpus = sorted(flt.cpus) if flt.cpus is not None else range(cap.ncpus)
        outs = {c: output.Output(output.split_path(args.output, c), inputs) for c in cpus}
    syms = common.load_symbols(args.elf) if args.elf else None     # sorted table, once
    if syms and (args.lines or args.inline) and not syms.is_elf:
        raise Failure("--lines and --inline need an ELF with DWARF, not a symbol map", EXIT_USAGE)
    syms = common.symbols_for(syms, cap, args.kaslr_offset)         # the capture's KASLR offset
    namer = Namer(syms, args.lines, args.inline)
    if not args.split_by_cpu:
        raw = count_raw(flt.apply(cap.samples()), cpu_root, by_task)  # one streaming pass
        out.write(format_folded(name_stacks(raw, namer, cpu_root, fmt)))
        out.commit()                                                # complete: into place
        return common.loss_status(cap)
    if flt.states != {"on-cpu"}:
        raise Failure("--split-by-cpu: off-CPU samples ran on no vCPU; leave --state out", EXIT_USAGE)
    raw = count_raw(flt.apply(cap.samples()), True, by_task)
    per = {c: {} for c in cpus}
    for (cpu, task, state, frames, exact), n in raw.items():
        if cpu in per:
            per[cpu][(None, task, state, frames, exact)] = n
        else:  # a sample from a vCPU beyond the header's count: its own file
            per[cpu] = {(None, task, state, frames, exact): n}
            outs[cpu] = output.Output(output.split_path(args.output, cpu), inputs)
    for cpu in sorted(per):
        outs[cpu].write(format_folded(name_stacks(per[cpu], namer, False, fmt)))
    for cpu in sorted(per):                                         # all made: into place together
        outs[cpu].commit()
    return common.loss_status(cap)
