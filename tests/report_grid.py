"""The report's validation grid: studies from the independent simulator
(`independent_tables`) analysed by the report's own analysis, every printed row scored.

One study: its trials are written as another lab's CSV and read the documented way
(`load_trial_table` with the column options `uxlab report` passes), then
`analysis.report.analyse` runs as the command does (figures are not drawn). Every row of
`thresholds.csv` that has an estimate (or an interval) is scored against its truth:

* `pooled`: the population curve's 25 / 50 / 75% points (with a second factor, the curve
  averaged over both conditions, which is what the pooled row estimates);
* `median-person`: the median person's own points;
* `condition`: each condition's population points;
* `ratio`: the ratio of condition 1's population 50% point to condition 0's;
* `person`: each person's own points (studies without a second factor; with one, a
  person's and the median person's rows mix both conditions and are not scored).

A row withheld (no estimate) counts as withheld, not as a miss; a bracket (separated
answers) counts as covering when it holds the truth. `benchmarks/report_validation.py`
prints the grid; tests/test_report_validation.py runs a few of its cells.
"""

from __future__ import annotations

import math
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from independent_tables import (
    LN9x2,
    Observers,
    Study,
    median_person_points_ms,
    person_point_ms,
    population_points_ms,
    simulate_study,
)
from scipy import optimize

ROW_KINDS = ("pooled", "median-person", "condition", "condition (before)", "ratio", "person")


@dataclass(frozen=True)
class Cell:
    """One cell of the grid: a study design and how many studies to run."""

    study: Study
    place: str = "between levels"

    @property
    def label(self) -> str:
        s = self.study
        return f"{s.design} | {s.observers.name} | {s.people} | {self.place}" + (
            " | 2 conditions" if s.conditions else ""
        )


def _mixture_points_ms(obs: Observers) -> dict[float, float]:
    """Where the average of the two conditions' population curves crosses each level."""
    rng = np.random.default_rng(2026)
    m0 = math.log(obs.centre_ms) + obs.offsets(40_000, rng)
    m1 = m0 + math.log(obs.ratio) + obs.ratio_sd_ln * rng.normal(size=m0.size)
    scale = obs.w_ln / LN9x2
    out = {}
    for level in (0.25, 0.5, 0.75):

        def share(u: float, level: float = level) -> float:
            f = 0.5 / (1.0 + np.exp(-(u - m0) / scale)) + 0.5 / (1.0 + np.exp(-(u - m1) / scale))
            return float(np.mean(f)) - level

        out[level] = float(np.exp(optimize.brentq(share, math.log(10.0), math.log(1e6))))
    return out


def truths(study: Study) -> dict[str, dict]:
    """The truth of every row kind that does not depend on who was drawn."""
    obs = study.observers
    out: dict[str, dict] = {"median-person": median_person_points_ms(obs)}
    if study.conditions:
        c0, c1 = population_points_ms(obs, 0), population_points_ms(obs, 1)
        out["pooled"] = _mixture_points_ms(obs)
        out["condition"] = {"itl_ms=20": c0, "itl_ms=60": c1}
        out["ratio"] = {0.5: c1[0.5] / c0[0.5]}
    else:
        out["pooled"] = population_points_ms(obs, 0)
    return out


def analyse_study(trials: pd.DataFrame, study: Study, n_boot: int, seed: int, folder: Path):
    """`uxlab report`'s analysis of the study written as another lab's CSV."""
    from analysis.foreign_table import ColumnMap
    from analysis.report import ReportOptions, analyse
    from analysis.trial_table import load_trial_table

    path = folder / "trials.csv"
    trials.drop(columns="true_m_ms").to_csv(path, index=False)
    columns = ColumnMap(
        stimulus="ttft_ms",
        judgement="too_slow",
        factors=("itl_ms",) if study.conditions else (),
    )
    options = ReportOptions(judgement="too_slow", n_boot=n_boot, seed=seed, progress=False)
    return analyse(load_trial_table(path, columns), options)


def _row_kind(row: pd.Series) -> str | None:
    if row["measure"] == "psychometric_ratio":
        return "ratio"
    if row["measure"] != "psychometric":
        return None
    if row["group"] == "median-person":
        return "median-person"
    if row["group"] == "pooled":
        return "pooled" if row["condition"] == "all" else "condition"
    if row["estimand"] == "this participant":
        return "person"
    return None


