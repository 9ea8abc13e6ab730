"""Several fits: one per group (participant), their tidy thresholds, and the pooled
population threshold with a cluster bootstrap over participants."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from analysis.batch_mle import BOOT_TOLERANCES, maximise
from analysis.bootstrap import bootstrap_interval, cluster_resample_weights, percentile_interval
from analysis.psychometric.engine_fitter import DEFAULT_LEVELS
from analysis.psychometric.inputs import (
    PsychometricInputError,
    aggregate_trials,
    as_float_array,
    frame_column,
    sorted_keys,
)
from analysis.psychometric.ml_fit import threshold_logs
from analysis.psychometric.single import PsychometricFitter, report_progress
from analysis.steep_tails import widen_steep_tails

THRESHOLD_COLUMNS = ["level", "estimate", "ci_low", "ci_high", "n_trials"]


def fit_by_group(
    df: pd.DataFrame,
    stimulus: str,
    response: str,
    group: str,
    *,
    n_boot: int = 1000,
    seed: int = 0,
    ci_method: str = "percentile",
    sensitivity: bool = True,
    progress: bool | Callable[[int, int], None] = False,
    **fitter_kwargs: Any,
) -> dict[str, PsychometricFitter]:
    """One fitted PsychometricFitter per value of `group` (e.g. per participant).

    Groups are fitted in sorted order with seeds derived from `seed` and the group's
    position, so results do not depend on row order.
    """
    x_col, r_col, g_col = (
        frame_column(df, stimulus),
        frame_column(df, response),
        frame_column(df, group),
    )
    keys = sorted_keys(g_col.astype(str).unique())
    seeds = np.random.SeedSequence(seed).spawn(len(keys))
    fits: dict[str, PsychometricFitter] = {}
    for i, key in enumerate(keys):
        rows = g_col.astype(str) == key
        try:
            levels, n_yes, n_total = aggregate_trials(
                x_col[rows], r_col[rows], field=stimulus, response_field=response
            )
            fitter = PsychometricFitter(**fitter_kwargs)
            fits[key] = fitter.fit(
                levels,
                n_yes,
                n_total,
                n_boot=n_boot,
                seed=int(seeds[i].generate_state(1)[0]),
                ci_method=ci_method,
                sensitivity=sensitivity,
            )
        except PsychometricInputError as exc:
            raise PsychometricInputError(f"{group}={key}: {exc}") from None
        report_progress(progress, i + 1, len(keys), str(key))
    return fits


def tidy_thresholds(
    fits: Mapping[str, PsychometricFitter], *, stimulus: str, measure: str = "psychometric"
) -> pd.DataFrame:
    """Rows for thresholds.csv: measure, stimulus, group, level, estimate, ci_low, ci_high,
    n_trials."""
    frames = []
    for key, fitter in fits.items():
        t = fitter.thresholds_.copy()
        t.insert(0, "group", key)
        frames.append(t)
    out = pd.concat(frames, ignore_index=True)
    out.insert(0, "stimulus", stimulus)
    out.insert(0, "measure", measure)
    return out[["measure", "stimulus", "group", *THRESHOLD_COLUMNS]]


def population_threshold(
    df: pd.DataFrame,
    stimulus: str,
    response: str,
    participant: str,
    n_boot: int = 1000,
    seed: int = 0,
    *,
    levels: Sequence[float] = DEFAULT_LEVELS,
    alpha: float = 0.05,
    **fitter_kwargs: Any,
) -> pd.DataFrame:
    """Pooled thresholds with intervals from resampling participants (a cluster bootstrap).

    Not the report's interval: `uxlab report` prints the participant jackknife-t of
    `analysis.small_sample_interval.population_threshold_small_n` (same estimate), because
    this percentile bootstrap covers the population's point too rarely with few people
    (0.825-0.855 with 4 participants, 0.855-0.875 with 8; docs/explanation/small-samples.md).

    The estimate is the pooled fit of all trials; each bootstrap replicate draws
    participants with replacement, pools their counts and refits (all replicates at once),
    so the interval carries between-participant variation. Percentile intervals, each end
    at least as far out as the parametric bootstrap's of the pooled counts (trials
    independent): when every participant's answers separate at the same gap, every
    resampled pool separates there too and the cluster bootstrap alone has zero width.
    Columns: level, estimate, ci_low, ci_high, n_trials, n_participants.
    """
    levels_ms, n_yes, n_total, per_k, per_n = participant_counts(
        df, stimulus, response, participant
    )
    pooled = PsychometricFitter(levels=levels, alpha=alpha, **fitter_kwargs).fit(
        levels_ms, n_yes, n_total, n_boot=n_boot, seed=seed + 1, sensitivity=False
    )
    people = per_k.shape[0]
    weights = cluster_resample_weights(np.random.default_rng(seed), n_boot, people)
    k_boot, n_boot_tot = weights @ per_k, weights @ per_n
    res = pooled.result_
    k_rise = k_boot if pooled.direction_ == "rising" else n_boot_tot - k_boot
    theta, ll, _ = maximise(
        res.layout, np.tile(res.theta, (n_boot, 1)), k_rise, n_boot_tot, **BOOT_TOLERANCES
    )
    theta[~np.isfinite(ll)] = np.nan
    est = threshold_logs(res.layout, res.theta[None, :], levels)[0]
    boot = threshold_logs(res.layout, theta, levels)
    low, high = percentile_interval(boot, alpha)
    return floored_threshold_frame(pooled, est, low, high, levels, alpha, n_boot, people)


def participant_counts(
    df: pd.DataFrame, stimulus: str, response: str, participant: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """(levels_ms, n_yes, n_total, per_k [P, L], per_n [P, L]): pooled counts per level and
    each participant's counts at the same levels."""
    x_col, r_col, p_col = (
        frame_column(df, stimulus),
        frame_column(df, response),
        frame_column(df, participant),
    )
    levels_ms, n_yes, n_total = aggregate_trials(
        x_col, r_col, field=stimulus, response_field=response
    )
    keys, p_inv = np.unique(p_col.astype(str).to_numpy(), return_inverse=True)
    x_inv = np.searchsorted(levels_ms, as_float_array(x_col, stimulus))
    r = as_float_array(r_col, response)
    per_k = np.zeros((keys.size, levels_ms.size))
    per_n = np.zeros((keys.size, levels_ms.size))
    np.add.at(per_k, (p_inv, x_inv), r)
    np.add.at(per_n, (p_inv, x_inv), 1.0)
    return levels_ms, n_yes, n_total, per_k, per_n


