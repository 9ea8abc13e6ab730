"""The report's population thresholds of an adaptive study, for simulated studies.

On an adaptive design (QUEST+, staircases) the report does not give the pooled fit's
figures: each person is tested where that person is unsure, so a pool without participant
effects mixes people at different latencies. It fits a logit on ln latency with a random
intercept per participant and gives its population curve's points with a participant
jackknife-t interval (`analysis.report.build._adaptive_population`, which calls
`analysis.small_sample_interval.mixed_threshold_small_n` with `n_boot = 0`). The planner
must predict the interval the report will print, so its adaptive cells are analysed with
that same call here; the pooled batch (`analysis.population_batch`) stays the estimator of
fixed designs. tests/test_plan_validation.py checks that both give the report's interval
on the same answers.
"""

from __future__ import annotations

import numpy as np
import pandas as pd


def counts_to_trials(levels_ms: np.ndarray, k: np.ndarray, n: np.ndarray) -> pd.DataFrame:
    """One row per answered trial (participant, x ms, y 1 = "yes") of counts k, n [P, L]."""
    person, level = np.nonzero(n > 0)
    kk = k[person, level].astype(int)
    nn = n[person, level].astype(int)
    # per cell, its k "yes" then its n - k "no": rank within the cell < k
    within = np.arange(int(nn.sum())) - np.repeat(np.cumsum(nn) - nn, nn)
    return pd.DataFrame(
        {
            "participant": np.repeat(person, nn),
            "x": np.repeat(np.asarray(levels_ms, dtype=float)[level], nn),
            "y": (within < np.repeat(kk, nn)).astype(float),
        }
    )


def mixed_thresholds(
    levels_ms: np.ndarray, k: np.ndarray, n: np.ndarray, rising: bool, levels: tuple
) -> tuple[np.ndarray, np.ndarray, np.ndarray] | None:
    """(estimate, ci_low, ci_high) [J] in ms at `levels` for one study's counts [P, L] "yes"
    of n, as the report gives them on an adaptive design; NaN where it gives none. None
    where the model finds no falling curve: the report then keeps the pooled fit's 50%
    point (and withholds the others).

    `rising`: the pooled fit's direction (the report models the falling share: "not yes"
    when "yes" rises with latency)."""
    from analysis.small_sample_interval import mixed_threshold_small_n

    nan = np.full(len(levels), np.nan)
    trials = counts_to_trials(levels_ms, k, n)
    falls = trials.assign(_falls=(1.0 - trials["y"]) if rising else trials["y"])
    try:
        _, table = mixed_threshold_small_n(falls, "_falls", "x", n_boot=0, levels=levels)
    except ValueError:  # the model's own refusal (e.g. answers all on one side)
        return nan, nan.copy(), nan.copy()
    table = table.set_index("level")
    if table["estimate"].isna().any():
        return None
    rows = table.loc[list(levels)]
    return (
        rows["estimate"].to_numpy(float),
        rows["ci_low"].to_numpy(float),
        rows["ci_high"].to_numpy(float),
    )
