"""One participant's session of a study at a given number of repeats, as the planner needs it.

`session_design(study, repeats)` builds the study's real trial list (`design_trials` on the
study with `[design] repeats` replaced) and the real schedule of every trial
(`trial_schedule`), and keeps what the simulated observers react to: per main condition the
stimulus level, the cues of each of its trials (`stream_cues`: TTFT, gaps, end), the
attention checks, and the session's duration from the study's own estimate
(`estimate_duration`). For an adaptive factor it also keeps the cues at every level of the
procedure's grid (levels are chosen while the session runs) and the adaptive plan; the
give-ups of adaptive trial t use the cues of that trial's own recording at each level
(`adaptive_trial_cues`: the recordings differ in length, and patience runs to the end).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

import numpy as np

from uxlab.errors import UxlabError
from uxlab.simulate.observers import Cues, stream_cues
from uxlab.study.adaptive import AdaptivePlan, stimulus_grid
from uxlab.study.design import Trial, design_trials
from uxlab.study.estimate import estimate_duration
from uxlab.study.spec import Study
from uxlab.study.stimulus import trial_schedule

PLAN_PARTICIPANT = "PLAN-001"


class PlanError(UxlabError):
    """A study or option the planner cannot simulate, with what would work."""


@dataclass(frozen=True)
class ConditionCues:
    """One main condition: its stimulus level and the cues of its trials in one session."""

    condition_id: str
    stimulus_ms: float
    cues: tuple[Cues, ...]

    @property
    def judged(self) -> Cues:
        """The cues the judgement is drawn from: the median over the condition's trials."""

        def med(xs: list[float | None]) -> float:
            return float(np.median([x for x in xs if x is not None]))

        c = self.cues
        gaps = [x.median_gap_ms for x in c if x.median_gap_ms is not None]
        return Cues(
            med([x.ttft_ms for x in c]) if any(x.ttft_ms is not None for x in c) else None,
            float(np.median(gaps)) if gaps else None,
            med([x.gap_cv for x in c]),
            med([x.end_ms for x in c]),
            round(med([x.n_calls for x in c])),
        )


@dataclass(frozen=True)
class SessionDesign:
    """What one participant does at `repeats` (see the module docstring)."""

    repeats: int
    stimulus: str
    conditions: tuple[ConditionCues, ...]
    attention: tuple[Cues, ...]
    attention_answer: str | None
    duration_s: float
    adaptive: AdaptivePlan | None = None
    adaptive_grid_ms: np.ndarray | None = None
    adaptive_cues: tuple[Cues, ...] = ()
    n_adaptive_trials: int = 0
    adaptive_trial_cues: tuple[tuple[Cues, ...], ...] = ()
    """Per adaptive trial, in session order: the cues of its recording at every grid level."""

    @property
    def n_main_trials(self) -> int:
        return sum(len(c.cues) for c in self.conditions) + self.n_adaptive_trials


def stimulus_factor(study: Study) -> str:
    """The latency factor the report fits (as `analysis.report.choose_columns` picks it):
    ttft_ms, else the first factor in ms with 3 or more levels (or adaptive)."""
    candidates = [f for f in study.within_factors if f.adaptive or len(f.levels) >= 3]
    names = [f.name for f in candidates]
    preferred = [n for n in names if n == "ttft_ms"] + [n for n in names if n.endswith("_ms")]
    pick = next(iter(preferred or names), None)
    if pick is None:
        raise PlanError(
            f"{study.path}: no latency factor with 3 or more levels (or an adaptive one) to "
            "fit a threshold on; the planner simulates the report's psychometric threshold"
        )
    return pick


def check_plannable(study: Study) -> None:
    """Refuse what the planner does not simulate, saying why."""
    if study.kind.plan_problem is not None:  # a live study's
        raise PlanError(f"{study.path}: {study.kind.plan_problem}")
    if study.between_factors:
        names = ", ".join(f.name for f in study.between_factors)
        raise PlanError(
            f"{study.path}: between-participant factors ({names}) are not simulated by "
            "`uxlab plan` yet; plan the study without them (the pooled threshold ignores them)"
        )
    if study.judgement_question is None:
        raise PlanError(
            f"{study.path}: no yes/no trial question; the planner simulates the report's "
            "psychometric threshold, which is fitted to a yes/no judgement"
        )


def with_repeats(study: Study, repeats: int) -> Study:
    """The study with `[design] repeats = repeats` (everything else unchanged)."""
    return dataclasses.replace(study, design=dataclasses.replace(study.design, repeats=repeats))


def session_design(study: Study, repeats: int) -> SessionDesign:
    """One participant's session at `repeats` (see the module docstring)."""
    check_plannable(study)
    stimulus = stimulus_factor(study)
    varied = with_repeats(study, repeats)
    trials = design_trials(varied, PLAN_PARTICIPANT, 1)
    plan = AdaptivePlan.for_study(varied)
    by_condition: dict[str, list[tuple[float, Cues]]] = {}
    attention: list[Cues] = []
    adaptive_trials: list[Trial] = []
    for t in trials:
        if t.practice:
            continue
        if t.attention is not None:
            attention.append(stream_cues(trial_schedule(varied, t)))
            continue
        if plan is not None:
            adaptive_trials.append(t)
            continue
        cues = stream_cues(trial_schedule(varied, t))
        by_condition.setdefault(t.condition_id, []).append((float(t.levels[stimulus]), cues))
    conditions = tuple(
        ConditionCues(cid, rows[0][0], tuple(c for _, c in rows))
        for cid, rows in by_condition.items()
    )
    grid = None
    grid_cues: tuple[Cues, ...] = ()
    trial_cues: tuple[tuple[Cues, ...], ...] = ()
    if plan is not None:
        if plan.factor != stimulus or plan.other_factors:
            raise PlanError(
                f"{study.path}: an adaptive factor with other within factors beside it is not "
                "simulated by `uxlab plan` yet"
            )
        grid = stimulus_grid(plan.spec.low, plan.spec.high, plan.spec.grid_points)
        template = next(t for t in trials if not t.practice and t.attention is None)
        grid_cues = tuple(_cues_at(varied, template, stimulus, float(x)) for x in grid)
        per_recording: dict[str | None, tuple[Cues, ...]] = {}
        for t in adaptive_trials:  # one trial of each recording stands for all of its trials
            if t.replay_id not in per_recording:
                per_recording[t.replay_id] = tuple(
                    _cues_at(varied, t, stimulus, float(x)) for x in grid
                )
        trial_cues = tuple(per_recording[t.replay_id] for t in adaptive_trials)
    return SessionDesign(
        repeats=repeats,
        stimulus=stimulus,
        conditions=conditions,
        attention=tuple(attention),
        attention_answer=study.attention.answer if study.attention else None,
        duration_s=estimate_duration(varied, trials).total_s,
        adaptive=plan,
        adaptive_grid_ms=grid,
        adaptive_cues=grid_cues,
        n_adaptive_trials=len(adaptive_trials),
        adaptive_trial_cues=trial_cues,
    )


def _cues_at(study: Study, template: Trial, factor: str, level: float) -> Cues:
    """The cues of `template` played at `factor` = `level` (an adaptive level)."""
    trial = dataclasses.replace(template, levels={**template.levels, factor: level})
    return stream_cues(trial_schedule(study, trial))
