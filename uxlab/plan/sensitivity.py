"""How far from the true threshold a published figure must lie for a study like this one to
exclude it 80% of the time: the power `uxlab plan` computes, on the report's own data.

Studies of the data's size and design are simulated from a truth fitted to the data
(`table_design`), its spread between people drawn from what N people tell of it
(`spread_draws`), and analysed like the report; a figure R times above (or below) each
study's true pooled 50% threshold is excluded when it lies outside that study's interval.
The smallest R excluded in `power` of the studies, the figure as often above as below, is the
design's sensitivity (Lakens 2022, "Sample size justification", section 8): what a verdict
of this study can tell apart. It rests on the design and on nuisance parameters (slope,
spread between people), not on where the estimate fell, so unlike a power computed from the
estimate it does not restate the verdict.
"""

from __future__ import annotations

import dataclasses

import numpy as np
import pandas as pd

from uxlab.plan.table_design import SimulatedStudies, simulate_studies, table_design
from uxlab.simulate.observers import PopulationTruth

SENSITIVITY_SIMS = 100
"""Studies simulated: the share excluded at the answer has a Monte-Carlo SE of 0.04."""
TRUTH_DRAWS = 100
"""Truths simulated, one a study: the fitted truth with its spread between people drawn
(`spread_draws`)."""
PERSON_BOOT = 20
"""Bootstrap datasets of each participant's fit (the SE of their threshold, taken out of the
truth's spread between people)."""
MAX_RATIO = 10.0
"""Ratios searched: a design that cannot tell apart figures 10 times apart says so."""


def exclusion_share(studies: SimulatedStudies, ratio: np.ndarray) -> np.ndarray:
    """[R] The share of studies excluding a figure `ratio` times from their truth, the
    figure as often above as below (an interval that failed excludes nothing)."""
    r = np.asarray(ratio, dtype=float)[:, None]
    truth = studies.truth_ms[None, :]
    above = np.nan_to_num(studies.ci_high_ms[None, :] < truth * r).astype(float)
    below = np.nan_to_num(studies.ci_low_ms[None, :] > truth / r).astype(float)
    share: np.ndarray = 0.5 * (above.mean(axis=1) + below.mean(axis=1))
    return share


def sensitivity_from(studies: SimulatedStudies, power: float = 0.8) -> float:
    """The smallest ratio excluded in `power` of `studies` (inf: none up to MAX_RATIO)."""
    ratios = np.exp(np.linspace(0.0, np.log(MAX_RATIO), 2001))
    reached = np.flatnonzero(exclusion_share(studies, ratios) >= power)
    return float(ratios[reached[0]]) if reached.size else float("inf")


def design_sensitivity(
    trials: pd.DataFrame,
    stimulus: str,
    judgement: str,
    *,
    power: float = 0.8,
    sims: int = SENSITIVITY_SIMS,
    seed: int = 0,
) -> float:
    """The design sensitivity of the report's kept `trials` (their own number of people);
    raises PlanError when no truth can be fitted to them. Each simulated study's interval is
    the participant jackknife-t without the floor the report puts under it (the pooled
    counts' parametric bootstrap): the floor costs four times the rest and moved the answer
    by less than 0.1% on 4 and 30 simulated people (2026-12-07)."""
    design = table_design(
        trials, stimulus, judgement, seed=seed, n_draws=0, person_boot=PERSON_BOOT
    )
    draws = spread_draws(design.pilot.point, design.pilot.n_participants, TRUTH_DRAWS, seed)
    design = dataclasses.replace(design, pilot=dataclasses.replace(design.pilot, draws=draws))
    studies = simulate_studies(design, design.n_people, sims=sims, n_boot=0, seed=seed)
    return sensitivity_from(studies, power)


def spread_draws(
    point: PopulationTruth, n_people: int, n_draws: int, seed: int
) -> list[PopulationTruth]:
    """The fitted truth with its spread between people drawn from what N people tell of it:
    a variance estimated from N people has N - 1 degrees of freedom, so the variance is drawn
    as the estimate x (N - 1) / chi-square(N - 1) (the scaled inverse chi-square, Gelman et
    al., "Bayesian Data Analysis", 3rd ed., section 3.2). With the fitted spread alone, or
    with truths drawn by resampling the people (as `uxlab plan --truth-from` does), the
    distance came out short: a figure at it was excluded by a median 0.63-0.70 of studies
    with 4-8 people instead of 0.8 (docs/explanation/validation.md)."""
    chi = np.random.default_rng([seed, n_people]).chisquare(max(n_people - 1, 1), n_draws)
    scale = np.sqrt(max(n_people - 1, 1) / chi)
    return [
        dataclasses.replace(point, between_sd_log=float(point.between_sd_log * f)) for f in scale
    ]
