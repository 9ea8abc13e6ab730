"""Running a plan: simulated studies in every grid cell, analysed like the report, in processes.

`run_plan(spec)` splits the `n_sims` simulated studies into chunks; a worker process takes
one chunk through every cell of the grid (participants x repeats): it draws each study's
observers once (the first P of them make the cell with P participants), simulates the
sessions at every number of repeats (`plan.simulate_cell`) and analyses each cell's
studies in one batch with `analysis.population_batch` (the report's pooled thresholds and
their participant intervals). On an adaptive design the report withholds the pooled points
(measured to miss there) and prints the median of the sessions' own procedure estimates
with the sign test's interval of a median: each study's figures are then that median and
interval at the 50% column (`adaptive_median_figures`), 25% / 75% without a figure. The
parent collects the per-study intervals and prints a progress line on stderr.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, NamedTuple

import numpy as np

from uxlab.plan.design import SessionDesign, session_design
from uxlab.plan.simulate_cell import (
    adaptive_counts,
    adaptive_runs,
    attention_kept,
    constant_counts,
    draw_people,
    judged_p_slow,
)
from uxlab.simulate.adaptive_truth import median_point_of
from uxlab.simulate.observers import PopulationTruth, study_truth
from uxlab.study import load_study
from uxlab.study.spec import Study

if TYPE_CHECKING:
    from analysis.population_batch import BatchThresholds

LEVELS = (0.25, 0.5, 0.75)


@dataclass(frozen=True)
class PlanSpec:
    """What to simulate: the study, the grid, the truth(s), how many studies per cell."""

    study_path: Path
    participants: tuple[int, ...]
    repeats: tuple[int, ...]
    truths: tuple[PopulationTruth, ...]
    """One truth, or draws of it (study s uses truths[s % len(truths)])."""
    n_sims: int = 200
    n_boot: int = 200
    seed: int = 0
    min_attention_accuracy: float = 0.75


@dataclass
class CellResults:
    """Per simulated study of one cell: estimates and 95% intervals (ms) per level [S, 3],
    participants left after the attention bar [S], and the truth per level [S, 3]."""

    estimate_ms: np.ndarray
    ci_low_ms: np.ndarray
    ci_high_ms: np.ndarray
    n_kept: np.ndarray
    true_ms: np.ndarray


@dataclass
class PlanResults:
    spec: PlanSpec
    designs: dict[int, SessionDesign]
    cells: dict[tuple[int, int], CellResults] = field(default_factory=dict)
    seconds: float = 0.0
    jobs: int = 1


def true_thresholds(study: Study, stimulus: str, truth: PopulationTruth) -> np.ndarray:
    """[3] the population's pooled thresholds at LEVELS (NaN when the truth record has
    none for this stimulus)."""
    pooled = study_truth(study, truth)["pooled_thresholds_ms"].get(stimulus)
    if pooled is None:
        return np.full(len(LEVELS), np.nan)
    return np.array([pooled[str(level)] for level in LEVELS])


def study_levels(design: SessionDesign) -> np.ndarray:
    """The stimulus levels (ms) the trial table can hold, increasing."""
    if design.adaptive_grid_ms is not None:
        return np.asarray(design.adaptive_grid_ms, dtype=float)
    return np.array(sorted({c.stimulus_ms for c in design.conditions}), dtype=float)


def bootstrap_seed(seed: int, study: int) -> int:
    return int(np.random.SeedSequence([seed, study, 3]).generate_state(1)[0])


_STUDY_CACHE: dict[tuple[Path, tuple[int, ...]], tuple[Study, dict[int, SessionDesign]]] = {}


def _study_and_designs(spec: PlanSpec) -> tuple[Study, dict[int, SessionDesign]]:
    """The study and its session at every number of repeats (cached per process)."""
    key = (spec.study_path, spec.repeats)
    if key not in _STUDY_CACHE:
        study = load_study(spec.study_path)
        designs = {r: session_design(study, r) for r in spec.repeats}
        _STUDY_CACHE[key] = (study, designs)
    return _STUDY_CACHE[key]


class StudyCounts(NamedTuple):
    """One simulated study at one number of repeats: "yes" counts k and trials n
    [P_max, L], and on an adaptive design each participant's own procedure estimate (ms)
    [P_max] (NaN for a participant the report leaves out), else None."""

    k: np.ndarray
    n: np.ndarray
    estimates: np.ndarray | None = None


def simulate_counts(
    spec: PlanSpec, study: Study, designs: dict[int, SessionDesign], s: int
) -> dict[int, StudyCounts]:
    """Study s at every number of repeats (`StudyCounts`), with participants under the
    attention bar given no trials (the report leaves them out)."""
    truth = spec.truths[s % len(spec.truths)]
    n_max, r_max = max(spec.participants), max(spec.repeats)
    people = draw_people(study, truth, n_max, np.random.default_rng([spec.seed, s, 0]))
    longest = designs[r_max]
    levels = study_levels(longest)
    out = {}
    runs = None
    if longest.adaptive is not None:
        rng = np.random.default_rng([spec.seed, s, 1])
        budgets = sorted({designs[r].n_adaptive_trials for r in spec.repeats})
        runs = adaptive_runs(study, longest, people, rng, estimates_at=budgets)
    else:
        p_slow = judged_p_slow(longest, people)
        order = {c.condition_id: i for i, c in enumerate(longest.conditions)}
    for r in spec.repeats:
        d = designs[r]
        estimates = None
        if runs is not None:
            k, n = adaptive_counts(runs.where, runs.answer, d.n_adaptive_trials, levels.size)
            estimates = runs.estimates[d.n_adaptive_trials]
        else:
            cols = [order[c.condition_id] for c in d.conditions]
            rng = np.random.default_rng([spec.seed, s, 2, r])
            k, n = constant_counts(study, d, people, p_slow[:, cols], rng, levels)
        rng = np.random.default_rng([spec.seed, s, 4, r])
        kept = attention_kept(study, d, people, rng, spec.min_attention_accuracy)
        if estimates is not None:
            estimates = np.where(kept, estimates, np.nan)
        out[r] = StudyCounts(k * kept[:, None], n * kept[:, None], estimates)
    return out


def run_chunk(spec: PlanSpec, first: int, last: int) -> dict[tuple[int, int], CellResults]:
    """Studies first..last-1 through every cell (one worker's task)."""
    from analysis.population_batch import population_thresholds_batch

    study, designs = _study_and_designs(spec)
    stimulus = designs[spec.repeats[0]].stimulus
    levels = study_levels(designs[max(spec.repeats)])
    counts = [simulate_counts(spec, study, designs, s) for s in range(first, last)]
    truth_ms = np.array(
        [
            true_thresholds(study, stimulus, spec.truths[s % len(spec.truths)])
            for s in range(first, last)
        ]
    )
    seeds = [bootstrap_seed(spec.seed, s) for s in range(first, last)]
    median_truth = None  # [S, 3]: the adaptive median's truth at the 50% column
    if designs[spec.repeats[0]].adaptive is not None:  # as `uxlab simulate` stores it
        median_truth = np.full((last - first, len(LEVELS)), np.nan)
        for i, s in enumerate(range(first, last)):
            point = median_point_of(study, spec.truths[s % len(spec.truths)])
            median_truth[i, LEVELS.index(0.5)] = np.nan if point is None else point
    out = {}
    for r in spec.repeats:
        adaptive = designs[r].adaptive
        for p in spec.participants:
            if adaptive is not None:  # what the report prints there: see the module
                estimates = np.stack([_estimates(c[r])[:p] for c in counts])
                procedure = adaptive.spec.procedure
                figures = adaptive_median_figures(estimates, procedure)
                n_kept = np.isfinite(estimates).sum(axis=1)
                assert median_truth is not None
                out[(p, r)] = CellResults(*figures, n_kept, median_truth)
                continue
            k = np.stack([c[r].k[:p] for c in counts])
            n = np.stack([c[r].n[:p] for c in counts])
            fit = population_thresholds_batch(
                levels, k, n, n_boot=spec.n_boot, seeds=seeds, levels=LEVELS
            )
            withhold_tails_as_the_report(fit, k, n)
            out[(p, r)] = CellResults(
                fit.estimate_ms, fit.ci_low_ms, fit.ci_high_ms, fit.n_participants, truth_ms
            )
    return out


def _estimates(counts: StudyCounts) -> np.ndarray:
    assert counts.estimates is not None  # an adaptive design's study
    return counts.estimates


def adaptive_median_figures(
    estimates: np.ndarray, procedure: str
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(estimate, low, high) [S, 3] ms of S studies of an adaptive design from each
    participant's own procedure estimate [S, P] (NaN: left out): what the report prints
    there (`analysis.report.adaptive_part.median_with_interval`), the median and its
    interval at the 50% column, NaN at 25% / 75% (the report withholds the pooled points)."""
    from analysis.report.adaptive_part import median_with_interval

    out = np.full((3, estimates.shape[0], len(LEVELS)), np.nan)
    j = LEVELS.index(0.5)
    for s, row in enumerate(estimates):
        out[:, s, j] = median_with_interval(row, procedure)
    return out[0], out[1], out[2]


def withhold_tails_as_the_report(fit: BatchThresholds, k: np.ndarray, n: np.ndarray) -> None:
    """Blank the 25% / 75% figures of each of S studies of a fixed design [S, P, L] where
    the report withholds them (`analysis.report.psychometric_withheld`): fewer than
    `MIN_TAILS` participants, fewer than `MIN_TAIL_ANSWERS` answers a person gives a level
    (the median), or a `STEEP_PEOPLE_SHARE` of the people whose own answers separate."""
    from analysis.report.psychometric_withheld import (
        MIN_TAIL_ANSWERS,
        MIN_TAILS,
        STEEP_PEOPLE_SHARE,
    )
    from analysis.separation import count_separating

    for s in range(k.shape[0]):
        people = n[s].sum(axis=1) > 0
        counts = n[s][people]
        if not fit.direction[s] or not people.any():
            continue
        rising = fit.direction[s] == "rising"
        acceptable = (n[s] - k[s] if rising else k[s])[people]
        separated = count_separating(acceptable, counts - acceptable)
        if (
            people.sum() < MIN_TAILS
            or float(np.median(counts[counts > 0])) < MIN_TAIL_ANSWERS
            or separated >= STEEP_PEOPLE_SHARE * people.sum()
        ):
            _withhold_all_but_50(fit, s)


def _withhold_all_but_50(fit: BatchThresholds, s: int) -> None:
    others = [j for j, level in enumerate(LEVELS) if level != 0.5]
    for table in (fit.estimate_ms, fit.ci_low_ms, fit.ci_high_ms):
        table[s, others] = np.nan


def default_jobs() -> int:
    return max(1, min(os.cpu_count() or 1, 4))


def run_plan(
    spec: PlanSpec,
    *,
    jobs: int | None = None,
    progress: Callable[[int, int, float], None] | None = None,
) -> PlanResults:
    """Simulate and analyse every cell (see the module docstring)."""
    started = time.perf_counter()
    jobs = default_jobs() if jobs is None else max(1, jobs)
    _, designs = _study_and_designs(spec)  # fails early, in this process, on a bad study
    per_chunk = max(1, min(25, -(-spec.n_sims // (jobs * 3))))
    chunks = [(a, min(a + per_chunk, spec.n_sims)) for a in range(0, spec.n_sims, per_chunk)]
    parts: list[tuple[int, dict[tuple[int, int], CellResults]]] = []
    done = 0

    def collect(first: int, last: int, part: dict[tuple[int, int], CellResults]) -> None:
        nonlocal done
        parts.append((first, part))
        done += last - first
        if progress is not None:
            progress(done, spec.n_sims, time.perf_counter() - started)

    if jobs == 1 or len(chunks) == 1:
        for a, b in chunks:
            collect(a, b, run_chunk(spec, a, b))
    else:
        with ProcessPoolExecutor(max_workers=jobs) as pool:
            futures = {pool.submit(run_chunk, spec, a, b): (a, b) for a, b in chunks}
            for fut in as_completed(futures):
                a, b = futures[fut]
                collect(a, b, fut.result())
    parts.sort(key=lambda x: x[0])
    results = PlanResults(spec, designs, jobs=jobs)
    for key in parts[0][1]:
        pieces = [part[key] for _, part in parts]
        results.cells[key] = CellResults(
            *(
                np.concatenate([getattr(c, f) for c in pieces])
                for f in CellResults.__dataclass_fields__
            )
        )
    results.seconds = time.perf_counter() - started
    return results


def progress_line(done: int, total: int, seconds: float, cells: int, width: int = 30) -> None:
    """`[#########.....]  60/200 simulated studies in each of 48 cells, 21 s` on stderr;
    into a file or pipe (a log), only the finished count, not every redraw."""
    if not sys.stderr.isatty() and done < total:
        return
    filled = int(width * done / max(total, 1))
    bar = "#" * filled + "." * (width - filled)
    end = "\n" if done >= total else ""
    print(
        f"\r  [{bar}] {done:>{len(str(total))}}/{total} simulated studies in each of {cells} "
        f"cells, {seconds:.0f} s",
        end=end,
        file=sys.stderr,
        flush=True,
    )