def score_study(thresholds: pd.DataFrame, trials: pd.DataFrame, study: Study, truth: dict):
    """(kind, level) -> list of (printed, covers, relative error) for one study's rows."""
    own = trials.groupby("participant")["true_m_ms"].first()
    out: dict[tuple[str, float], list] = defaultdict(list)
    for _, row in thresholds.iterrows():
        kind = _row_kind(row)
        if kind is None or (kind in ("person", "median-person") and study.conditions):
            continue
        level = float(row["level"])
        if kind == "person":
            true = person_point_ms(float(own[row["group"]]), study.observers, level)
        elif kind == "condition":
            true = truth["condition"][row["condition"]][level]
        else:
            true = truth[kind][level]
        est, low, high = (float(row[c]) for c in ("estimate", "ci_low", "ci_high"))
        b_low = float(row.get("bracket_low_ms", math.nan))
        b_high = float(row.get("bracket_high_ms", math.nan))
        if math.isfinite(low) and math.isfinite(high):
            out[(kind, level)].append(("interval", low <= true <= high, est / true - 1.0))
        elif math.isfinite(b_low) or math.isfinite(b_high):
            lo = b_low if math.isfinite(b_low) else 0.0
            hi = b_high if math.isfinite(b_high) else math.inf
            out[(kind, level)].append(("bracket", lo <= true <= hi, math.nan))
        elif math.isfinite(est):
            out[(kind, level)].append(("point", None, est / true - 1.0))
        else:
            out[(kind, level)].append(("withheld", None, math.nan))
    return out


def _before(trials: pd.DataFrame, truth: dict, n_boot: int, seed: int) -> dict:
    """The baseline: the per-condition intervals the report printed before (the joint
    fit's parametric bootstrap of the pooled counts, trials as independent)."""
    from analysis.psychometric import MultiConditionFitter

    fit = MultiConditionFitter().fit(
        trials, "ttft_ms", "too_slow", "itl_ms", share_lapse=True, n_boot=n_boot, seed=seed
    )
    out: dict[tuple[str, float], list] = defaultdict(list)
    for r in fit.thresholds_.itertuples():
        true = truth["condition"][f"itl_ms={float(r.condition):g}"][float(r.level)]
        out[("condition (before)", float(r.level))].append(
            ("interval", r.ci_low <= true <= r.ci_high, r.estimate / true - 1.0)
        )
    return out


def run_cell(cell: Cell, n_studies: int, n_boot: int, seed: int) -> list[dict]:
    """One row per row kind and level: how often printed with an interval, a bracket, a
    point only, withheld; coverage of the intervals (and brackets); bias of the estimates."""
    study = cell.study
    truth = truths(study)
    rng = np.random.default_rng([seed, study.people, len(cell.label)])
    pooled: dict[tuple[str, float], list] = defaultdict(list)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="report-grid-") as tmp:
        for s in range(n_studies):
            trials = simulate_study(study, rng)
            data = analyse_study(trials, study, n_boot, seed + s, Path(tmp))
            for key, scored in score_study(data.thresholds, trials, study, truth).items():
                pooled[key].extend(scored)
            if study.conditions:
                for key, scored in _before(trials, truth, n_boot, seed + s).items():
                    pooled[key].extend(scored)
    seconds = (time.perf_counter() - t0) / n_studies
    rows = []
    for (kind, level), scored in sorted(
        pooled.items(), key=lambda kv: (ROW_KINDS.index(kv[0][0]), kv[0][1])
    ):
        how = [h for h, _, _ in scored]
        interval = [c for h, c, _ in scored if h == "interval"]
        bracket = [c for h, c, _ in scored if h == "bracket"]
        errors = np.array([e for _, _, e in scored if math.isfinite(e)])
        rows.append(
            {
                "cell": cell.label,
                "row": kind,
                "level": level,
                "rows": len(scored),
                "interval": how.count("interval") / len(scored),
                "bracket": how.count("bracket") / len(scored),
                "withheld": how.count("withheld") / len(scored),
                "coverage": float(np.mean(interval)) if interval else math.nan,
                "bracket_coverage": float(np.mean(bracket)) if bracket else math.nan,
                "bias": float(np.mean(errors)) if errors.size else math.nan,
                "bias_se": float(np.std(errors, ddof=1) / math.sqrt(errors.size))
                if errors.size > 1
                else math.nan,
                # on the log scale the thresholds are fitted on: the geometric-mean ratio to
                # the truth, free of the Jensen term (about SD² / 2 of the log estimate) that
                # the arithmetic mean of est / true - 1 adds
                "log_bias": float(np.expm1(np.mean(np.log1p(errors)))) if errors.size else math.nan,
                "s_per_study": seconds,
            }
        )
    return rows
