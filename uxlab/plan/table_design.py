"""Whole studies simulated on the design of a trial table, analysed like the report.

The plan's machinery run on data a study already has, not on a study file: the truth is
estimated from the data (`plan.truth.truth_from_pilot`, its uncertainty carried by drawing
one truth per simulated study), the design is the data's own (its stimulus levels and the
median number of answered trials per level and participant, so give-ups and exclusions are
already in it), and each simulated study's pooled 50% threshold and its participant
jackknife-t interval are computed as the report computes them (`analysis.population_batch`).
`uxlab report --more-participants` (`more_people`) and the verdicts' power
(`sensitivity`) read them.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from uxlab.plan.truth import PilotTruth, truth_from_pilot, yes_falls
from uxlab.simulate.observers import Cues, Observer, pooled_thresholds_ms


@dataclass(frozen=True)
class TableDesign:
    """A trial table's design: its levels (ms, increasing), the answers a participant gives
    at each, whether "yes" falls with latency, and the truth fitted to its answers."""

    levels: np.ndarray
    n_level: np.ndarray
    falls: bool
    pilot: PilotTruth
    n_people: int


@dataclass(frozen=True)
class SimulatedStudies:
    """Per simulated study: the true pooled 50% threshold and the 95% interval (ms) the
    report would print for it (NaN where a fit failed)."""

    truth_ms: np.ndarray
    ci_low_ms: np.ndarray
    ci_high_ms: np.ndarray


def table_design(
    trials: pd.DataFrame,
    stimulus: str,
    judgement: str,
    seed: int = 0,
    n_draws: int = 200,
    person_boot: int = 200,
) -> TableDesign:
    """The design of `trials` (the report's kept trials) and `n_draws` truths fitted to them
    (`truth_from_pilot`); raises PlanError when none can be fitted."""
    from analysis.trial_table import binary_column

    pilot = truth_from_pilot(
        trials, stimulus, judgement, seed=seed, source="this data", n_draws=n_draws,
        person_boot=person_boot,
    )  # fmt: skip
    df = trials.assign(_y=binary_column(trials, judgement, "")).dropna(subset=["_y", stimulus])
    levels = np.sort(df[stimulus].astype(float).unique())
    per_person = df.groupby(["participant", stimulus]).size().unstack(fill_value=0)
    n_level = np.round(per_person.reindex(columns=levels, fill_value=0).median(axis=0))
    return TableDesign(
        levels, n_level.to_numpy(), yes_falls(df, stimulus), pilot, int(df["participant"].nunique())
    )


def simulate_studies(
    design: TableDesign, n_people: int, *, sims: int, n_boot: int, seed: int = 0
) -> SimulatedStudies:
    """`sims` studies of `n_people` on `design`, each from one of the fitted truths."""
    from analysis.population_batch import population_thresholds_batch

    levels, n_level = design.levels, design.n_level
    k = np.zeros((sims, n_people, levels.size))
    truth_ms = np.zeros(sims)
    for s in range(sims):
        rng = np.random.default_rng([seed, s, n_people])
        truth = design.pilot.draws[s % len(design.pilot.draws)]
        truth_ms[s] = pooled_thresholds_ms(
            truth.threshold_ms, truth.width_log, truth.between_sd_log
        )["0.5"]
        for p in range(n_people):
            obs = Observer.draw(truth, rng)
            p_slow = np.array([obs.p_too_slow(Cues(x, None, 0.0, x)) for x in levels])
            slow = rng.binomial(n_level.astype(int), p_slow)
            k[s, p] = n_level - slow if design.falls else slow
    n = np.broadcast_to(n_level, k.shape)
    fit = population_thresholds_batch(levels, k, n, n_boot=n_boot, seeds=range(sims))
    return SimulatedStudies(truth_ms, fit.ci_low_ms[:, 1], fit.ci_high_ms[:, 1])
