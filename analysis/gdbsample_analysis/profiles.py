# SPDX-License-Identifier: MIT
"""profiles.py: any profile `compare` takes -- an in-guest `profile` report, a `gdbsample -f report`,
a folded file or a capture -- reduced to the same keys: leaf function and whole chain by symbol."""
import re

from . import common, demangle, filters, inputs
from .capture import FLAG_IRQOFF
from .common import Failure
from .symbols import is_return

# Numbers are ASCII digits, at most 18 of them: counts and sums stay far from overflowing.
HEADER = re.compile(r"^profiled ([0-9]{1,18}) ms$")
COUNTS = re.compile(r"^([0-9]{1,18}) samples on ([0-9]{1,18}) cpus, ([0-9]{1,18}) dropped, source (.+)$")
LEAF = re.compile(r"^([0-9]{1,18}(?:\.[0-9])?)% ([0-9]{1,18}) (\S.*)$")   # a demangled name has spaces
CALLER = re.compile(r"^ {8}<- (\S.*)$")
LINE_SUFFIX = re.compile(r" \([^()]*:[0-9]+\)$")   # ' (file.c:42)' after a frame
# the in-guest profile's samples by the CPU that took them (one line per CPU, after the counts)
CPU = re.compile(r"^cpu ([0-9]{1,4}): ([0-9]{1,18}) samples$")
NOTE = re.compile(r"^\(([0-9]{1,18}) (?:more chains not shown|samples left out: .*)\)$")
# gdbsample's lines before the first chain: how it attached, the kernel, and (capture version 3)
# one `task P% COUNT NAME pid P tgid T, user U%` line per task
INFO = re.compile(r"^(?:attached|kernel|task) .+$")


def function_of(frame):
    """'split_a+0x20..0x3e' -> 'split_a'; '0xffff...' stays; ' (file:line)' is dropped. A
    demangled name may hold '+' and ' (' itself (`operator+(int)`, `std::function<void (int)>`):
    only the last '+0x' and a final ' (file:line)' are the report's."""
    m = LINE_SUFFIX.search(frame)
    if m:
        frame = frame[:m.start()]
    if frame.startswith("0x"):
        return frame
    at = frame.rfind("+0x")
    return frame[:at] if at > 0 else frame


class Profile:
    """Samples folded to leaf functions and chains; what could not be attributed is `unshown`."""

    def __init__(self, name):
        self.name = name            # for messages: the file
        self.source = "?"           # "tick 100 Hz", "gdbstub 200 Hz", "capture", "folded"
        self.total = 0              # samples (idle left out)
        self.leaf = {}              # leaf function -> samples
        self.chains = {}            # (leaf, caller, caller, ...) by function -> samples
        self.irqoff = {}            # leaf function -> samples taken with interrupts off (captures)
        self.unshown = 0            # samples in chains a report did not print
        self.windows = 0            # reports summed (a text input may hold several)
        self.ms = 0                 # profiled time, summed over reports
        self.damaged = False        # a capture read only up to a damaged chunk
        self.by_cpu = None          # vCPU -> samples, when the input says (reports: `cpu N:` lines)
        self.per_cpu = None         # vCPU -> its own Profile, when the input holds each sample's vCPU

    def add(self, chain, count, irqoff=0, cpu=None):
        if cpu is not None:         # also into that vCPU's own profile
            self.by_cpu[cpu] = self.by_cpu.get(cpu, 0) + count
            sub = self.per_cpu.get(cpu)
            if sub is None:
                sub = self.per_cpu[cpu] = Profile("%s vCPU %d" % (self.name, cpu))
            sub.add(chain, count, irqoff)
        self.total += count
        self.leaf[chain[0]] = self.leaf.get(chain[0], 0) + count
        self.chains[chain] = self.chains.get(chain, 0) + count
        if irqoff:
            self.irqoff[chain[0]] = self.irqoff.get(chain[0], 0) + irqoff


def parse_reports(text, name):
    """One or more `profile` / `gdbsample -f report` reports (serial noise around them is fine)."""
    prof = Profile(name)
    lines = [ln.rstrip("\r") for ln in text.split("\n")]   # lines end at \n only, as folded.py's
    i, sources, by_cpu = 0, set(), {}
    while i < len(lines):
        h = HEADER.match(lines[i].strip())
        if not h:
            i += 1
            continue
        c = COUNTS.match(lines[i + 1].strip()) if i + 1 < len(lines) else None
        if not c:
            raise Failure("%s:%d: 'profiled' line not followed by 'N samples on C cpus, ...'" % (name, i + 2))
        prof.windows += 1
        prof.ms += int(h.group(1))
        total, shown = int(c.group(1)), 0
        sources.add(c.group(4))
        i += 2
        chain, cpus = None, {}
        while i < len(lines):
            line = lines[i].rstrip()
            lm, cm, um = LEAF.match(line), CALLER.match(line), CPU.match(line)
            if um and chain is None:
                cpus[int(um.group(1))] = cpus.get(int(um.group(1)), 0) + int(um.group(2))
            elif lm:
                if chain:
                    prof.add(tuple(chain[1:]), chain[0])
                chain = [int(lm.group(2)), function_of(lm.group(3))]
                shown += int(lm.group(2))
            elif cm and chain:
                chain.append(function_of(cm.group(1)))
            elif NOTE.match(line) or line.startswith("no samples") or (chain is None and INFO.match(line)):
                pass
            else:
                break
            i += 1
        if chain:
            prof.add(tuple(chain[1:]), chain[0])
        if shown > total:
            raise Failure("%s: a report's chains add up to %d samples, more than its %d" % (name, shown, total))
        prof.unshown += total - shown
        prof.total += total - shown
        if cpus and sum(cpus.values()) != total:
            raise Failure("%s: a report's cpu lines add up to %d samples, not its %d" % (name, sum(cpus.values()), total))
        if by_cpu is not None and cpus:     # every report must say, or the sum would be wrong
            for c, n in cpus.items():
                by_cpu[c] = by_cpu.get(c, 0) + n
        else:
            by_cpu = None
    if not prof.windows:
        raise Failure("%s: no report found (expected a 'profiled N ms' line)" % name)
    prof.source = ", ".join(sorted(sources))
    prof.by_cpu = by_cpu
    return prof


