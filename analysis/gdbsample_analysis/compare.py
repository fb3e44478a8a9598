# SPDX-License-Identifier: MIT
"""compare.py: `compare INGUEST EXTERNAL` -- do the kernel's own profile and the external one tell
the same story? Per function: both shares, the difference with its 95 % interval, a verdict;
then the total variation distance, a chi-square test, and one overall verdict (the exit code).

Verdicts per function (leaf samples):
  agree         the 95 % interval of the difference reaches within --tolerance pp of zero
  differs       it does not: the profiles disagree on this function beyond sampling noise
  tick-blind    the external profile saw it mostly with interrupts off (capture flag), and the
                in-guest profile, sampled by the timer tick, shows at most a tenth of it: the tick
                cannot interrupt such code, so this is expected, not disagreement. With another
                in-guest source (aarch64's PMU, a pseudo-NMI that does sample interrupts-off code)
                the row is `blind`: what it cannot see is its own handler's code, which runs with
                interrupts off. Functions under 0.5 % that qualify are pooled into their own row,
                "(other, interrupts off)", rather than into (other).
  tick-shifted  the in-guest profile shows significantly more of it than the external one, it
                runs beside a tick-blind function (same caller), and the surplus is no more than
                what the tick missed there: the ticks held while interrupts were off were taken
                here instead (where interrupts came back on)
`compare --pid N INGUEST CAPTURE` compares the in-guest `profile MS N` (a report of task N only)
with the capture's samples of task N (filters.py: pid or tgid N; the test kernel's tgid is its
pid). --pid and --comm need EXTERNAL to be a capture (with task attribution), --phase one with phases.
Overall `consistent` needs no `differs` row and a total variation distance <= --max-tvd plus what
sampling noise alone reaches at the 95th percentile for these sample sizes (a few hundred in-guest
samples give ~0.08 by chance), both computed on the functions that are neither tick-blind nor
tick-shifted, renormalised.
Like with like (vcpus.py): when both inputs say which vCPU took each sample, the external shares
are each vCPU's external profile weighted by that vCPU's share of the in-guest samples, so vCPU
threads that got unequal host time cannot make two true profiles differ. When that weighted
comparison is not consistent but the vCPUs' progress was measurably unequal, the verdict is
`inconclusive` (exit 4) if the pair is consistent with the external samples counted as only as
many independent ones as the slowest vCPU's progress allows; docs/compare.md has the statistics.
"""
import math

from . import common, filters, output, profiles, stats, vcpus
from .common import EXIT_DAMAGED, EXIT_FAIL, EXIT_USAGE, Failure

HELP = "compare an in-guest `profile` report with an external profile (capture, folded or report)"
EXIT_CONSISTENT, EXIT_DIFFERS = 0, 1
EXIT_INCONCLUSIVE = 4   # not consistent, but within what unequal vCPU progress blurs (3 is a damaged capture)
HOST_CONTENDED = 0.10   # --host-wait from which a vCPU thread counts as contended (tools/crosscheck.py's CONTENDED)
HOST_CONTENDED_PP = 12  # ...and the most, per function, that contention is credited with: the largest
                        # bias measured beside two CPU hogs was 8.2 pp (docs/compare.md)
OTHER = "(other)"
OTHER_OFF = "(other, interrupts off)"
MIN_SHARE = 0.005       # functions under 0.5 % on both sides are pooled into (other)
BLIND_IRQOFF = 0.5      # tick-blind: at least half of its external samples had interrupts off
BLIND_RATIO = 0.1       # ... and the in-guest share is at most a tenth of the external one


def add_arguments(p):
    p.add_argument("inguest", metavar="INGUEST", help="text of one or more in-guest `profile` reports")
    p.add_argument("external", metavar="EXTERNAL", help="a capture (with -e), a folded file or a gdbsample report")
    p.add_argument("-e", "--elf", metavar="ELF", help="kernel ELF or System.map, to name a capture's frames")
    common.add_offset_argument(p)
    filters.add_arguments(p)
    p.add_argument("--tolerance", type=common.real_type(0, 100), default=2.0, metavar="PP",
                   help="differences within this many percentage points count as agreement (default 2)")
    p.add_argument("--max-tvd", type=common.real_type(0, 1), default=0.05, metavar="D",
                   help="largest total variation distance still `consistent`, beyond what sampling noise "
                        "explains (default 0.05)")
    p.add_argument("--host-wait", type=common.real_type(0, 1), default=None, metavar="F",
                   help="the share of the window QEMU's busiest vCPU thread waited for a host core, measured "
                        "on the host (tools/crosscheck.py passes it from schedstat); from %.2f on, a difference "
                        "of at most %d pp per function is `inconclusive` (guest time and wall time then diverge "
                        "within a vCPU too), not `differs`" % (HOST_CONTENDED, HOST_CONTENDED_PP))
    p.add_argument("--chains", type=common.count_type(0, 1000000), default=8, metavar="N",
                   help="chains in the chain table (default 8, 0 for none)")


