# SPDX-License-Identifier: MIT
"""perf_script.py: `perf-script` -- a capture or folded stacks as `perf script`'s default text.

The format (perf-script(1): what `perf script` prints for samples recorded with call chains), as
written here, one record a sample, in the capture's order:
  COMM PID/TID [CPU] SECS.USECS: PERIOD EVENT:       header; then one line per frame, leaf first:
  \\t    ffffffff81234567 SYMBOL+0xOFF (DSO)         address as 16 hex digits, right-aligned
  (a blank line ends the record)
  COMM      the task's name as `fold` names it (`;` as \\x3b); `[unknown]` for a sample without a
            task record; in a capture without task attribution, the vCPU (`cpu0`), as `fold
            --group-by-cpu` roots it
  PID/TID   perf's pid is the process, its tid the thread: the task's tgid and pid; 0/0 when no
            task is known (perf would print -1, which common parsers of the format do not take)
  CPU       the vCPU, three digits
  time      the sample's time since the run started, seconds with 6 decimals
  PERIOD    ns between samples at the requested rate (1e9 / rate), as perf's cpu-clock event
            reports its period; EVENT is `cpu-clock`, the software clock event such samples resemble
  frames    named by symbols.py's rule as every other output names them (a caller by its return
            address - 1), with the offset of the address itself, as `report` prints callers;
            `[unknown]` where no symbol covers it. DSO `[kernel.kallsyms]` inside the capture's
            kernel range, `[unknown]` outside it (a user-mode sample: its pc)
Idle samples are left out unless --idle, as everywhere. Folded input: each line is COUNT records
(folded stacks have no time: 0.000000; no vCPU: [000]; period 1), its root frame as COMM and the
others as frames at address 0 in `[unknown]`, so a collapser that puts COMM back as the root
gives the input again.

Collapsing this output (FlameGraph's stackcollapse-perf.pl, speedscope's and other importers)
gives `fold`'s stacks (`fold --group-by-cpu` for a capture without task attribution) except where
no symbol is known: fold names such a frame 0xADDRESS ([user] for a user-mode sample under its
task), perf's tools `[unknown]` or the DSO. A firmware sample (riscv64 M-mode) is one frame
`[firmware]` in `[firmware]`, as fold shows it.
"""
from . import common, filters, output
from .capture import FLAG_FIRMWARE, FLAG_USER
from .fold import FIRMWARE_FRAME, UNKNOWN_TASK, task_frame
from .folded import safe_name
from .symbols import is_return

HELP = "write a capture or folded stacks as perf script's text (for perf's tools and importers)"
EVENT = "cpu-clock"
KERNEL_DSO = "[kernel.kallsyms]"   # perf's name for the kernel image
UNKNOWN = "[unknown]"              # perf's name for an unknown symbol or DSO
MAX_RECORDS = 10 ** 8              # folded input: at most this many records written out
BLOCK = 1 << 16                    # characters buffered before a write


def add_arguments(p):
    p.add_argument("input", metavar="CAPTURE|FOLDED")
    p.add_argument("-e", "--elf", metavar="ELF", help="kernel ELF or System.map/nm map, for a capture "
                   "(without it every frame is [unknown])")
    common.add_offset_argument(p)
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout)")
    filters.add_arguments(p)