def from_folded(stacks, name):
    prof = Profile(name)
    prof.source = "folded"
    rows = []
    for stack, count in stacks.items():
        frames = [f for f in stack.split(";") if f]
        cpu = None
        if frames and re.fullmatch(r"cpu[0-9]{1,4}", frames[0]):
            cpu, frames = int(frames[0][3:]), frames[1:]
        if frames:
            rows.append((tuple(function_of(f) for f in reversed(frames)), count, cpu))
    if rows and all(cpu is not None for _, _, cpu in rows):   # grouped by CPU (fold --group-by-cpu)
        prof.by_cpu, prof.per_cpu = {}, {}
    for chain, count, cpu in rows:
        prof.add(chain, count, cpu=cpu if prof.per_cpu is not None else None)
    return prof


def from_capture(path, syms, args):
    """A capture, named with syms rebased by its KASLR offset (--kaslr-offset wins); the filters
    (--pid and --comm too) pick its samples."""
    cap = common.open_capture(path)
    flt = filters.Filter(args)
    flt.check(cap)
    syms = common.symbols_for(syms, cap, getattr(args, "kaslr_offset", None))
    prof = Profile(cap.name)
    prof.source = "gdbstub %d Hz" % cap.rate_hz
    if flt.pids is not None:
        prof.source += ", pid %s" % args.pid.strip()
    if flt.comm is not None:
        prof.source += ", comm %r" % args.comm
    if flt.phase is not None:
        prof.source += ", phase %s%s" % (flt.phase, "" if flt.phase_n is None else " #%d" % flt.phase_n)
    raw = {}
    for s in flt.apply(cap.samples()):
        k = (s.frames, s.exact, bool(s.flags & FLAG_IRQOFF), s.cpu)
        raw[k] = raw.get(k, 0) + 1
    prof.by_cpu, prof.per_cpu = {}, {}
    for (frames, exact, off, cpu), n in raw.items():
        chain = tuple(syms.frame_name(a, is_return(i, exact)) for i, a in enumerate(frames))
        prof.add(chain, n, n if off else 0, cpu)
    prof.damaged = common.loss_status(cap) != common.EXIT_OK
    return prof


def load(path, syms, args):
    """A profile from any supported file, detected by content."""
    if common.is_capture(path):
        if syms is None:
            raise Failure("%s is a capture: give -e ELF to name its frames" % path)
        return from_capture(path, syms, args)
    try:
        with inputs.open_input(path, text=True, errors="replace") as f:
            text = f.read()
    except OSError as e:
        raise Failure("%s: %s" % (inputs.name(path), e.strerror or e)) from None
    if re.search(r"^\s*profiled [0-9]+ ms\s*$", text, re.M):
        return readable(parse_reports(text, inputs.name(path)))
    return readable(from_folded(common.load_folded(path), inputs.name(path)))


def readable(prof):
    """prof with its mangled function names (C++, Rust) demangled, as gdbsample and a capture's
    symbols print them: the in-guest `profile` names functions as the kernel's own table has them
    (`_ZNK4prof11SymbolTable7ResolveEm`), and a folded file may be raw (--no-demangle, other
    tools) -- so that both sides of a `compare` name a function alike. Unchanged with
    --no-demangle."""
    try:
        table, _ = demangle.demangle_all({f for chain in prof.chains for f in chain})
    except demangle.DemangleError as err:
        raise Failure(str(err)) from None
    if table:
        rename(prof, lambda f: table.get(f, f))
    return prof


def rename(prof, name):
    """Every function of prof (and of its per-vCPU profiles) through name(); merged where two
    names become one."""
    def merged(d, key):
        out = {}
        for k, n in d.items():
            out[key(k)] = out.get(key(k), 0) + n
        return out
    prof.leaf, prof.irqoff = merged(prof.leaf, name), merged(prof.irqoff, name)
    prof.chains = merged(prof.chains, lambda chain: tuple(name(f) for f in chain))
    for sub in (prof.per_cpu or {}).values():
        rename(sub, name)
