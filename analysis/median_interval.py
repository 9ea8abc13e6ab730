"""A confidence interval for a median from few values: the sign test's, interpolated.

The median of N values has a distribution-free interval from the sign test: the true median
lies between the d-th smallest and the d-th largest value with probability
1 - 2 P(B <= d - 1), B ~ Binomial(N, 1/2), whatever the values' distribution (continuous,
independent). That probability moves in steps (N = 8: 0.992 for the extremes, 0.930 one
value in), so the usual choice is either too wide or too narrow. Hettmansperger & Sheather
(1986, "Confidence intervals based on interpolated order statistics", Statistics &
Probability Letters 4:75-79) interpolate between the two neighbouring order statistics with
a weight that makes the coverage close to the level asked for; Minitab's sign-test interval
("NLI") is this one. A percentile bootstrap of a median, by contrast, can only take values
of the sample and its ends are too close together with few values (measured in
`benchmarks/adaptive_median_coverage.py`).
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats


def sign_coverage(n: int, d: int) -> float:
    """P(the d-th smallest <= median <= the d-th largest) of `n` continuous values."""
    return float(1.0 - 2.0 * stats.binom.cdf(d - 1, n, 0.5))


def median_interval(values: np.ndarray, level: float = 0.95) -> tuple[float, float]:
    """(low, high): the interpolated sign-test interval of the median of `values` (NaN
    ignored); NaN, NaN when even the smallest and largest value give less than `level`
    (5 values or fewer at 95%)."""
    x = np.sort(np.asarray(values, dtype=float)[~np.isnan(np.asarray(values, dtype=float))])
    n = x.size
    if n == 0 or sign_coverage(n, 1) < level:
        return math.nan, math.nan
    d = 1
    while d + 1 <= n // 2 and sign_coverage(n, d + 1) >= level:
        d += 1
    outer, inner = sign_coverage(n, d), sign_coverage(n, d + 1) if d + 1 <= n // 2 else 0.0
    if d + 1 > (n + 1) // 2 or outer == inner:  # no inner pair: the order statistics alone
        return float(x[d - 1]), float(x[n - d])
    share = (outer - level) / (outer - inner)
    weight = (n - d) * share / (d + (n - 2 * d) * share)
    low = (1.0 - weight) * x[d - 1] + weight * x[d]
    high = (1.0 - weight) * x[n - d] + weight * x[n - d - 1]
    return float(low), float(high)