class Row:
    def __init__(self, name, k_in, k_ext, off=0):
        self.name, self.k_in, self.k_ext, self.off = name, k_in, k_ext, off  # off: external irq-off samples
        self.verdict, self.note = "", ""
        self.d = self.lo = self.hi = 0.0


def blind_candidate(k_in, a_total, k_ext, b_total, off):
    """Seen outside mostly with interrupts off, and at most a tenth as much inside."""
    return k_ext and off >= BLIND_IRQOFF * k_ext and k_in / a_total <= BLIND_RATIO * k_ext / b_total


def categories(a, b):
    """Functions shown by either side (>= MIN_SHARE somewhere); the rest pool into (other), except
    those that would be blind, pooled into (other, interrupts off)."""
    names = set()
    for prof in (a, b):
        for f, n in prof.leaf.items():
            if prof.total and n / prof.total >= MIN_SHARE:
                names.add(f)
    rows = [Row(f, a.leaf.get(f, 0), b.leaf.get(f, 0), b.irqoff.get(f, 0)) for f in sorted(names)]
    off = Row(OTHER_OFF, 0, 0)
    for f in sorted(set(a.leaf) | set(b.leaf)):
        k_in, k_ext, k_off = a.leaf.get(f, 0), b.leaf.get(f, 0), b.irqoff.get(f, 0)
        if f not in names and blind_candidate(k_in, a.total, k_ext, b.total, k_off):
            off.k_in, off.k_ext, off.off = off.k_in + k_in, off.k_ext + k_ext, off.off + k_off
    if off.k_ext:
        rows.append(off)
    rows.append(Row(OTHER, remainder(a.total, [r.k_in for r in rows]),
                    remainder(b.total, [r.k_ext for r in rows])))
    return rows


def remainder(total, parts):
    """total - sum(parts), never below zero: reweighted counts are real numbers, and summed in
    another order than `total` was they can overshoot it by a rounding error (-2.8e-14 seen)."""
    left = total - math.fsum(parts)
    return 0.0 if left < 0 and -left <= 1e-9 * max(abs(total), 1.0) else left


def blind_label(a):
    """The verdict for code the in-guest source cannot sample: the tick's, or another source's."""
    return "tick-blind" if a.source.startswith("tick") else "blind"


def first_callers(prof, leaf):
    return {c[1] for c in prof.chains if c[0] == leaf and len(c) > 1}


def classify(rows, a, b):
    """Marks tick-blind rows, then tick-shifted rows beside them."""
    blind_deficit = 0.0
    blind_parents = {}
    label = blind_label(a)
    for r in rows:
        pin, pext = r.k_in / a.total, r.k_ext / b.total
        if r.name != OTHER and blind_candidate(r.k_in, a.total, r.k_ext, b.total, r.off):
            r.verdict = label
            r.note = "%d%% of its external samples had interrupts off" % round(100 * r.off / r.k_ext)
            blind_deficit += pext - pin
            for parent in first_callers(b, r.name):
                blind_parents.setdefault(parent, []).append(r.name)
    # The tick sees no blind code at all, so compare against the external profile without it.
    ext_seen = b.total - sum(r.k_ext for r in rows if r.verdict == label)
    surplus_left = blind_deficit
    for r in sorted(rows, key=lambda r: r.k_ext / max(ext_seen, 1) - r.k_in / a.total):
        if r.verdict or r.name == OTHER or ext_seen <= 0:
            continue
        beside = set()  # tick-blind functions called from the same place (siblings, not callees)
        for parent in first_callers(a, r.name) | first_callers(b, r.name):
            beside.update(blind_parents.get(parent, []))
        if not beside:
            continue
        surplus, lo, _ = stats.diff_interval(r.k_in, a.total, r.k_ext, ext_seen)
        if lo > 0 and lo <= surplus_left:  # a real surplus, within what the tick missed there
            r.verdict = "tick-shifted"
            r.note = "ticks held during %s land here" % ", ".join(sorted(beside))
            surplus_left -= min(surplus, surplus_left)


