"""report.py: `report` -- the text report shared with gdbsample -f report and the in-guest profile.

Format (docs/report-format.md; the C writer is sampler/report.c):
  profiled 2000 ms
  3990 samples on 2 cpus, 0 dropped, source gdbstub 100 Hz
  50.1% 1999 split_a+0x1a..0x3e
          <- run_split+0x2c
Samples fold by their whole chain: the leaf by symbol (keeping the span of offsets seen), the
callers by exact return address (and which of them are interrupted pcs). A caller is named by
symbols.py's rule (a return address by address - 1, an exact frame by itself), its offset is that
of the address itself. Chains print by count, most first; ties by the leaf text, then by the
caller addresses.
"""
from . import common, filters, output
from .symbols import is_return

HELP = "the text report of gdbsample -f report / the in-guest profile"


def add_arguments(p):
    p.add_argument("capture", metavar="CAPTURE")
    p.add_argument("-e", "--elf", metavar="ELF", help="kernel ELF or System.map/nm map (without it, hex)")
    common.add_offset_argument(p)
    p.add_argument("-o", "--output", metavar="OUT", help="write to OUT (default stdout)")
    p.add_argument("--chains", type=common.count_type(1, 1000000), default=8, metavar="N",
                   help="chains to print (default 8)")
    filters.add_arguments(p)


class Chains:
    """Folds samples by chain: key (leaf symbol start or raw pc, known, callers, exact frames)."""

    def __init__(self, syms):
        self.syms = syms     # Symbolizer (rebased for the capture) or None
        self.c = {}          # key -> [count, lo, hi]
        self.total = 0       # samples added

    def add(self, frames, exact=frozenset(), n=1):
        """One sample's frames (pc first) and exact frame indexes (Sample.exact), n times."""
        sym = self.syms.lookup(frames[0]) if self.syms else None
        pc = frames[0]
        key = (sym[1] if sym else pc, sym is not None, frames[1:], exact)
        off = pc - sym[1] if sym else 0
        e = self.c.get(key)
        if e is None:
            self.c[key] = [n, off, off]
        else:
            e[0] += n
            if off < e[1]:
                e[1] = off
            if off > e[2]:
                e[2] = off
        self.total += n

    def leaf_text(self, key, lo, hi):
        leaf, known, _, _ = key
        if not known:
            return "0x%x" % leaf
        name = self.syms.lookup(leaf)[0]
        return "%s+0x%x" % (name, lo) if lo == hi else "%s+0x%x..0x%x" % (name, lo, hi)

    def caller_text(self, addr, is_ret=True):
        """A caller frame: its function (symbols.py's naming rule) + the offset of addr itself."""
        s = self.syms.frame(addr, is_ret) if self.syms else None
        return "%s+0x%x" % (s[0], addr - s[1]) if s else "0x%x" % addr

    def callers_text(self, callers, exact):
        """Texts of a chain's callers (frames 1.. of its samples), innermost first."""
        return [self.caller_text(a, is_return(i, exact)) for i, a in enumerate(callers, 1)]

    def ranked(self):
        """[(count, leaf text, callers, exact)] most first; ties by leaf text (bytes), then
        callers, then exact frames."""
        rows = [(e[0], self.leaf_text(k, e[1], e[2]), k[2], k[3]) for k, e in self.c.items()]
        rows.sort(key=lambda r: (-r[0], r[1].encode("utf-8", "surrogateescape"), r[2], sorted(r[3])))
        return rows


def format_report(chains, shown, duration_ns, ncpus, dropped, rate_hz, idle):
    """The report text."""
    lines = ["profiled %d ms" % (duration_ns // 1000000),
             "%d samples on %d cpus, %d dropped, source gdbstub %d Hz" % (chains.total, ncpus, dropped, rate_hz)]
    if not chains.total:
        lines.append("no samples: all %d were idle (--idle keeps them)" % idle if idle else "no samples")
    rows = chains.ranked()
    for count, leaf, callers, exact in rows[:shown]:
        lines.append("%.1f%% %d %s" % (100.0 * count / chains.total, count, leaf))
        lines.extend("        <- " + t for t in chains.callers_text(callers, exact))
    if len(rows) > shown:
        lines.append("(%d more chains not shown)" % (len(rows) - shown))
    return "\n".join(lines) + "\n"


def run(args):
    flt = filters.Filter(args)
    out = output.Output(args.output, (args.capture, args.elf))  # not an input; a bad path fails early
    cap = common.open_capture(args.capture)
    flt.check(cap)
    syms = common.load_symbols(args.elf) if args.elf else None
    syms = common.symbols_for(syms, cap, args.kaslr_offset)  # the capture's KASLR offset
    chains = Chains(syms)
    for s in flt.apply(cap.samples()):                    # one streaming pass
        chains.add(s.frames, s.exact)
    duration = cap.summary.get("duration_ns", cap.last_time_ns or 0)
    if flt.t_from is not None or flt.t_until is not None:   # the window actually covered
        hi = duration if flt.t_until is None else min(flt.t_until, duration)
        duration = max(0, hi - (flt.t_from or 0))
    dropped = cap.summary.get("dropped", 0)
    out.write(format_report(chains, args.chains, int(duration), cap.ncpus, int(dropped), cap.rate_hz,
                            flt.idle_seen))
    out.commit()
    return common.loss_status(cap)
