"""fold.py: `fold` -- a capture to folded stacks (root first, sorted), filtered, optionally per vCPU.

Samples are first counted by their raw (vCPU, frames, exact frames) key, so memory grows with the
distinct stacks, not the samples; names (and DWARF lines or inlined frames) are then resolved once
per distinct (address, return address or not), by symbols.py's one naming rule, with the KASLR
offset chosen for the capture.
"""
from . import common, filters, output
from .common import EXIT_USAGE, Failure
from .folded import format_folded
from .symbols import is_return

HELP = "fold a capture into folded stacks (root;...;leaf COUNT), sorted"


def add_arguments(p):
    p.add_argument("capture", metavar="CAPTURE")
    p.add_argument("-e", "--elf", metavar="ELF", help="kernel ELF or System.map/nm map (without it, frames are hex)")
    common.add_offset_argument(p)
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout)")
    filters.add_arguments(p)
    p.add_argument("--group-by-cpu", action="store_true", help="a cpuN root frame, as gdbsample -f folded")
    p.add_argument("--split-by-cpu", action="store_true",
                   help="one file per vCPU: OUT with .cpuN before its extension (needs -o)")
    p.add_argument("--lines", action="store_true", help="add (file:line) from DWARF to each frame (needs an ELF)")
    p.add_argument("--inline", action="store_true", help="expand inlined functions from DWARF (needs an ELF)")


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


def count_raw(samples, by_cpu):
    """Samples -> {(cpu or None, frames, exact): count}; memory grows with distinct stacks only."""
    raw = {}
    get = raw.get
    if by_cpu:
        for s in samples:
            k = (s.cpu, s.frames, s.exact)
            raw[k] = get(k, 0) + 1
    else:
        for s in samples:
            k = (None, s.frames, s.exact)
            raw[k] = get(k, 0) + 1
    return raw


def name_stacks(raw, namer, cpu_root):
    """{(cpu, frames, exact): count} -> {folded stack text: count}, root first."""
    out = {}
    for (cpu, frames, exact), count in raw.items():
        parts = ["cpu%d" % cpu] if cpu_root else []
        for i in range(len(frames) - 1, -1, -1):
            parts.extend(namer.frames(frames[i], is_return(i, exact)))
        stack = ";".join(parts)
        out[stack] = out.get(stack, 0) + count
    return out


def fold_capture(cap, syms, flt, group_by_cpu=False, lines=False, inline=False, kaslr_offset=None):
    """A capture -> {stack: count} (cpuN roots when group_by_cpu); reads the capture once. syms
    is rebased for this capture (kaslr_offset: --kaslr-offset, None to choose from the capture)."""
    raw = count_raw(flt.apply(cap.samples()), group_by_cpu)
    syms = common.symbols_for(syms, cap, kaslr_offset)
    return name_stacks(raw, Namer(syms, lines, inline), group_by_cpu)


def run(args):
    if (args.lines or args.inline) and not args.elf:
        raise Failure("--lines and --inline need -e ELF", EXIT_USAGE)
    if args.split_by_cpu and (not args.output or args.output == "-"):
        raise Failure("--split-by-cpu writes one file per vCPU: give -o OUT", EXIT_USAGE)
    if args.split_by_cpu and args.group_by_cpu:
        raise Failure("--split-by-cpu and --group-by-cpu do not go together", EXIT_USAGE)
    inputs = (args.capture, args.elf)
    flt = filters.Filter(args)                                      # --cpu, --from/--until, --idle
    if not args.split_by_cpu:
        out = output.Output(args.output, inputs)                    # not an input; a bad path fails early
    cap = common.open_capture(args.capture)                         # header checked
    flt.check(cap)
    if args.split_by_cpu:                                           # one file per vCPU, none an input
        cpus = sorted(flt.cpus) if flt.cpus is not None else range(cap.ncpus)
        outs = {c: output.Output(output.split_path(args.output, c), inputs) for c in cpus}
    syms = common.load_symbols(args.elf) if args.elf else None     # sorted table, once
    if syms and (args.lines or args.inline) and not syms.is_elf:
        raise Failure("--lines and --inline need an ELF with DWARF, not a symbol map", EXIT_USAGE)
    syms = common.symbols_for(syms, cap, args.kaslr_offset)         # the capture's KASLR offset
    namer = Namer(syms, args.lines, args.inline)
    if not args.split_by_cpu:
        raw = count_raw(flt.apply(cap.samples()), args.group_by_cpu)  # one streaming pass
        out.write(format_folded(name_stacks(raw, namer, args.group_by_cpu)))
        out.commit()                                                # complete: into place
        return common.loss_status(cap)
    raw = count_raw(flt.apply(cap.samples()), True)
    per = {c: {} for c in cpus}
    for (cpu, frames, exact), n in raw.items():
        if cpu in per:
            per[cpu][(None, frames, exact)] = n
        else:  # a sample from a vCPU beyond the header's count: its own file
            per[cpu] = {(None, frames, exact): n}
            outs[cpu] = output.Output(output.split_path(args.output, cpu), inputs)
    for cpu in sorted(per):
        outs[cpu].write(format_folded(name_stacks(per[cpu], namer, False)))
    for cpu in sorted(per):                                         # all made: into place together
        outs[cpu].commit()
    return common.loss_status(cap)
