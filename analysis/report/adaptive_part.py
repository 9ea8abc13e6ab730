"""The report's adaptive section: each session's own procedure estimate (QUEST+, staircases).

Present when `sessions.csv` has the export's adaptive columns
(`adaptive_<factor>[_at_<track>]_<field>`, README contract 2): one row per participant and
track with the procedure's estimate, its interval, the P(too slow) it targets, the trials
and reversals; and per track the median across participants with a 95% interval from
resampling participants. Only participants still in the analysed trials count.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pandas as pd

from analysis.report.support import MINIMUMS, estimate_flags, flag_text

FIELDS = ("estimate", "ci_low", "ci_high", "target", "procedure", "n_trials", "reversals")
_COLUMN = re.compile(r"^adaptive_(?P<key>.+)_(?P<field>" + "|".join(FIELDS) + r")$")
PROCEDURE_NAMES = {
    "quest": "QUEST+",
    "staircase": "staircase",
    "interleaved": "interleaved staircases",
}
COLUMNS = ["participant", "factor", "track", *FIELDS]


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


def adaptive_part(data: Any) -> dict[str, Any] | None:
    """The per-participant estimates of the analysed participants and the medians per track."""
    table = adaptive_estimates(getattr(data.table, "sessions", None))
    if table is None:
        return None
    kept = set(data.kept["participant"].astype(str))
    table = table[table["participant"].astype(str).isin(kept)].reset_index(drop=True)
    if table.empty:
        return None
    rng = np.random.default_rng(data.options.seed)
    medians = []
    for (factor, track, procedure, target), part in table.groupby(
        ["factor", "track", "procedure", "target"], dropna=False, sort=False
    ):
        est = part["estimate"].to_numpy(float)
        boot = np.median(rng.choice(est, (data.options.n_boot, est.size)), axis=1)
        lo, hi = (
            np.percentile(boot, [2.5, 97.5])
            if est.size >= MINIMUMS["adaptive_median"].min_participants  # analysis.report.support
            else (np.nan, np.nan)
        )
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
    return {"table": table, "medians": pd.DataFrame(medians)}


def adaptive_threshold_rows(part: dict[str, Any] | None) -> list[dict[str, Any]]:
    """thresholds.csv rows: measure "adaptive", group = participant, level = target."""
    if part is None:
        return []
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
        }
        for r in part["table"].itertuples()
    ]


def adaptive_blocks(part: dict[str, Any] | None) -> list:
    """Heading, method note, per-participant table and the median per track."""
    if part is None:
        return []
    from analysis.report.blocks import Heading, Para, Table

    table, medians = part["table"], part["medians"]
    several_tracks = table["track"].nunique() > 1 or (table["track"] != "all").any()
    rows = []
    for r in table.itertuples():
        row = {"participant": r.participant}
        if several_tracks:
            row["track"] = r.track
        row.update(
            {
                "procedure": PROCEDURE_NAMES.get(r.procedure, r.procedure),
                "P(too slow) targeted": r.target,
                f"{r.factor} (ms)": r.estimate,
                "95% interval": _interval(r.ci_low, r.ci_high),
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
        interval = (
            f"{_interval(m.ci_low, m.ci_high)} (95% interval from resampling participants)"
            if pd.notna(m.ci_low)
            else "(no interval from resampling participants: it needs "
            f"{MINIMUMS['adaptive_median'].min_participants})"
        )
        lines.append(
            f"Median across {m.participants} participants{where}: {m.median:,.0f} ms "
            f"{interval}; {name} at P(too slow) = {m.target:.3g}."
        )
    return [
        Heading("Adaptive estimates"),
        Para(
            "Each session's own procedure chose the latency trial by trial from the answers "
            "and estimated the participant's threshold at the point it targets: QUEST+ and "
            "interleaved staircases the 50% point (posterior mean, 95% credible interval), a "
            "1-up/n-down staircase the point where P(too slow) = 1 − 0.5^(1/n) (geometric mean "
            "of the reversal levels ± 2 SE). These come from sessions.csv and are independent "
            "of the curve fits above, which use every trial."
        ),
        Table(pd.DataFrame(rows), "Estimate per participant, as the session's procedure left it"),
        *[Para(line) for line in lines],
    ]


def _interval(low: float, high: float) -> str:
    """`[480, 1,086]`, or `–` when there is none."""
    if pd.isna(low) or pd.isna(high):
        return "–"
    return f"[{low:,.0f}, {high:,.0f}]"
