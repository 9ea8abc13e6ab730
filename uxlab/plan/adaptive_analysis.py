"""The report's population thresholds of an adaptive study, for simulated studies.

On an adaptive design (QUEST+, staircases) the report does not give the pooled fit's
figures: each person is tested where that person is unsure, so a pool without participant
effects mixes people at different latencies. It fits a logit on ln latency with a random
intercept per participant and gives its population curve's points with a participant
jackknife-t interval (`analysis.report.build._adaptive_population`, which calls
`analysis.small_sample_interval.mixed_threshold_small_n` with `n_boot = 0`). The planner
must predict the interval the report will print, so its adaptive cells are analysed with
the same computation here, from the simulated counts (`mixed_threshold_counts`: the
report's cells without the round trip through a trial table); the pooled batch
(`analysis.population_batch`) stays the estimator of fixed designs. Both give the
report's interval on the same answers.
"""

from __future__ import annotations

import numpy as np


def mixed_thresholds(
    levels_ms: np.ndarray, k: np.ndarray, n: np.ndarray, rising: bool, levels: tuple[float, ...]
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(estimate, ci_low, ci_high) [J] in ms at `levels` for one study's counts [P, L] "yes"
    of n, as the report gives them on an adaptive design; NaN where it gives none (also
    where the answers separate by latency or the fit has no finite maximum or does not
    converge: `analysis.small_sample_interval.WithheldFit`, all levels withheld as in the
    report). None where the model finds no falling curve: the report then keeps the pooled
    fit's 50% point (and withholds the others).

    `rising`: the pooled fit's direction (the report models the falling share: "not yes"
    when "yes" rises with latency)."""
    from analysis.small_sample_interval import mixed_threshold_counts

    nan = np.full(len(levels), np.nan)
    falls = n - k if rising else k
    try:
        estimate, low, high = mixed_threshold_counts(levels_ms, falls, n, levels=levels)
    except ValueError:  # the model's own refusal (e.g. answers all on one side)
        return nan, nan.copy(), nan.copy()
    if np.isnan(estimate).any():
        return None
    return estimate, low, high