def header(comm, pid, tid, cpu, time_ns, period):
    """A record's first line (trailing space included, as perf prints it)."""
    return "%s %7d/%-7d [%03d] %5d.%06d: %10d %s: \n" % (comm, pid, tid, cpu, time_ns // 1000000000,
                                                        time_ns // 1000 % 1000000, period, EVENT)


def frame_line(addr, sym, dso):
    return "\t%16x %s (%s)\n" % (addr, sym, dso)


class Symbols:
    """Frame (address, is return address) -> `SYMBOL+0xOFF` or [unknown], memoised."""

    def __init__(self, syms):
        self.syms = syms
        self.cache = {}

    def text(self, addr, is_ret):
        """(SYMBOL+0xOFF or [unknown], the module's DSO "[name]" or None)."""
        key = (addr, is_ret)
        got = self.cache.get(key)
        if got is None:
            s = self.syms.frame(addr, is_ret) if self.syms else None
            mod = self.syms.module_of(self.syms.frame_addr(addr, is_ret)) if hasattr(self.syms, "module_of") else None
            name = s[0] if s else None
            if name and mod and name.endswith(" [%s]" % mod.name):  # perf: the module is the DSO
                name = name[:-len(mod.name) - 3]
            got = self.cache[key] = ("%s+0x%x" % (name, addr - s[1]) if s else UNKNOWN,
                                     "[%s]" % mod.name if mod else None)
        return got


def capture_records(cap, syms, flt):
    """Yields the text of each record of the capture's samples that flt keeps."""
    names = Symbols(syms)
    tasks = cap.task_os is not None
    period = 1000000000 // cap.rate_hz if cap.rate_hz else 0
    lo, hi = cap.kernel_lo, cap.kernel_hi
    comms = {}
    for s in flt.apply(cap.samples()):
        if tasks:
            t = s.task
            comm = comms.get(t)
            if comm is None:
                comm = comms[t] = task_frame(t, "comm") if t is not None else UNKNOWN_TASK
            pid, tid = (t.tgid, t.pid) if t is not None else (0, 0)
        else:
            comm, pid, tid = "cpu%d" % s.cpu, 0, 0
        lines = [header(comm, pid, tid, s.cpu, s.time_ns, period)]
        frames, exact = s.frames, s.exact
        if s.flags & FLAG_USER:                      # only the user pc was recorded
            lines.append(frame_line(frames[0], UNKNOWN, UNKNOWN))
        elif s.flags & FLAG_FIRMWARE:                # only the firmware's pc: fold's one frame
            lines.append(frame_line(frames[0], FIRMWARE_FRAME, FIRMWARE_FRAME))
        else:
            for i, a in enumerate(frames):
                sym, dso = names.text(a, is_return(i, exact))
                lines.append(frame_line(a, sym, dso or (KERNEL_DSO if lo <= a <= hi else UNKNOWN)))
        lines.append("\n")
        yield "".join(lines)


def folded_records(stacks):
    """Yields the records of folded stacks: each line COUNT times, sorted by stack text."""
    for stack, n in sorted(stacks.items(), key=lambda kv: kv[0].encode("utf-8", "surrogateescape")):
        frames = [safe_name(f) for f in stack.split(";")]   # a folded file may hold \x0c, U+2028...
        text = header(frames[0], 0, 0, 0, 0, 1) + "".join(
            frame_line(0, f, UNKNOWN) for f in reversed(frames[1:])) + "\n"
        for _ in range(n):
            yield text


def write_all(out, records):
    buf, size = [], 0
    for text in records:
        buf.append(text)
        size += len(text)
        if size >= BLOCK:
            out.write("".join(buf))
            buf, size = [], 0
    out.write("".join(buf))


def run(args):
    out = output.Output(args.output, (args.input, args.elf))   # not an input; a bad path fails early
    if not common.is_capture(args.input):
        filters.capture_only(args, args.input)
        stacks = common.load_folded(args.input)
        total = sum(stacks.values())
        if total > MAX_RECORDS:
            raise common.Failure("%s: %d samples: too many to list one by one (at most %d)"
                                 % (args.input, total, MAX_RECORDS))
        write_all(out, folded_records(stacks))
        out.commit()
        return common.EXIT_OK
    flt = filters.Filter(args)
    cap = common.open_capture(args.input)
    flt.check(cap)
    syms = common.load_symbols(args.elf) if args.elf else None
    syms = common.symbols_for(syms, cap, args.kaslr_offset)       # the capture's KASLR offset
    write_all(out, capture_records(cap, syms, flt))               # one streaming pass
    out.commit()
    return common.loss_status(cap)
