# SPDX-License-Identifier: MIT
"""stats.py: the statistics `compare` needs -- score intervals for shares and their difference,
the chi-square distribution's tail, and the chance size of a total variation distance -- in plain
Python (no SciPy here)."""
import math
import random

Z95 = 1.959963984540054  # two-sided 95 % normal quantile


def wilson(k, n, z=Z95):
    """Wilson score interval for a proportion k/n; (0, 1) when n == 0. Honest at small counts:
    it never collapses to a point at k = 0 or k = n, unlike the normal approximation."""
    if n <= 0:
        return 0.0, 1.0
    p = k / n
    denom = 1 + z * z / n
    centre = (p + z * z / (2 * n)) / denom
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / denom
    return max(0.0, centre - half), min(1.0, centre + half)


def diff_interval(k1, n1, k2, n2, z=Z95):
    """(d, lo, hi): p1 - p2 and its 95 % interval by Newcombe's hybrid score method (1998,
    method 10), built from the two Wilson intervals; good coverage even for small counts."""
    p1 = k1 / n1 if n1 else 0.0
    p2 = k2 / n2 if n2 else 0.0
    l1, u1 = wilson(k1, n1, z)
    l2, u2 = wilson(k2, n2, z)
    d = p1 - p2
    return d, d - math.sqrt((p1 - l1) ** 2 + (u2 - p2) ** 2), d + math.sqrt((u1 - p1) ** 2 + (p2 - l2) ** 2)


def _gamma_p_series(a, x):
    term = total = 1.0 / a
    ap = a
    for _ in range(10000):
        ap += 1
        term *= x / ap
        total += term
        if abs(term) < abs(total) * 1e-15:
            break
    return total * math.exp(-x + a * math.log(x) - math.lgamma(a))


def _gamma_q_fraction(a, x):
    # Lentz's method for the continued fraction of the upper incomplete gamma function
    tiny = 1e-300
    b = x + 1 - a
    c = 1 / tiny
    d = 1 / b
    h = d
    for i in range(1, 10000):
        an = -i * (i - a)
        b += 2
        d = an * d + b
        d = tiny if abs(d) < tiny else d
        c = b + an / c
        c = tiny if abs(c) < tiny else c
        d = 1 / d
        delta = d * c
        h *= delta
        if abs(delta - 1) < 1e-15:
            break
    return math.exp(-x + a * math.log(x) - math.lgamma(a)) * h


def chi2_sf(x, df):
    """P(X >= x) for X ~ chi-square(df): the regularized upper incomplete gamma Q(df/2, x/2)."""
    if df <= 0:
        raise ValueError("degrees of freedom must be positive")
    if x <= 0:
        return 1.0
    a, y = df / 2.0, x / 2.0
    if y < a + 1:
        return max(0.0, 1.0 - _gamma_p_series(a, y))
    return min(1.0, _gamma_q_fraction(a, y))


def chi2_homogeneity(a, b, min_expected=5.0):
    """Chi-square test that two count vectors (same categories) come from one distribution.
    Categories whose expected count is below min_expected on either side are pooled.
    -> (statistic, degrees of freedom, p-value); (0, 0, 1.0) if fewer than two categories."""
    na, nb = sum(a), sum(b)
    if na == 0 or nb == 0:
        return 0.0, 0, 1.0
    n = na + nb
    cells, pool_a, pool_b = [], 0, 0
    for x, y in zip(a, b):
        t = x + y
        if t * na / n < min_expected or t * nb / n < min_expected:
            pool_a += x
            pool_b += y
        else:
            cells.append((x, y))
    if pool_a + pool_b:
        cells.append((pool_a, pool_b))
    if len(cells) < 2:
        return 0.0, 0, 1.0
    stat = 0.0
    for x, y in cells:
        t = x + y
        ea, eb = t * na / n, t * nb / n
        stat += (x - ea) ** 2 / ea + (y - eb) ** 2 / eb
    df = len(cells) - 1
    return stat, df, chi2_sf(stat, df)


def tvd(p, q):
    """Total variation distance between two distributions given as equal-length share lists."""
    return 0.5 * sum(abs(x - y) for x, y in zip(p, q))


def tvd_noise95(a, b, draws=2000, seed=1):
    """How large the total variation distance between two samples of sizes sum(a) and sum(b),
    drawn from one and the same distribution (the pooled shares p), gets by chance: its 95th
    percentile. The share differences are drawn from their normal approximation, whose covariance
    (diag(p) - p p^T)(1/n_a + 1/n_b) keeps them summing to zero: d_i = sqrt(p_i) Z_i - p_i W with
    W = sum_j sqrt(p_j) Z_j. Seeded, so the same counts always give the same answer."""
    na, nb = sum(a), sum(b)
    if not na or not nb:
        return 0.0
    if min(list(a) + list(b)) < 0:
        raise ValueError("negative count: %r" % min(list(a) + list(b)))
    p = [(x + y) / (na + nb) for x, y in zip(a, b)]
    root = [math.sqrt(x) for x in p]
    scale = math.sqrt(1.0 / na + 1.0 / nb)
    rng = random.Random(seed)
    out = []
    for _ in range(draws):
        z = [rng.gauss(0.0, 1.0) for _ in p]
        w = sum(r * x for r, x in zip(root, z))
        out.append(0.5 * scale * sum(abs(r * x - q * w) for r, x, q in zip(root, z, p)))
    out.sort()
    return out[int(0.95 * draws)]