def judge(rows, a, b, tolerance):
    """Interval and verdict for the rows left, on shares renormalised without blind/shifted mass."""
    kept = [r for r in rows if not r.verdict]
    n_in, n_ext = sum(r.k_in for r in kept), sum(r.k_ext for r in kept)
    for r in rows:
        if r.verdict:
            r.d, r.lo, r.hi = stats.diff_interval(r.k_in, a.total, r.k_ext, b.total)
            continue
        r.d, r.lo, r.hi = stats.diff_interval(r.k_in, n_in, r.k_ext, n_ext)
        r.verdict = "agree" if r.lo <= tolerance / 100 and r.hi >= -tolerance / 100 else "differs"
    return kept, n_in, n_ext


def pct(x):
    return "%5.1f" % (100 * x)


def pp(x):
    return "%+6.1f" % (100 * x)


def format_table(rows, a, b):
    width = max([len("FUNCTION")] + [len(r.name) for r in rows])
    out = ["%-*s  IN-GUEST %%  EXTERNAL %%  DIFF pp   95%% INTERVAL pp   VERDICT" % (width, "FUNCTION")]
    order = sorted(rows, key=lambda r: (r.name in (OTHER, OTHER_OFF), r.name == OTHER,
                                        -(r.k_in / a.total + r.k_ext / b.total), r.name))
    for r in order:
        out.append("%-*s  %10s  %10s  %7s   [%s, %s]    %s%s" % (
            width, r.name, pct(r.k_in / a.total), pct(r.k_ext / b.total), pp(r.d), pp(r.lo), pp(r.hi),
            r.verdict, " (%s)" % r.note if r.note else ""))
    return out


def chain_table(a, b, n):
    """Whole chains by symbol, the most frequent first (external order), both shares."""
    keys = sorted(set(a.chains) | set(b.chains),
                  key=lambda c: (-(b.chains.get(c, 0) / b.total + a.chains.get(c, 0) / a.total), c))[:n]
    out = ["top %d chains (leaf <- callers)  IN-GUEST %%  EXTERNAL %%" % len(keys)]
    for c in keys:
        text = " <- ".join(c[:4]) + (" <- ..." if len(c) > 4 else "")
        out.append("  %-62s %6s  %6s" % (text[:62], pct(a.chains.get(c, 0) / a.total), pct(b.chains.get(c, 0) / b.total)))
    return out


class Verdict:
    """One judgement of a pair of profiles (b possibly reweighted by vCPU)."""

    def __init__(self, a, b, args):
        self.rows = categories(a, b)
        classify(self.rows, a, b)
        self.kept, self.n_in, self.n_ext = judge(self.rows, a, b, args.tolerance)
        kin, kext = [r.k_in for r in self.kept], [r.k_ext for r in self.kept]
        p = [k / self.n_in if self.n_in else 0 for k in kin]
        q = [k / self.n_ext if self.n_ext else 0 for k in kext]
        self.distance = stats.tvd(p, q)
        self.chi, self.df, self.pvalue = stats.chi2_homogeneity(kin, kext)
        self.differs = [r.name for r in self.kept if r.verdict == "differs"]
        self.noise = stats.tvd_noise95(kin, kext)
        self.consistent = not self.differs and self.distance <= args.max_tvd + self.noise


