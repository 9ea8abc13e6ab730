"""The report's pooled leave-one-out estimates, kept as it computes them.

`analysis.small_sample_interval.population_threshold_small_n` makes its interval with
`jackknife_t(estimate, leave_one_out)`. A benchmark that scores other intervals on the same
estimates wraps that function for the length of a run (`kept_jackknife`), and restores it.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import numpy as np

import analysis.small_sample_interval as ssi

REPORTS = ssi.jackknife_t
"""The report's own interval: estimate -/+ t x jackknife SE (`jackknife_t`)."""


@contextmanager
def kept_jackknife() -> Iterator[dict[str, np.ndarray]]:
    """While open, every pooled fit's log estimates (`est`, [J]) and leave-one-out refits
    (`jack`, [N, J]) are kept in the yielded dict, the last fit's replacing the one before."""
    kept: dict[str, np.ndarray] = {}

    def keep(est: np.ndarray, jack: np.ndarray, alpha: float = 0.05):
        kept["est"], kept["jack"] = np.asarray(est, float), np.asarray(jack, float)
        return REPORTS(est, jack, alpha)

    ssi.jackknife_t = keep
    try:
        yield kept
    finally:
        ssi.jackknife_t = REPORTS
