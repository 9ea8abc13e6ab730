"""The report's adaptive section: each session's own procedure estimate (QUEST+, staircases).

Present when `sessions.csv` has the export's adaptive columns
(`adaptive_<factor>[_at_<track>]_<field>`, README contract 2): one row per participant and
track with the procedure's estimate, its interval, the P(too slow) it targets, the trials
and reversals; and per track the median across participants with the sign test's 95%
interval of a median (`analysis.median_interval`), withheld where it was measured to miss
(`MEDIAN_INTERVAL_WITHHELD`). Only participants still in the analysed trials count. An interval
end past the study's tested levels of the factor by more than `interval_bounds`' factor is
printed as not bounded by these data, as the curve fits' are.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd

from analysis.median_interval import median_interval
from analysis.report.data import AdaptivePart, ReportData
from analysis.report.interval_bounds import unbounded_ends
from analysis.report.simulated_rows import mark_simulated
from analysis.report.support import (
    MEDIAN_INTERVAL_MEASURED,
    MINIMUMS,
    estimate_flags,
    flag_text,
)

if TYPE_CHECKING:
    from analysis.report.blocks import Block

FIELDS = ("estimate", "ci_low", "ci_high", "target", "procedure", "n_trials", "reversals")
_COLUMN = re.compile(r"^adaptive_(?P<key>.+)_(?P<field>" + "|".join(FIELDS) + r")$")
PROCEDURE_NAMES = {
    "quest": "QUEST+",
    "staircase": "staircase",
    "interleaved": "interleaved staircases",
}
COLUMNS = ["participant", "factor", "track", *FIELDS]

MEDIAN_INTERVAL_WITHHELD: dict[str, str] = {
    "staircase": (
        "after a 1-up/2-down staircase (48 trials) the sessions' own estimates were biased "
        "-1% to -3% on the log scale, so the interval of their median covered the median "
        "person's point only 0.88-0.90 of the time with people alike, 0.94-0.95 otherwise "
        "(benchmarks/adaptive_median_coverage.py, 1,000 studies a cell, 2026-12-07; other "
        "staircases were not measured)"
    ),
}
"""Procedures whose median's interval is withheld, and what was measured."""


def adaptive_estimates(sessions: pd.DataFrame | None) -> pd.DataFrame | None:
    """One row per session and track: participant, factor, track and the fields above."""
    if sessions is None or "participant" not in sessions.columns:
        return None
    keys: dict[str, dict[str, str]] = {}
    for col in sessions.columns:
        m = _COLUMN.match(str(col))
        if m:
            keys.setdefault(m["key"], {})[m["field"]] = col
    rows = []
    for key, cols in keys.items():
        if "estimate" not in cols:
            continue
        factor, _, track = key.partition("_at_")
        for _, s in sessions.iterrows():
            row: dict[str, Any] = {"participant": s["participant"], "factor": factor}
            row["track"] = track or "all"
            row.update({f: s[cols[f]] if f in cols else None for f in FIELDS})
            rows.append(row)
    if not rows:
        return None
    out = pd.DataFrame(rows, columns=COLUMNS)
    for f in ("estimate", "ci_low", "ci_high", "target", "n_trials", "reversals"):
        out[f] = pd.to_numeric(out[f], errors="coerce")
    out = out.dropna(subset=["estimate"])
    return out.reset_index(drop=True) if not out.empty else None


def tested_ranges(data: ReportData, factors: Iterable[str]) -> dict[str, tuple[float, float]]:
    """Per adaptive factor, the lowest and highest level of it among the analysed trials
    (ms): the range its estimates' intervals are judged against (the stimulus's tested
    range when the trials lack the factor)."""
    out: dict[str, tuple[float, float]] = {}
    for factor in factors:
        levels = (
            pd.to_numeric(data.kept[factor], errors="coerce").dropna()
            if factor in data.kept.columns
            else pd.Series(dtype=float)
        )
        out[factor] = (
            (float(levels.min()), float(levels.max())) if len(levels) else data.tested_range
        )
    return out


def median_with_interval(estimates: np.ndarray, procedure: str) -> tuple[float, float, float]:
    """(median, low, high) of the sessions' own estimates (ms) of one track: the sign test's
    95% interval of a median on ln ms, NaN below `MINIMUMS["adaptive_median"]` participants
    or after a procedure in `MEDIAN_INTERVAL_WITHHELD` (the planner gives the same)."""
    est = np.asarray(estimates, dtype=float)
    est = est[np.isfinite(est)]
    if not est.size:
        return math.nan, math.nan, math.nan
    low = high = math.nan
    if (
        est.size >= MINIMUMS["adaptive_median"].min_participants  # analysis.report.support
        and procedure not in MEDIAN_INTERVAL_WITHHELD
    ):
        low, high = (float(v) for v in np.exp(median_interval(np.log(est))))  # on ln ms
    return float(np.median(est)), low, high


