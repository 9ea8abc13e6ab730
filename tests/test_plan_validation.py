"""The planner analyses a simulated study's answers as `uxlab report` does (what the report
prints: the pooled fit on a fixed design; on an adaptive one, where it withholds the pooled
points, the median of the sessions' own estimates with its interval).

The full predicted-vs-realised table is benchmarks/plan_validation.py; here one small study
of each kind goes through the real path (`benchmarks.support.realised`: simulate, SQLite, export,
trial table, the report's psychometric part or adaptive section) and the planner's analysis
of the same answers must give the same 50% interval.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from analysis.population_batch import population_thresholds_batch
from analysis.report import ReportOptions
from analysis.report.estimate import adaptive_estimate
from analysis.trial_table import load_trial_table
from benchmarks.support.realised import ci_at, report_adaptive_median, report_population
from uxlab.plan.design import with_repeats
from uxlab.plan.engine import LEVELS, adaptive_median_figures
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


def test_plan_analyses_a_fixed_design_as_the_report_does(tmp_path: Path) -> None:
    study = with_repeats(load_study(STUDIES / "ttft-threshold.toml"), 1)
    with Store.open(tmp_path / "s.sqlite", durable=False) as store:
        simulate_cohort(study, store, 5, seed=7, truth=PopulationTruth(between_sd_log=0.5))
    export_db(tmp_path / "s.sqlite", tmp_path / "export")
    population, trials = report_population(tmp_path / "export", n_boot=100, seed=3)
    assert report_adaptive_median(tmp_path / "export") is None  # no adaptive estimates
    levels, k, n = _counts(trials)
    fit = population_thresholds_batch(levels, k, n, n_boot=100, seeds=[3], levels=LEVELS)
    j = LEVELS.index(0.5)
    reported = ci_at(population)
    assert np.isfinite(reported).all()
    planned = np.array([fit.estimate_ms[0, j], fit.ci_low_ms[0, j], fit.ci_high_ms[0, j]])
    np.testing.assert_allclose(planned, reported, rtol=1e-6)


def test_plan_analyses_an_adaptive_design_as_the_report_does(tmp_path: Path) -> None:
    # 9 people: one may fail the attention bar and leave; 8 give the median its interval
    study = with_repeats(load_study(STUDIES / "ttft-quest.toml"), 5)
    with Store.open(tmp_path / "s.sqlite", durable=False) as store:
        simulate_cohort(study, store, 9, seed=7, truth=PopulationTruth(between_sd_log=0.5))
    export_db(tmp_path / "s.sqlite", tmp_path / "export")
    reported = ci_at(report_adaptive_median(tmp_path / "export"))
    assert np.isfinite(reported).all()
    part = adaptive_estimate(load_trial_table(tmp_path / "export"), ReportOptions())
    estimates = part.table["estimate"].to_numpy(float)[None, :]  # the analysed sessions'
    est, low, high = adaptive_median_figures(estimates, "quest")
    j = LEVELS.index(0.5)
    np.testing.assert_allclose([est[0, j], low[0, j], high[0, j]], reported, rtol=1e-12)
    # the pooled points, which the report withholds there, have no planned figure either
    assert np.isnan(est[0, [0, 2]]).all()
