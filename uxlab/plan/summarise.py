"""From simulated studies to the plan's table and its recommendation.

One row per cell (participants x repeats): the session's length from the study's own
estimate and the participant-minutes it costs, the expected (mean) width of the 95%
interval of each threshold (25/50/75%) and its median, coverage (how often the interval
holds the population's pooled threshold), power (how often the interval of the 50%
threshold leaves out the reference figure), how many participants the attention bar kept,
how many studies gave no interval, and whether the cell meets every target. As in the
report, a study left with fewer participants than the report's minimum
(`analysis.report.support.MIN_POPULATION`, set from its measured coverage) has no
population interval: it counts against power and is left out of widths and coverage. Every share
comes from `n_sims` studies; its Monte-Carlo standard error is sqrt(p (1 - p) / n_sims).

An assurance target (``ci_width<=200ms@80%``) adds the share of all the cell's studies whose
95% interval at its level is at most that wide (a study with no interval fails) and that
share's Monte-Carlo standard error. On adaptive designs the widths can be heavy-tailed: a
few enormous intervals make the mean large and unstable while the median barely moves
(`heavy_tailed_cells` finds the cells where the mean is over `HEAVY_TAIL_RATIO` times the
median).
"""

from __future__ import annotations

import math
from collections.abc import Mapping

import numpy as np
import pandas as pd

from uxlab.plan.engine import LEVELS, CellResults, PlanResults
from uxlab.plan.grid import Reference, Target

HEAVY_TAIL_RATIO = 1.5
"""A cell's mean width over its median above which the plan calls the widths heavy-tailed:
between the ratios of cells whose mean was stable and of those whose mean ran away
(measured in docs/how-to/plan-study.md, under `--target`). A lognormal spread of widths reaches 1.5
at an SD of 0.9 (ln width)."""


def level_tag(level: float) -> str:
    """The column tag of a threshold level: 0.5 -> "50"."""
    return f"{int(level * 100)}"


def assurance_share(widths: np.ndarray, max_ms: float) -> float:
    """The share of studies whose interval is at most `max_ms` wide (NaN, no interval:
    fails), over all of them."""
    with np.errstate(invalid="ignore"):
        return float(np.mean(np.isfinite(widths) & (widths <= max_ms)))


def share_se(share: float, n: int) -> float:
    """The binomial Monte-Carlo standard error of a share of `n` simulated studies."""
    return math.sqrt(share * (1.0 - share) / n) if n > 0 else math.nan


def report_minimum(claim: str = "population") -> int:
    """The fewest participants the report gives a `claim`'s interval for (`MINIMUMS`: the
    population thresholds by default, `adaptive_median` on an adaptive design)."""
    try:
        from analysis.report.support import MINIMUMS
    except ImportError:  # an analysis package without that rule
        return 2
    return int(MINIMUMS[claim].min_participants)


def cell_table(
    results: PlanResults, reference: Reference | None, targets: list[Target]
) -> pd.DataFrame:
    """The plan's table (see the module docstring), sorted by participants, then repeats."""
    min_participants = report_minimum()
    rows: list[dict[str, float | bool | None]] = []
    for (p, r), cell in sorted(results.cells.items()):
        design = results.designs[r]
        minutes = design.duration_s / 60.0
        # as the report: no population interval from fewer than its minimum of participants
        enough = (cell.n_kept >= min_participants)[:, None]
        low = np.where(enough, cell.ci_low_ms, np.nan)
        high = np.where(enough, cell.ci_high_ms, np.nan)
        width = high - low  # [S, 3]
        ok = np.isfinite(width)
        row = {
            "participants": p,
            "repeats": r,
            "main_trials_each": design.n_main_trials,
            "minutes_each": minutes,
            "participant_minutes": p * minutes,
            "kept_participants_mean": float(np.mean(cell.n_kept)),
            "studies": int(width.shape[0]),
            "no_interval_share": float(np.mean(~ok[:, 1])),
        }
        for j, level in enumerate(LEVELS):
            tag = level_tag(level)
            w = width[:, j][ok[:, j]]
            row[f"ci_width_{tag}_ms"] = float(np.mean(w)) if w.size else math.nan
            row[f"ci_width_{tag}_median_ms"] = float(np.median(w)) if w.size else math.nan
            truth = cell.true_ms[:, j]
            with np.errstate(invalid="ignore"):
                inside = (low[:, j] <= truth) & (truth <= high[:, j])
            known = np.isfinite(truth).all() and ok[:, j].any()
            row[f"coverage_{tag}"] = float(np.mean(inside[ok[:, j]])) if known else math.nan
        row["power"] = (
            float(np.mean(reference.excluded(low[:, 1], high[:, 1])))
            if reference is not None
            else math.nan
        )
        for t in targets:
            if t.statistic == "assurance" and t.max_ms is not None:
                share = assurance_share(width[:, LEVELS.index(t.level)], t.max_ms)
                row[t.assurance_column] = share
                row[t.assurance_column.replace("assurance", "assurance_se", 1)] = share_se(
                    share, width.shape[0]
                )
            if t.kind == "exclude" and t.reference is not None:
                excl = t.reference.excluded(low[:, 1], high[:, 1])
                row[f"power[{t.reference.label}]"] = float(np.mean(excl))
        meets_target = all(meets(row, cell, t) for t in targets) if targets else None
        rows.append({**row, "meets_target": meets_target})
    return pd.DataFrame(rows)


def meets(row: Mapping[str, float], cell: CellResults, target: Target) -> bool:
    """Whether one cell's row meets one target."""
    if target.kind == "ci_width":
        if target.statistic == "assurance":
            return row[target.assurance_column] >= (target.assurance or 1.0)
        median = "_median" if target.statistic == "median" else ""
        value = row[f"ci_width_{level_tag(target.level)}{median}_ms"]
        return bool(np.isfinite(value) and value <= (target.max_ms or 0.0))
    assert target.reference is not None
    return row[f"power[{target.reference.label}]"] >= target.power


def heavy_tailed_cells(table: pd.DataFrame, levels: tuple[float, ...] = (0.5,)) -> pd.DataFrame:
    """The cells (rows of `cell_table`) whose mean interval width at any of `levels` is over
    `HEAVY_TAIL_RATIO` times its median: there the mean is dominated by a few very wide
    intervals."""
    heavy = np.zeros(len(table), dtype=bool)
    for level in levels:
        tag = level_tag(level)
        with np.errstate(invalid="ignore"):
            ratio = table[f"ci_width_{tag}_ms"] / table[f"ci_width_{tag}_median_ms"]
        heavy |= (ratio > HEAVY_TAIL_RATIO).to_numpy()
    return table[heavy]


def recommend(table: pd.DataFrame) -> pd.Series | None:
    """The cheapest cell (participant-minutes, then fewer participants) meeting every
    target; None when none does (or there is no target)."""
    if table.empty or table["meets_target"].isna().all():
        return None
    good = table[table["meets_target"] == True]  # noqa: E712 (a column of bool / None)
    if good.empty:
        return None
    return good.sort_values(["participant_minutes", "participants", "repeats"]).iloc[0]
