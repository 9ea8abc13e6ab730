"""The planner analyses a simulated study's answers as `uxlab report` does (the estimator
the report picks: pooled fit on a fixed design, random-intercept model on an adaptive one).

The full predicted-vs-realised table is benchmarks/plan_validation.py; here one small study
of each kind goes through the real path (`benchmarks.support.realised`: simulate, SQLite, export,
trial table, the report's psychometric part) and the planner's analysis of the same answers
must give the same 50% interval.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from analysis.population_batch import population_thresholds_batch
from benchmarks.support.realised import ci_at, report_population
from uxlab.plan.design import with_repeats
from uxlab.plan.engine import LEVELS, apply_adaptive_figures
from uxlab.simulate import simulate_cohort
from uxlab.simulate.observers import PopulationTruth
from uxlab.store import Store
from uxlab.store.export import export_db
from uxlab.study import load_study

STUDIES = Path(__file__).resolve().parents[1] / "studies"


def _counts(trials) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """levels [L], k, n [1, P, L] of the analysed trials (k: "yes" answers)."""
    levels = np.sort(trials["_x"].unique())
    person = trials["participant"].astype("category").cat.codes.to_numpy()
    where = np.searchsorted(levels, trials["_x"].to_numpy())
    k = np.zeros((person.max() + 1, levels.size))
    n = np.zeros_like(k)
    np.add.at(k, (person, where), trials["_y"].to_numpy(float))
    np.add.at(n, (person, where), 1.0)
    return levels, k[None], n[None]


@pytest.mark.parametrize(
    ("study_file", "people", "repeats", "adaptive"),
    [("ttft-quest.toml", 5, 5, True), ("ttft-threshold.toml", 5, 1, False)],
)
def test_plan_analyses_a_study_as_the_report_does(
    tmp_path: Path, study_file: str, people: int, repeats: int, adaptive: bool
) -> None:
    study = with_repeats(load_study(STUDIES / study_file), repeats)
    truth = PopulationTruth(between_sd_log=0.5)
    with Store.open(tmp_path / "s.sqlite", durable=False) as store:
        simulate_cohort(study, store, people, seed=7, truth=truth)
    export_db(tmp_path / "s.sqlite", tmp_path / "export")
    population, trials = report_population(tmp_path / "export", n_boot=100, seed=3)
    levels, k, n = _counts(trials)
    fit = population_thresholds_batch(levels, k, n, n_boot=100, seeds=[3], levels=LEVELS)
    j = LEVELS.index(0.5)
    reported = ci_at(population)
    assert np.isfinite(reported).all()
    if adaptive:  # the pooled fit alone is another estimator: it would not match
        pooled = np.array([fit.estimate_ms[0, j], fit.ci_low_ms[0, j], fit.ci_high_ms[0, j]])
        assert not np.allclose(pooled, reported, rtol=1e-3)
        apply_adaptive_figures(fit, levels, k, n)
    planned = np.array([fit.estimate_ms[0, j], fit.ci_low_ms[0, j], fit.ci_high_ms[0, j]])
    np.testing.assert_allclose(planned, reported, rtol=1e-6)
