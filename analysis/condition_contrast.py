"""Thresholds per condition and the ratio between conditions, with participants resampled.

A study with a second factor (inter-token latency, jitter) is run for the change of the
threshold between that factor's levels: does a stuttering stream make people give up on
the first token sooner? The joint fit (`MultiConditionFitter`: one curve per condition,
lapse shared) gives each condition's thresholds; their intervals must carry the spread
between people, as the pooled thresholds' do (`analysis.small_sample_interval`), or they
cover the population's curve only 0.61-0.81 of the time with 12-24 people who differ.

So the joint fit is refitted without each participant in turn (all N refits at once) and
every condition's ln threshold gets the jackknife-t interval: estimate -/+ t_{N-1} x the
jackknife SE, each end at least as far out as the joint fit's parametric bootstrap of the
pooled counts (when everyone's answers separate at the same gap the jackknife alone would
have zero width). The **paired contrast** is the ln ratio of a condition's threshold to the
reference condition's (the first level of the factor) at the same level of F; a person
left out leaves both conditions at once, so the contrast's jackknife is paired: the spread
between people that moves both thresholds together cancels, the spread of their reaction
to the factor does not. A condition whose curve is steeper than its levels show places its
switch only within a gap between two tested levels (`analysis.steep_tails`): its
intervals, and the ratios it enters, span that gap.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import pandas as pd

from analysis.batch_mle import BOOT_TOLERANCES, maximise
from analysis.bootstrap import percentile_interval
from analysis.psychometric import DEFAULT_LEVELS, MultiConditionFitter, threshold_logs
from analysis.psychometric.inputs import as_float_array, frame_column
from analysis.small_sample_interval import jackknife_t
from analysis.steep_tails import at_width_floor, widen_steep_tails

CONTRAST_LEVEL = 0.5


@dataclass
class ConditionThresholds:
    """The joint fit, each condition's thresholds with the participant jackknife-t interval
    (`table`: condition, level, estimate, ci_low, ci_high, n_trials), and the ratio of each
    condition's threshold to the reference's (`contrast`: condition, reference, level,
    ratio, ci_low, ci_high, n_participants)."""

    fitter: MultiConditionFitter
    table: pd.DataFrame
    contrast: pd.DataFrame
    n_participants: int


def condition_thresholds(
    df: pd.DataFrame,
    stimulus: str,
    response: str,
    condition: str,
    participant: str,
    n_boot: int = 1000,
    seed: int = 0,
    *,
    levels: Sequence[float] = DEFAULT_LEVELS,
    alpha: float = 0.05,
    resample: bool = True,
) -> ConditionThresholds:
    """Per-condition thresholds and contrasts of the joint fit of `df` (one row per trial).

    With `resample` False (fewer participants than a population interval needs) the
    intervals are NaN and only the estimates are given."""
    multi = MultiConditionFitter(levels=levels, alpha=alpha).fit(
        df,
        stimulus,
        response,
        condition,
        share_lapse=True,
        n_boot=n_boot,
        seed=seed,
        sensitivity=False,
    )
    res = multi.result_
    keys = multi.conditions_
    est = np.stack(
        [threshold_logs(res.layout, res.theta[None, :], levels, c)[0] for c in range(len(keys))]
    )  # [C, J]
    per_k, per_n = _participant_rows(df, stimulus, response, condition, participant, multi)
    people = per_k.shape[0]
    low = high = np.full(est.shape, np.nan)
    c_low = c_high = np.full(len(keys) - 1, np.nan)
    level_pos = list(levels).index(CONTRAST_LEVEL) if CONTRAST_LEVEL in levels else None
    if resample and people >= 2:
        jack = _leave_one_out(multi, per_k, per_n, levels)  # [N, C, J]
        boot = np.stack(
            [threshold_logs(res.layout, res.boot_theta, levels, c) for c in range(len(keys))],
            axis=1,
        )  # [B, C, J]
        low, high = np.empty(est.shape), np.empty(est.shape)
        for c in range(len(keys)):
            low[c], high[c] = _floored(est[c], jack[:, c, :], boot[:, c, :], alpha)
            low[c], high[c] = widen_steep_tails(res.layout, res.theta, low[c], high[c], c)
        if level_pos is not None:
            diff_est = est[1:, level_pos] - est[0, level_pos]
            diff_jack = jack[:, 1:, level_pos] - jack[:, :1, level_pos]
            diff_boot = boot[:, 1:, level_pos] - boot[:, :1, level_pos]
            c_low, c_high = _floored(diff_est, diff_jack, diff_boot, alpha)
            # a condition steeper than its levels show places its switch only in a gap:
            # the ratio then spans what the two conditions' gaps allow
            for c in range(1, len(keys)):
                if at_width_floor(res.layout, res.theta, c) or at_width_floor(
                    res.layout, res.theta, 0
                ):
                    c_low[c - 1] = min(c_low[c - 1], low[c, level_pos] - high[0, level_pos])
                    c_high[c - 1] = max(c_high[c - 1], high[c, level_pos] - low[0, level_pos])
    table = pd.concat(
        [
            pd.DataFrame(
                {
                    "condition": key,
                    "level": list(levels),
                    "estimate": np.exp(est[c]),
                    "ci_low": np.exp(low[c]),
                    "ci_high": np.exp(high[c]),
                    "n_trials": int(multi.n_trials_by_condition_[key]),
                }
            )
            for c, key in enumerate(keys)
        ],
        ignore_index=True,
    )
    contrast = pd.DataFrame(
        {
            "condition": keys[1:],
            "reference": keys[0],
            "level": CONTRAST_LEVEL,
            "ratio": np.exp(est[1:, level_pos] - est[0, level_pos])
            if level_pos is not None
            else np.nan,
            "ci_low": np.exp(c_low),
            "ci_high": np.exp(c_high),
            "n_participants": people,
        }
    )
    return ConditionThresholds(multi, table, contrast, people)


def _floored(
    est: np.ndarray, jack: np.ndarray, boot: np.ndarray, alpha: float
) -> tuple[np.ndarray, np.ndarray]:
    """The jackknife-t interval of `est` [J] from leave-one-out values [N, J], each end at
    least as far out as the parametric bootstrap's percentile interval [B, J] (when drawn)."""
    low, high = jackknife_t(est, jack, alpha)
    if boot.shape[0] > 0:
        p_low, p_high = percentile_interval(boot, alpha)
        low, high = np.fmin(low, p_low), np.fmax(high, p_high)
    return low, high


