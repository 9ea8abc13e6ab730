"""What a simulated adaptive session's estimate estimates: the point where "too slow" or a
give-up reaches the procedure's target.

An adaptive procedure counts a give-up (Escape) as "too slow" (`uxlab.session`), so a
simulated person's session estimates where P(too slow or gave up) = target, not where
P(too slow) alone does: with the simulator's patience the two differ by several per cent
(docs/how-to/plan-study.md). This module gives that point for one observer (`own_point_ms`)
and for the median person of a population (`median_adaptive_point_ms`), on the procedure's
grid with one trial's recording played at each level (the give-up chance depends on when
the first token comes and when the stream ends). `study_adaptive_grid` builds those cues
from a study the way the session plays its first main trial; `uxlab.plan` passes its own.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from uxlab.simulate.observers import Cues, Observer, PopulationTruth, p_give_up, stream_cues
from uxlab.study.adaptive import AdaptivePlan, make_procedure, stimulus_grid
from uxlab.study.design import design_trials
from uxlab.study.spec import Study
from uxlab.study.stimulus import trial_schedule

TRUTH_PEOPLE = 2000
"""People drawn (a fixed seed) for the median person's point: its Monte-Carlo error is
about 0.7% of the point with a between-person SD of 0.25 ln ms."""


@dataclass(frozen=True)
class AdaptiveGrid:
    """An adaptive factor's grid (ms), one trial's cues at every grid level, the
    procedure's target P(too slow), the study's timeout (ms, None: none) and the factor."""

    factor: str
    grid_ms: np.ndarray
    cues: tuple[Cues, ...]
    target: float
    cap_ms: float | None


def study_adaptive_grid(study: Study) -> AdaptiveGrid | None:
    """The grid of `study`'s adaptive factor with its first main trial's recording played
    at each level (None: no adaptive factor, or one beside other within factors)."""
    plan = AdaptivePlan.for_study(study)
    if plan is None or plan.other_factors:
        return None
    trials = design_trials(study, "truth", 1)
    template = next((t for t in trials if not t.practice and t.attention is None), None)
    if template is None:
        return None
    grid = stimulus_grid(plan.spec.low, plan.spec.high, plan.spec.grid_points)
    cues = tuple(
        stream_cues(
            trial_schedule(
                study, dataclasses.replace(template, levels={**template.levels, plan.factor: x})
            )
        )
        for x in grid.tolist()
    )
    cap = study.abandon.timeout_s * 1000.0 if study.abandon.timeout_s else None
    target = make_procedure(plan.spec).estimate().target
    return AdaptiveGrid(plan.factor, np.asarray(grid, dtype=float), cues, target, cap)


def own_points_ms(
    people: Sequence[Observer],
    grid_ms: np.ndarray,
    cues: Sequence[Cues],
    target: float,
    cap_ms: float | None,
) -> np.ndarray:
    """Each observer's point (ms) where "too slow" or a give-up has probability `target`
    (interpolated on ln ms between grid levels; -inf / inf beyond the grid)."""
    if not people:
        return np.zeros(0)
    ttft = np.array([np.nan if c.ttft_ms is None else c.ttft_ms for c in cues], dtype=float)
    end = np.array([c.end_ms for c in cues], dtype=float)
    patience = np.array([obs.patience_scale_ms for obs in people])
    p_ab = p_give_up(people[0].truth, patience, ttft, end, cap_ms)  # [people, grid]
    grid_log = np.log(np.asarray(grid_ms, dtype=float))
    points = np.empty(len(people))
    for i, obs in enumerate(people):
        p_slow = np.array([obs.p_too_slow(c) for c in cues])
        p_no = np.maximum.accumulate(p_ab[i] + (1.0 - p_ab[i]) * p_slow)  # rising in latency
        points[i] = np.interp(target, p_no, grid_log, left=-np.inf, right=np.inf)
    return np.exp(points)


def median_adaptive_point_ms(
    study: Study,
    truth: PopulationTruth,
    grid_ms: np.ndarray,
    cues: Sequence[Cues],
    target: float,
    cap_ms: float | None,
) -> float:
    """The median over `TRUTH_PEOPLE` people drawn from `truth` of their own points
    (`own_points_ms`): what the median of the sessions' own estimates estimates."""
    rng = np.random.default_rng(2026)
    people = [Observer.draw(truth, rng, study) for _ in range(TRUTH_PEOPLE)]
    return float(np.median(own_points_ms(people, grid_ms, cues, target, cap_ms)))


_GRIDS: dict[str, AdaptiveGrid | None] = {}
_MEDIANS: dict[tuple[str, PopulationTruth], float] = {}


def adaptive_grid_of(study: Study) -> AdaptiveGrid | None:
    """`study_adaptive_grid`, once per study file's content in a process."""
    if study.sha256 not in _GRIDS:
        _GRIDS[study.sha256] = study_adaptive_grid(study)
    return _GRIDS[study.sha256]


def median_point_of(study: Study, truth: PopulationTruth) -> float | None:
    """`median_adaptive_point_ms` of `study`'s adaptive grid (None: it has none), once per
    study and truth in a process (2,000 people a time)."""
    grid = adaptive_grid_of(study)
    if grid is None:
        return None
    key = (study.sha256, truth)
    if key not in _MEDIANS:
        _MEDIANS[key] = median_adaptive_point_ms(
            study, truth, grid.grid_ms, grid.cues, grid.target, grid.cap_ms
        )
    return _MEDIANS[key]