def run(args):
    out = output.Output(None, (args.inguest, args.external, args.elf))  # stdout, not >> an input
    try:
        if not common.is_capture(args.external):
            if args.pid is not None or args.comm is not None:
                raise Failure("--pid and --comm select a capture's samples: %s is not a capture" % args.external,
                              EXIT_USAGE)
            filters.phase_only(args, args.external)
        syms = common.load_symbols(args.elf) if args.elf else None
        a = profiles.load(args.inguest, syms, args)
        b = profiles.load(args.external, syms, args)
    except Failure as e:  # compare's codes: 1 means `differs`, so unreadable input is 2
        raise Failure(str(e), EXIT_USAGE if e.code == EXIT_FAIL else e.code) from None
    for prof in (a, b):
        if prof.total == 0:   # a damaged capture with nothing before the damage: 3
            raise Failure("%s has no samples to compare" % prof.name,
                          EXIT_DAMAGED if prof.damaged else EXIT_USAGE)
    weighting, unweighted_why = vcpus.plan(a, b)
    shown = vcpus.reweight(b, weighting) if weighting else b
    v = Verdict(a, shown, args)
    blurred = None  # the judgement with the contention's loss of independent samples allowed for
    # the host's measured wait credits any imbalance to contention; the counts alone up to MAX_DESIGN
    contended = args.host_wait is not None and args.host_wait >= HOST_CONTENDED
    if not v.consistent and weighting and weighting.credible(contended):
        blurred = Verdict(a, vcpus.reweight(b, weighting, weighting.size / weighting.design), args)
    verdict = ("consistent" if v.consistent else
               "inconclusive" if blurred is not None and blurred.consistent else "differs")
    # contention measured on the host: within one vCPU too, the in-guest counter advances in the time
    # the vCPU ran and the stops come in wall time, so a bounded difference cannot be told from it
    waited_excuse = None
    if verdict == "differs" and contended:
        worst = max((abs(r.d) for r in v.kept if r.verdict == "differs"), default=0.0)
        waited_excuse = worst * 100 <= HOST_CONTENDED_PP
        if waited_excuse:
            verdict = "inconclusive"

    out.write("in-guest: %s (%s, %d samples%s)\n" % (a.name, a.source, a.total,
              ", %d windows" % a.windows if a.windows > 1 else ""))
    out.write("external: %s (%s, %d samples)\n" % (b.name, b.source, b.total))
    if weighting:
        out.write("\n".join(weighting.lines()) + "\n")
    elif a.by_cpu is not None and len(a.by_cpu) > 1 or b.per_cpu is not None and len(b.per_cpu) > 1:
        out.write("not weighted by vCPU: %s\n" % unweighted_why)
    out.write("\n")
    out.write("\n".join(format_table(v.rows, a, shown)) + "\n")
    if len(v.kept) < len(v.rows):
        out.write("(shares are of all samples; DIFF and interval of the agree/differs rows are on shares "
                  "renormalised without the %s and tick-shifted rows)\n" % blind_label(a))
    out.write("\n")
    if args.chains:
        out.write("\n".join(chain_table(a, shown, args.chains)) + "\n\n")
    cover = v.n_in / a.total if a.total else 0
    out.write("total variation distance %.3f (limit %.3f + %.3f that sampling noise reaches 1 time in 20) over the "
              "functions that are neither %s nor tick-shifted (%.0f %% of in-guest samples)\n"
              % (v.distance, args.max_tvd, v.noise, blind_label(a), 100 * cover))
    if v.df:
        out.write("chi-square %.1f, %d degrees of freedom, p = %.3g (a test of exact equality: with "
                  "thousands of samples it also catches differences below the tolerance)\n" % (v.chi, v.df, v.pvalue))
    blind = [r.name for r in v.rows if r.verdict == blind_label(a)]
    if blind and blind_label(a) == "tick-blind":
        out.write("tick-blind: %s (interrupts off: the in-guest tick cannot sample there)\n" % ", ".join(blind))
    elif blind:
        out.write("blind: %s (interrupts off: the in-guest source's own handler, which it cannot sample)\n"
                  % ", ".join(blind))
    if v.differs:
        out.write("differs on: %s\n" % ", ".join(v.differs))
    if blurred is not None:
        beyond = ("; more than the %.0f the counts alone are credited with, but QEMU's busiest vCPU thread "
                  "waited %.0f %% of the window for a host core (--host-wait)" % (vcpus.MAX_DESIGN, 100 * args.host_wait)
                  if weighting.design > vcpus.MAX_DESIGN else "")
        out.write("%s: with the external samples counted as %.0f independent ones (the slowest vCPU advanced at "
                  "1/%.1f of the fastest's rate, so its stops clump%s), total variation distance %.3f against a limit "
                  "of %.3f%s\n" % ("inconclusive" if blurred.consistent else "still differs",
                                    weighting.size / weighting.design, weighting.design, beyond, blurred.distance,
                                    args.max_tvd + blurred.noise,
                                    ", differs on: " + ", ".join(blurred.differs) if blurred.differs else ""))
    elif weighting and weighting.unequal and not v.consistent:
        out.write("vCPU progress %.1f times unequal: more than contention is credited with (%.0f) without a "
                  "measured wait (--host-wait of at least %.2f), so it does not excuse the difference\n"
                  % (weighting.design, vcpus.MAX_DESIGN, HOST_CONTENDED))
    if waited_excuse is not None:
        out.write("%s: QEMU's busiest vCPU thread waited %.0f %% of the window for a host core (--host-wait), "
                  "and %s\n" % ("inconclusive" if waited_excuse else "still differs", 100 * args.host_wait,
                                "no function differs by more than the %d pp contention is credited with"
                                % HOST_CONTENDED_PP if waited_excuse else
                                "a function differs by more than the %d pp contention is credited with"
                                % HOST_CONTENDED_PP))
    out.write("verdict: %s\n" % verdict)
    out.commit()
    if a.damaged or b.damaged:
        return EXIT_DAMAGED
    return {"consistent": EXIT_CONSISTENT, "differs": EXIT_DIFFERS, "inconclusive": EXIT_INCONCLUSIVE}[verdict]