def floored_threshold_frame(
    pooled: PsychometricFitter,
    est: np.ndarray,
    low: np.ndarray,
    high: np.ndarray,
    levels: Sequence[float],
    alpha: float,
    n_boot: int,
    n_participants: int,
) -> pd.DataFrame:
    """The pooled thresholds' table (ln ms in, ms out), each interval end at least as far
    out as the pooled counts' parametric bootstrap when it was drawn (`n_boot` > 0): when
    every participant separates at the same gap, resampling participants alone has zero
    width; and over the gap between the tested levels around the 50% point when the pooled
    curve is steeper than the levels show (`analysis.steep_tails`). Columns: level,
    estimate, ci_low, ci_high, n_trials, n_participants."""
    if n_boot > 0:
        p_low, p_high = bootstrap_interval(
            pooled.log_threshold_draws(levels)[1], est, None, None, "percentile", alpha
        )
        low, high = np.fmin(low, p_low), np.fmax(high, p_high)
    res = pooled.result_  # a pooled curve steeper than the levels show: over the gap
    low, high = widen_steep_tails(res.layout, res.theta, low, high)
    return pd.DataFrame(
        {
            "level": list(levels),
            "estimate": np.exp(est),
            "ci_low": np.exp(low),
            "ci_high": np.exp(high),
            "n_trials": int(pooled.n_total_.sum()),
            "n_participants": int(n_participants),
        }
    )
