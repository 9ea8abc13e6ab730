"""One simulated study through the real path, for checking the planner against it.

`realised_thresholds` runs what `uxlab simulate` + `uxlab report` run: the study's bots
(`uxlab.simulate.simulate_cohort`: observers through the session and the SQLite store),
the export (`export_db`), the trial table (`load_trial_table`), the report's exclusions
and what it prints as the population's 50% point: on a fixed design its psychometric part
(`analysis.report.psychometric_estimate`: the steps `analysis.report.analyse` runs for it,
the pooled fit), on an adaptive design, where it withholds the pooled points, the median
of the sessions' own estimates with its interval (`analysis.report.estimate.
adaptive_estimate`). The rest of the report (ratings,
survival, per-participant fits) is skipped: it costs most of the time and does not
change the population thresholds. `uxlab simulate STUDY -n N --seed S --truth ...` then
`uxlab report DB --seed S --n-boot B` print the same pooled 50% threshold and interval in
`thresholds.csv` (tests/test_simulate_truth.py). benchmarks/plan_validation.py compares these
realised intervals with the plan's predictions; tests/test_plan_validation.py checks that
the planner analyses a study's answers as this path does.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

import numpy as np
import pandas as pd

from uxlab.plan.design import with_repeats
from uxlab.simulate import PopulationTruth, simulate_cohort
from uxlab.store import Store
from uxlab.store.export import export_db
from uxlab.study import load_study


def report_population(
    export_dir: Path, n_boot: int = 1000, seed: int = 0
) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(population table: level, estimate, ci_low, ci_high; the analysed trials with the
    judgement as 0 / 1 in `_y` and the stimulus in `_x`) of an export, as the report
    computes its psychometric part (no per-participant fits). On an adaptive design the
    table is the model's before the report withholds the points it measured missing the
    coverage goal there (`model_population`): the planner predicts what the model gives."""
    from analysis.report import ReportOptions, psychometric_estimate
    from analysis.trial_table import load_trial_table

    options = ReportOptions(n_boot=n_boot, seed=seed, per_participant=False)
    part, trials = psychometric_estimate(load_trial_table(export_dir), options)
    model = getattr(part, "model_population", None)
    return (model if model is not None else part.population), trials


def report_adaptive_median(export_dir: Path) -> pd.DataFrame | None:
    """The report's median of the sessions' own adaptive estimates as a population table
    (level, estimate, ci_low, ci_high: the median and its interval at 0.5, NaN at 0.25 and
    0.75, which the report withholds on an adaptive design); None when the export's
    sessions carry no adaptive estimate (a fixed design)."""
    from analysis.report import ReportOptions
    from analysis.report.estimate import adaptive_estimate
    from analysis.trial_table import load_trial_table

    part = adaptive_estimate(load_trial_table(export_dir), ReportOptions(per_participant=False))
    if part is None:
        return None
    median = part.medians.iloc[0]
    return pd.DataFrame(
        {
            "level": [0.25, 0.5, 0.75],
            "estimate": [np.nan, median["median"], np.nan],
            "ci_low": [np.nan, median["ci_low"], np.nan],
            "ci_high": [np.nan, median["ci_high"], np.nan],
        }
    )


def realised_thresholds(
    study_path: Path,
    n_people: int,
    repeats: int,
    truth: PopulationTruth,
    seed: int,
    n_boot: int = 1000,
    workdir: Path | None = None,
) -> pd.DataFrame:
    """The report's population thresholds (level, estimate, ci_low, ci_high in ms) of one
    study of `n_people` simulated participants at `repeats` (seed: the cohort's and the
    report's). `workdir` keeps the database and export (default: a deleted temp dir)."""
    study = with_repeats(load_study(study_path), repeats)
    with tempfile.TemporaryDirectory(prefix="uxlab-realised-") as tmp:
        where = Path(workdir or tmp)
        db = where / "study.sqlite"
        with Store.open(db, durable=False) as store:
            simulate_cohort(study, store, n_people, seed=seed, truth=truth)
        export_db(db, where / "export")
        population = report_adaptive_median(where / "export")
        if population is None:
            population = report_population(where / "export", n_boot, seed)[0]
    cols = ["level", "estimate", "ci_low", "ci_high"]
    return population[cols].astype(float).reset_index(drop=True)


def ci_at(population: pd.DataFrame, level: float = 0.5) -> np.ndarray:
    """(estimate, ci_low, ci_high) at one level of a population table."""
    row = population.set_index("level").loc[level]
    return np.array([row["estimate"], row["ci_low"], row["ci_high"]], dtype=float)
