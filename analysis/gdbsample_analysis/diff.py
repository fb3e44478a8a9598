# SPDX-License-Identifier: MIT
"""diff.py: `diff BASE NEW` -- differential folded stacks (`stack base new`) and the biggest movers.

Each input is a capture (folded here with -e ELF and the usual filters) or a folded file
(detected by the capture magic). By default BASE's counts are scaled to NEW's total (rounded),
as FlameGraph's difffolded.pl -n does, so the two columns compare shares; --no-normalize keeps
raw counts. The movers table ranks functions by the change of their self share (samples where
they are the leaf), in percentage points, with their inclusive share beside it. Captures' tasks
are root frames as `fold` makes them (--task-format; by default comm only when both inputs are
captures with task attribution and no --group-by-cpu, so that the roots of the two sides match).
"""
from . import common, filters, output
from .common import EXIT_OK
from .fold import add_task_format_argument, fold_capture, shared_task_format
from .folded import sorted_items

HELP = "differential folded stacks of two captures or folded files, and the biggest movers"


def add_arguments(p):
    p.add_argument("base", metavar="BASE", help="capture or folded file")
    p.add_argument("new", metavar="NEW", help="capture or folded file")
    p.add_argument("-e", "--elf", metavar="ELF", help="kernel ELF or map for captures")
    p.add_argument("--base-elf", metavar="ELF", help="a different ELF for BASE (default -e)")
    common.add_offset_argument(p, base=True)
    p.add_argument("-o", "--output", metavar="OUT", help="write the differential folded stacks to OUT")
    p.add_argument("--no-normalize", dest="normalize", action="store_false",
                   help="keep raw counts (default: BASE scaled to NEW's total)")
    p.add_argument("--top", type=common.count_type(1, 1000000), default=10, metavar="N",
                   help="movers in the table (default 10)")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--table", action="store_true",
                   help="print only the movers table, on stdout (default: table on stderr)")
    g.add_argument("--no-table", action="store_true", help="no movers table")
    p.add_argument("--group-by-cpu", action="store_true", help="a cpuN root frame for captures")
    add_task_format_argument(p)
    filters.add_arguments(p)


def load(path, elf, args, statuses, kaslr_offset=None, task_fmt=None):
    """A capture or folded file -> {stack: count}; kaslr_offset: --kaslr-offset for a capture
    (None: chosen from the capture); task_fmt: its task roots (fold.task_format)."""
    if not common.is_capture(path):
        filters.phase_only(args, path)
        return common.load_folded(path)
    cap = common.open_capture(path)
    flt = filters.Filter(args)
    flt.check(cap)
    syms = common.load_symbols(elf) if elf else None
    stacks = fold_capture(cap, syms, flt, args.group_by_cpu, kaslr_offset=kaslr_offset, task_fmt=task_fmt)
    statuses.append(common.loss_status(cap))
    return stacks


def differential(base, new, normalize=True):
    """-> [(stack, base count, new count)] sorted by stack; base scaled to new's total if asked."""
    tb, tn = sum(base.values()), sum(new.values())
    scale = tn / tb if normalize and tb and tn else 1.0
    rows = {}
    for s, c in base.items():
        rows[s] = [int(round(c * scale)), 0]
    for s, c in new.items():
        rows.setdefault(s, [0, 0])[1] = c
    return [(s, r[0], r[1]) for s, r in sorted_items(rows)]


def shares(stacks):
    """{stack: count} -> ({function: self %}, {function: inclusive %}, total)."""
    total = sum(stacks.values())
    own, incl = {}, {}
    for s, c in stacks.items():
        frames = s.split(";")
        own[frames[-1]] = own.get(frames[-1], 0) + c
        for f in set(frames):
            incl[f] = incl.get(f, 0) + c
    pct = (lambda d: {k: 100.0 * v / total for k, v in d.items()}) if total else (lambda d: {k: 0.0 for k in d})
    return pct(own), pct(incl), total


def movers(base, new, top):
    """The movers table text: functions by |change of self share|, most first, then by name."""
    bs, bi, bt = shares(base)
    ns, ni, nt = shares(new)
    names = set(bs) | set(ns) | set(bi) | set(ni)
    rows = []
    for f in names:
        d = ns.get(f, 0.0) - bs.get(f, 0.0)
        di = ni.get(f, 0.0) - bi.get(f, 0.0)
        rows.append((-abs(round(d, 1)), -abs(round(di, 1)), f, d, bs.get(f, 0.0), ns.get(f, 0.0), di))
    rows.sort()
    lines = ["biggest movers: self share of samples (base %d, new %d), change in percentage points" % (bt, nt),
             "%9s %7s %7s %12s  %s" % ("self pp", "base", "new", "inclusive pp", "function")]
    for _, _, f, d, b, n, di in rows[:top]:
        lines.append("%+9.1f %6.1f%% %6.1f%% %+12.1f  %s" % (d, b, n, di, f))
    return "\n".join(lines) + "\n"


def run(args):
    statuses = []
    out = output.Output(None if args.table else args.output,          # not an input
                        (args.base, args.new, args.elf, args.base_elf))
    fmt = shared_task_format(args.task_format, (args.base, args.new), args.group_by_cpu)  # comm if both have tasks
    base = load(args.base, args.base_elf or args.elf, args, statuses, common.base_offset(args), fmt)  # capture or folded
    new = load(args.new, args.elf, args, statuses, args.kaslr_offset, fmt)
    table = movers(base, new, args.top)
    if args.table:
        out.write(table)
    else:
        out.write("".join("%s %d %d\n" % r for r in differential(base, new, args.normalize)))
        if not args.no_table:
            common.sys.stderr.write(table)
    out.commit()
    return max(statuses, default=EXIT_OK)
