"""Simulated studies as the report sees them: "yes" counts per participant and level.

A study of P participants draws P observers (`uxlab.simulate.observers.Observer.draw`, the
observers of `uxlab simulate`) around its truth and gives each the session of
`plan.design.SessionDesign`:

- every main trial may be given up (the observer's patience: `p_give_up`, the probability
  of `Observer.give_up_ms` firing before the stream ends); a given-up trial has no answer
  (the study asks no questions after a give-up), as in the trial table;
- an answered trial says "too slow" with `Observer.p_too_slow` at the condition's cues;
- attention checks are failed with the observer's attention lapse (answering as usual
  then), and a participant under the report's bar (`ExclusionRules.min_attention_accuracy`)
  leaves the analysis, as in `analysis.exclusions`;
- with an adaptive factor the study's own procedure (`uxlab.study.adaptive`) picks every
  level from the answers so far; a give-up counts as "too slow" for it, as in the session.

Counts per condition are binomial draws (the trials of one condition are exchangeable for
the pooled fit); the adaptive runs go trial by trial. Nested designs share draws: the
first P observers of study s are the same in every cell, and an adaptive run of T trials
is the first T trials of the longest run (a procedure does not know its budget), so the
cells of one grid differ by design, not by luck.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

import numpy as np

from uxlab.plan.design import SessionDesign
from uxlab.simulate.observers import Cues, Observer, PopulationTruth, p_give_up
from uxlab.study.adaptive import make_procedure
from uxlab.study.spec import Study


def cue_times(cues: tuple[Cues, ...]) -> tuple[np.ndarray, np.ndarray]:
    """(ttft_ms, end_ms) arrays of trials' cues (NaN where no first token)."""
    ttft = np.array([np.nan if c.ttft_ms is None else c.ttft_ms for c in cues], dtype=float)
    return ttft, np.array([c.end_ms for c in cues], dtype=float)


def draw_people(
    study: Study, truth: PopulationTruth, n_people: int, rng: np.random.Generator
) -> list[Observer]:
    """The observers of one simulated study (participant 1 first)."""
    return [Observer.draw(truth, rng, study) for _ in range(n_people)]


def _yes_is_slow(study: Study) -> bool:
    q = study.judgement_question
    assert q is not None  # the planner refuses a study without one
    return (q.yes_means or "acceptable") != "acceptable"


def attention_kept(
    study: Study,
    design: SessionDesign,
    observers: list[Observer],
    rng: np.random.Generator,
    min_accuracy: float,
) -> np.ndarray:
    """[P] whether each participant passes the report's attention bar."""
    n_checks = len(design.attention)
    if n_checks == 0 or study.attention is None:
        return np.ones(len(observers), dtype=bool)
    yesno = study.judgement_question
    assert yesno is not None
    kept = np.empty(len(observers), dtype=bool)
    for i, obs in enumerate(observers):
        lapse = obs.truth.attention_lapse
        fails = 0.0
        for cues in design.attention:
            if study.attention.question == yesno.id:  # answered as usual when lapsing
                p_slow = obs.p_too_slow(cues)
                p_yes = p_slow if _yes_is_slow(study) else 1.0 - p_slow
                p_wrong = p_yes if design.attention_answer == "no" else 1.0 - p_yes
            else:
                p_wrong = 1.0
            fails += rng.random() < lapse * p_wrong
        kept[i] = (n_checks - fails) / n_checks >= min_accuracy
    return kept


def judged_p_slow(design: SessionDesign, observers: list[Observer]) -> np.ndarray:
    """[P, C] P(too slow) of each observer in each main condition (its median cues)."""
    judged = [c.judged for c in design.conditions]
    return np.array([[obs.p_too_slow(c) for c in judged] for obs in observers])


