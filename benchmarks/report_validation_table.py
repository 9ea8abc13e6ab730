"""The docs' tables from `report_validation.py --csv FILE`: one line per cell and row kind.

Each line: what the report printed (an interval, a bracket, withheld) and, per level of F
(25 / 50 / 75%), the coverage of the printed intervals (brackets: whether the bracket held
the truth) and the bias of the estimates. Bold: outside the goal by more than two
Monte-Carlo SEs (coverage 0.93-0.97, SE sqrt(0.95 x 0.05 / rows); bias under 2% at 50%,
5% at 25 / 75%). The bias judged is the log-scale one (the geometric-mean ratio of estimate
to truth, on the scale the thresholds are fitted and their intervals built); the arithmetic
mean of estimate / truth - 1, which adds about half the log estimate's variance, follows in
brackets. A row the report withholds is shown as such, whatever the grid scored for it.

    python benchmarks/report_validation_table.py FILE.csv [--rows pooled,condition,ratio]
"""

from __future__ import annotations

import argparse
import math
from pathlib import Path

import pandas as pd

LEVELS = (0.25, 0.5, 0.75)


def _cov(r: pd.Series) -> str:
    parts = []
    if r["interval"] > 0 and math.isfinite(r["coverage"]):
        c = r["coverage"]
        se = math.sqrt(0.95 * 0.05 / max(r["rows"] * r["interval"], 1.0))
        inside = 0.93 - 2 * se <= c <= 0.97 + 2 * se
        parts.append(f"{c:.2f}" if inside else f"**{c:.2f}**")
    if r["bracket"] > 0 and math.isfinite(r["bracket_coverage"]):
        parts.append(f"bracket {r['bracket_coverage']:.2f}")
    if r["withheld"] >= 0.999:
        return "withheld"
    return " / ".join(parts) or "point"


def _bias(r: pd.Series) -> str:
    mean, se = r["bias"], r.get("bias_se", math.nan)
    log = r.get("log_bias", math.nan)
    if not math.isfinite(mean) or r["withheld"] >= 0.999:
        return ""
    judged = log if math.isfinite(log) else mean
    goal = 0.02 if r["level"] == 0.5 else 0.05
    over = abs(judged) > goal + 2 * (se if math.isfinite(se) else 0.0)
    text = f"{judged:+.1%}" + (f" ({mean:+.1%})" if math.isfinite(log) else "")
    return f" **{text}**" if over else f" {text}"


def table(frame: pd.DataFrame, kinds: list[str]) -> str:
    out = [
        "| design | observers | N | truth | row | printed | 25%: coverage, bias | 50% | 75% |",
        "|---|---|---:|---|---|---|---|---|---|",
    ]
    for (cell, kind), rows in frame[frame["row"].isin(kinds)].groupby(["cell", "row"], sort=False):
        design, obs, n, place, *cond = (p.strip() for p in cell.split("|"))
        by_level = rows.set_index("level")
        shares = by_level.loc[0.5] if 0.5 in by_level.index else rows.iloc[0]
        printed = ", ".join(
            f"{word} {shares[key]:.0%}"
            for key, word in (("interval", "CI"), ("bracket", "bracket"), ("withheld", "withheld"))
            if shares[key] > 0
        )
        cells = []
        for level in LEVELS:
            if level in by_level.index:
                r = by_level.loc[level].copy()
                r["level"] = level
                cells.append(_cov(r) + _bias(r))
            else:
                cells.append("–")
        label = f"{obs}{' x2 conditions' if cond else ''}"
        out.append(
            f"| {design} | {label} | {n} | {place} | {kind} | {printed} | {' | '.join(cells)} |"
        )
    return "\n".join(out)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("csv", type=Path)
    ap.add_argument(
        "--rows", default="pooled,condition,condition (before),ratio,median-person,person"
    )
    args = ap.parse_args()
    print(table(pd.read_csv(args.csv), args.rows.split(",")))


if __name__ == "__main__":
    main()
