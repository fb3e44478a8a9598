# SPDX-License-Identifier: MIT
"""phases.py: which occurrences of a phase (capture v5, `gdbsample record --phase`) a sample's time
falls in -- the one home of that rule, for the filters and for info.

A sample at time t belongs to an occurrence when BEGIN_NS <= t < END_NS; to one still open when the
run ended (its END_NS is the run's end) also when t == END_NS. gdbsample samples only inside
occurrences, but nothing here assumes it: a sample may be in none. Occurrences of one phase never
overlap when gdbsample writes them; a file where they do is still answered right (every occurrence
holding t), only more slowly.
"""
import bisect


def stop(occ):
    """The first time past the Occurrence occ: its END_NS, or END_NS + 1 when it was still open at
    the run's end (END_NS, the run's end, is in it)."""
    return occ.end_ns if occ.done else occ.end_ns + 1


def contains(occ, t):
    """True if a sample at time t belongs to the Occurrence occ."""
    return occ.begin_ns <= t < stop(occ)


class Timeline:
    """Occurrences (of one phase, or any chosen ones) sorted by their begin, looked up by bisection."""

    def __init__(self, occurrences):
        self.occ = sorted(occurrences, key=lambda o: (o.begin_ns, o.n))   # by begin
        self.begins = [o.begin_ns for o in self.occ]
        self.reach = []             # [i]: the latest stop() of occ[0..i]: nothing before i holds t past it
        last = -1
        for o in self.occ:
            last = max(last, stop(o))
            self.reach.append(last)

    def at(self, t):
        """The indexes (into self.occ) of the occurrences that hold t, latest begin first."""
        i = bisect.bisect_right(self.begins, t) - 1
        out = []
        while i >= 0 and self.reach[i] > t:
            if contains(self.occ[i], t):
                out.append(i)
            i -= 1
        return out

    def holds(self, t):
        """True if some occurrence holds t (the filters' test: one bisection per sample)."""
        i = bisect.bisect_right(self.begins, t) - 1
        while i >= 0 and self.reach[i] > t:
            if contains(self.occ[i], t):
                return True
            i -= 1
        return False

    def covered_ns(self, lo, hi):
        """The time in [lo, hi) that some occurrence holds, in ns (the union: overlaps count once)."""
        total, start, end = 0, None, None
        for o in self.occ:
            b, e = max(o.begin_ns, lo), min(stop(o), hi)
            if e <= b:
                continue
            if end is None or b > end:
                total += 0 if end is None else end - start
                start, end = b, e
            else:
                end = max(end, e)
        return total + (0 if end is None else end - start)