def constant_counts(
    study: Study,
    design: SessionDesign,
    observers: list[Observer],
    p_slow: np.ndarray,
    rng: np.random.Generator,
    levels_ms: np.ndarray,
) -> tuple[np.ndarray, np.ndarray]:
    """k, n [P, L]: "yes" answers and answered trials per participant and stimulus level,
    with `p_slow` [P, C] from `judged_p_slow` (conditions as in `design`)."""
    cap = study.abandon.timeout_s * 1000.0 if study.abandon.timeout_s else None
    slow_yes = _yes_is_slow(study)
    truth = observers[0].truth
    scales = np.array([obs.patience_scale_ms for obs in observers])
    k = np.zeros((len(observers), levels_ms.size))
    n = np.zeros_like(k)
    for c, cond in enumerate(design.conditions):
        j = int(np.searchsorted(levels_ms, cond.stimulus_ms))
        p_ab = p_give_up(truth, scales, *cue_times(cond.cues), cap).mean(axis=1)
        n_trials = len(cond.cues)
        answered = n_trials - rng.binomial(n_trials, p_ab)
        slow = rng.binomial(answered, p_slow[:, c])
        k[:, j] += slow if slow_yes else answered - slow
        n[:, j] += answered
    return k, n


class AdaptiveRuns(NamedTuple):
    """Each participant's adaptive run: the level index [P, T] and answer [P, T] (1 "yes",
    0 "no", -1 given up) of every trial, in order, and the procedure's own estimate (ms, as
    the session stores it) after some numbers of trials: {trials: [P]}."""

    where: np.ndarray
    answer: np.ndarray
    estimates: dict[int, np.ndarray]


def adaptive_runs(
    study: Study,
    design: SessionDesign,
    observers: list[Observer],
    rng: np.random.Generator,
    estimates_at: Sequence[int] = (),
) -> AdaptiveRuns:
    """Each participant's adaptive run of the design's trials, in order (`AdaptiveRuns`),
    with the procedure's own estimate (ms) after each number of trials in `estimates_at`."""
    plan = design.adaptive
    assert plan is not None and design.adaptive_grid_ms is not None
    cap = study.abandon.timeout_s * 1000.0 if study.abandon.timeout_s else None
    slow_yes = _yes_is_slow(study)
    grid = design.adaptive_grid_ms
    n_t = design.n_adaptive_trials
    where = np.zeros((len(observers), n_t), dtype=int)
    answer = np.zeros((len(observers), n_t), dtype=int)
    track_seed = int.from_bytes(b"all\0", "big") ^ plan.seed  # as AdaptivePlan.procedure
    # [T, G]: trial t's own recording at every grid level (else the template's)
    by_trial = design.adaptive_trial_cues or (design.adaptive_cues,) * n_t
    ttft, end = cue_times(tuple(c for row in by_trial for c in row))
    estimates = {t: np.full(len(observers), np.nan) for t in estimates_at}
    for i, obs in enumerate(observers):
        p_ab = p_give_up(obs.truth, np.array([obs.patience_scale_ms]), ttft, end, cap)[0]
        p_ab = p_ab.reshape(len(by_trial), grid.size)
        p_slow = [obs.p_too_slow(c) for c in design.adaptive_cues]
        proc = make_procedure(plan.spec, track_seed)
        for t in range(n_t):
            x = proc.next_level()
            j = int(np.argmin(np.abs(np.log(grid) - np.log(x))))
            gave_up = rng.random() < p_ab[t, j]
            too_slow = True if gave_up else bool(rng.random() < p_slow[j])
            where[i, t] = j
            answer[i, t] = -1 if gave_up else int(too_slow == slow_yes)
            proc.update(x, too_slow)
            if t + 1 in estimates:
                estimates[t + 1][i] = proc.estimate().threshold_ms
    return AdaptiveRuns(where, answer, estimates)


def adaptive_counts(
    where: np.ndarray, answer: np.ndarray, n_trials: int, n_levels: int
) -> tuple[np.ndarray, np.ndarray]:
    """k, n [P, L] of the first `n_trials` trials of each run."""
    w, a = where[:, :n_trials], answer[:, :n_trials]
    rows = np.repeat(np.arange(w.shape[0]), w.shape[1])
    k = np.zeros((w.shape[0], n_levels))
    n = np.zeros_like(k)
    answered = (a >= 0).ravel()
    np.add.at(n, (rows[answered], w.ravel()[answered]), 1.0)
    np.add.at(k, (rows[answered], w.ravel()[answered]), (a.ravel()[answered] == 1) * 1.0)
    return k, n
