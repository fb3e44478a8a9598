# SPDX-License-Identifier: MIT
"""vcpus.py: `compare`'s like-with-like step -- the external profile reweighted to the in-guest
profile's mix of vCPUs, and how unequally the vCPUs' guest time advanced (docs/compare.md).

Why: the external sampler stops every vCPU at the same wall-clock instants, so each vCPU gets the
same number of stops; the in-guest sampler fires on each vCPU's own guest clock, and a vCPU whose
QEMU thread waits for a host core takes fewer samples (overflows that fall due while it waits are
taken as one). Both see where each vCPU spends its time alike, but they mix the vCPUs in different
proportions: split_a on one vCPU and irqon_spin on the other then read 43 % / 14 % inside against
27 % / 36 % outside although neither profile is wrong. Weighing each vCPU's external profile by its
share of the in-guest samples compares the same mixture on both sides.

The vCPU numbers must name the same vCPUs on both sides: the in-guest `cpu N` is the kernel's CPU
id, the external one the gdbstub's thread order; our test kernel numbers its CPUs in that order
(boot CPU 0, then by APIC id / MPIDR)."""
from . import stats
from .profiles import Profile

UNEQUAL_P = 0.05    # progress counts as unequal when equal progress explains the counts less often
MAX_DESIGN = 10.0   # slowest vCPU at under a tenth of the fastest: not credited to contention


class Weighting:
    """The per-vCPU picture of one comparison."""

    def __init__(self, n_in, n_ext):
        self.n_in = n_in            # vCPU -> in-guest samples (the report's `cpu N:` lines)
        self.n_ext = n_ext          # vCPU -> external samples
        self.cpus = sorted(set(n_in) | set(n_ext))
        tin, text = sum(n_in.values()), sum(n_ext.values())
        self.weight = {c: n_in.get(c, 0) / tin for c in self.cpus}     # the in-guest mix
        # Kish's effective sample size of the reweighted external profile: 1 / sum(w^2 / m)
        self.size = 1.0 / sum(self.weight[c] ** 2 / n_ext[c] for c in self.cpus if self.weight[c])
        # each vCPU's samples inside per sample outside, relative to the fastest: its guest time's
        # progress per wall time (1.0 = as fast as the fastest vCPU)
        rate = {c: (n_in.get(c, 0) / tin) / (n_ext[c] / text) for c in self.cpus if n_ext.get(c)}
        fastest = max(rate.values())
        self.progress = {c: r / fastest for c, r in rate.items()}
        both = [c for c in self.cpus if n_in.get(c) and n_ext.get(c)]
        slowest = min((self.progress[c] for c in both), default=1.0)
        self.design = 1.0 / slowest if slowest > 0 else float("inf")   # samples per independent one
        _, df, self.p_equal = stats.chi2_homogeneity([n_in.get(c, 0) for c in self.cpus],
                                                     [n_ext.get(c, 0) for c in self.cpus])
        self.unequal = df > 0 and self.p_equal < UNEQUAL_P and self.design > 1.0

    def credible(self, contended=False):
        """Contention can explain the imbalance: up to MAX_DESIGN on the counts alone, any
        imbalance when the host measured the vCPU threads waiting for a core (contended)."""
        return self.unequal and (self.design <= MAX_DESIGN or contended)

    def lines(self):
        """What the weighting did, for compare's output."""
        tin, text = sum(self.n_in.values()), sum(self.n_ext.values())

        def mix(counts, total):
            return ", ".join("%d %d (%.1f %%)" % (c, counts.get(c, 0), 100.0 * counts.get(c, 0) / total)
                             for c in self.cpus)
        out = ["vCPU samples in-guest: %s" % mix(self.n_in, tin),
               "vCPU samples external: %s" % mix(self.n_ext, text),
               "EXTERNAL %% weighs each vCPU's external profile by its in-guest share (effective size %.0f of %d)"
               % (self.size, text)]
        if self.unequal:
            slow = min((c for c in self.progress if self.n_in.get(c)), key=lambda c: (self.progress[c], c))
            out.append("vCPU progress unequal (p = %.2g for equal): vCPU %d advanced %.2f times as fast as the "
                       "fastest in guest time per wall time -- its QEMU thread waited for a host core"
                       % (self.p_equal, slow, self.progress[slow]))
        return out


def plan(a, b):
    """(Weighting, None), or (None, why not) when the inputs cannot be weighted by vCPU."""
    if a.by_cpu is None:
        return None, "%s has no per-CPU sample counts (a kernel whose report has no `cpu N:` lines)" % a.name
    if b.per_cpu is None:
        return None, "%s does not say which vCPU took each sample (give a capture, or `fold --group-by-cpu`)" % b.name
    n_in = {c: n for c, n in a.by_cpu.items() if n}
    n_ext = {c: n for c, n in b.by_cpu.items() if n}
    missing = sorted(c for c in n_in if c not in n_ext)
    if missing:
        return None, "vCPU %s has in-guest samples but none outside" % ", ".join(map(str, missing))
    if not n_in:
        return None, "no in-guest samples"
    return Weighting(n_in, n_ext), None


def reweight(b, w, size=None):
    """b's per-vCPU profiles mixed with w's weights into one profile of `size` samples (default
    the effective size): counts become real numbers, shares are the weighted mixture."""
    size = w.size if size is None else size
    out = Profile(b.name)
    out.source, out.damaged, out.windows, out.ms = b.source, b.damaged, b.windows, b.ms
    for c in w.cpus:
        sub = b.per_cpu.get(c)
        if not w.weight[c] or sub is None or not sub.total:
            continue
        f = w.weight[c] * size / sub.total
        for chain, n in sub.chains.items():
            out.add(chain, n * f)
        for leaf, n in sub.irqoff.items():
            out.irqoff[leaf] = out.irqoff.get(leaf, 0) + n * f
    return out