def adaptive_part(data: ReportData) -> AdaptivePart | None:
    """The per-participant estimates of the analysed participants, the medians per track and
    the tested range of each factor (`tested_ranges`)."""
    table = adaptive_estimates(data.table.sessions)
    if table is None:
        return None
    kept = set(data.kept["participant"].astype(str))
    table = table[table["participant"].astype(str).isin(kept)].reset_index(drop=True)
    if table.empty:
        return None
    medians = []
    for (factor, track, procedure, target), part in table.groupby(
        ["factor", "track", "procedure", "target"], dropna=False, sort=False
    ):
        est = part["estimate"].to_numpy(float)
        _, lo, hi = median_with_interval(est, str(procedure))
        medians.append(
            {
                "factor": factor,
                "track": track,
                "procedure": procedure,
                "target": target,
                "participants": est.size,
                "median": float(np.median(est)),
                "ci_low": float(lo),
                "ci_high": float(hi),
            }
        )
    tested = tested_ranges(data, table["factor"].unique())
    return AdaptivePart(table, pd.DataFrame(medians), tested)


def adaptive_threshold_rows(part: AdaptivePart | None) -> list[dict[str, Any]]:
    """thresholds.csv rows: measure "adaptive", group = participant, level = target."""
    if part is None:
        return []
    tested = part.tested
    return [
        {
            "measure": "adaptive",
            "stimulus": r.factor,
            "group": r.participant,
            "level": r.target,
            "estimate": r.estimate,
            "ci_low": r.ci_low,
            "ci_high": r.ci_high,
            "n_trials": int(r.n_trials) if pd.notna(r.n_trials) else 0,
            "condition": r.track,
            "ci_unbounded": unbounded_ends(r.ci_low, r.ci_high, *tested[r.factor]),
        }
        for r in part.table.itertuples()
    ]


def adaptive_blocks(part: AdaptivePart | None, data: ReportData | None = None) -> list[Block]:
    """Heading, method note, per-participant table and the median per track (its simulated
    rows marked in a mixed report: `mark_simulated`, from `data`)."""
    if part is None:
        return []
    from analysis.report.blocks import Heading, Para, Table, ci_ends, unbounded_note

    table, medians, tested = part.table, part.medians, part.tested

    def interval(low: float, high: float, factor: str) -> str:
        """`[480, 1,086]`, an end past the limits as not bounded, or `–` when there is none."""
        if pd.isna(low) or pd.isna(high):
            return "–"
        return "[{}, {}]".format(*ci_ends(low, high, tested[factor]))

    several_tracks = table["track"].nunique() > 1 or (table["track"] != "all").any()
    rows: list[dict[str, Any]] = []
    for r in table.itertuples():
        row: dict[str, Any] = {"participant": r.participant}
        if several_tracks:
            row["track"] = r.track
        row.update(
            {
                "procedure": PROCEDURE_NAMES.get(r.procedure, r.procedure),
                "P(too slow) targeted": r.target,
                f"{r.factor} (ms)": r.estimate,
                "95% interval": interval(r.ci_low, r.ci_high, r.factor),
                "trials": int(r.n_trials) if pd.notna(r.n_trials) else None,
                "reversals": int(r.reversals) if pd.notna(r.reversals) else "–",
                "flags": flag_text(
                    False, estimate_flags(r.estimate, r.ci_low, r.ci_high).degenerate
                ),
            }
        )
        rows.append(row)
    lines = []
    for m in medians.itertuples():
        where = "" if m.track == "all" else f" ({m.track})"
        name = PROCEDURE_NAMES.get(m.procedure, m.procedure)
        if pd.notna(m.ci_low):
            around = f"{interval(m.ci_low, m.ci_high, m.factor)} (95% interval of a median)"
        elif m.procedure in MEDIAN_INTERVAL_WITHHELD:
            around = f"(no interval: {MEDIAN_INTERVAL_WITHHELD[m.procedure]})"
        else:
            around = (
                "(no interval: the interval of a median needs "
                f"{MINIMUMS['adaptive_median'].min_participants} participants)"
            )
        lines.append(
            f"Median across {m.participants} participants{where}: {m.median:,.0f} ms "
            f"{around}; {name} at P(too slow) = {m.target:.3g}."
        )
    return [
        Heading("Adaptive estimates"),
        Para(
            "Each session's own procedure chose the latency trial by trial from the answers "
            "and estimated the participant's threshold at the point it targets: QUEST+ and "
            "interleaved staircases the 50% point (posterior mean, 95% credible interval), a "
            "1-up/n-down staircase the point where P(too slow) = 1 − 0.5^(1/n) (geometric mean "
            'of the reversal levels ± 2 SE). A give-up counts as "too slow" for the '
            'procedure, so where people give up the estimate is the point where "too slow" '
            "or a give-up reaches the target. These come from sessions.csv and are independent "
            "of the curve fits above, which use every trial. The median's 95% interval is the "
            "sign test's for a median, its ends interpolated between neighbouring estimates "
            f"on ln ms (Hettmansperger & Sheather 1986): {MEDIAN_INTERVAL_MEASURED}."
        ),
        Table(
            mark_simulated(pd.DataFrame(rows), data),
            "Estimate per participant, as the session's procedure left it",
        ),
        *[Para(line) for line in lines],
        *unbounded_note(
            [row["95% interval"] for row in rows] + lines,
            next(iter(tested.values())) if len(tested) == 1 else None,
            "tested level of the factor",
            "the procedure's interval (its prior, or the spread of a few reversals)",
        ),
    ]