def _participant_rows(
    df: pd.DataFrame,
    stimulus: str,
    response: str,
    condition: str,
    participant: str,
    multi: MultiConditionFitter,
) -> tuple[np.ndarray, np.ndarray]:
    """Each participant's (yes counts, trials) [P, R] in the joint fit's rows (condition by
    condition, levels ascending), counted in the fitted direction's "yes"."""
    res = multi.result_
    layout = res.layout
    x = as_float_array(frame_column(df, stimulus), stimulus)
    r = as_float_array(frame_column(df, response), response)
    c_col = frame_column(df, condition).astype(str).to_numpy()
    keys = multi.conditions_
    cond = np.array([keys.index(v) for v in c_col])
    rows = np.empty(x.size, dtype=int)
    starts = np.flatnonzero(np.r_[True, layout.cond[1:] != layout.cond[:-1]])
    for c in range(len(keys)):
        mine = cond == c
        u_c = layout.u[layout.cond == c]
        rows[mine] = starts[c] + np.searchsorted(u_c, np.log(x[mine]))
    _, person = np.unique(frame_column(df, participant).astype(str).to_numpy(), return_inverse=True)
    yes = r if multi.direction_ == "rising" else 1.0 - r
    per_k = np.zeros((person.max() + 1, layout.u.size))
    per_n = np.zeros_like(per_k)
    np.add.at(per_k, (person, rows), yes)
    np.add.at(per_n, (person, rows), 1.0)
    return per_k, per_n


def _leave_one_out(
    multi: MultiConditionFitter, per_k: np.ndarray, per_n: np.ndarray, levels: Sequence[float]
) -> np.ndarray:
    """[N, C, J] ln thresholds of the joint fit refitted without each participant (NaN
    where a refit failed), all N refits solved together from the full fit."""
    res = multi.result_
    keep = 1.0 - np.eye(per_k.shape[0])
    k_loo, n_loo = keep @ per_k, keep @ per_n
    theta, ll, _ = maximise(
        res.layout, np.tile(res.theta, (per_k.shape[0], 1)), k_loo, n_loo, **BOOT_TOLERANCES
    )
    theta[~np.isfinite(ll)] = np.nan
    return np.stack(
        [threshold_logs(res.layout, theta, levels, c) for c in range(len(multi.conditions_))],
        axis=1,
    )
