"""Every figure the report prints, scored against the truth of an independent simulator.

Studies come from `tests/independent_tables.py` (observers, a fixed design, a 1-up/2-down
staircase and QUEST+ written from their textbook definitions, nothing shared with uxlab's
own simulator) and are analysed by the report's analysis as another lab's CSV
(`tests/report_grid.py`). The grid: designs (fixed, staircase, QUEST+) x N (4, 8, 20) x
observers (alike, differing, steep, right-skewed spread, near-step "separated" people all
switching at 700 ms between the tested 650 and 1,000 ms) x where the population's 50% point
lies (between two tested levels, 800 ms, or on one, 1,000 ms; fixed design only), and fixed
designs with a second factor (itl_ms 20 / 60, thresholds x0.7 in the second). Every row
of thresholds.csv is scored: pooled, median person, per condition, the ratio between
conditions, per person; as a baseline from the same studies, the per-condition interval
the report printed before (the joint fit's trial-level parametric bootstrap).

Targets (issue 30): 95% intervals covering 0.93-0.97; bias under 2% at 50% and under 5% at
25 / 75%. Coverage over n studies carries a Monte-Carlo SE of about sqrt(0.95 x 0.05 / n)
(0.028 at n = 60). A row printed as withheld or as a bracket is counted as such.

    nice -n 10 uv run python benchmarks/report_validation.py [--studies 60]
        [--adaptive-studies 60] [--n-boot 200]
        [--designs fixed,staircase,quest] [--people 4,8,20] [--cells all|plain|conditions]
        [--csv out.csv]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import pandas as pd

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from independent_tables import OBSERVERS, Study, at_place
from report_grid import Cell, run_cell

ADAPTIVE_TRIALS, FIXED_REPEATS = 48, 8


def cells(
    designs: list[str],
    people: list[int],
    observers: list[str],
    which: str = "all",
    repeats: int = FIXED_REPEATS,
    condition_places: tuple[str, ...] = ("between levels",),
) -> list[Cell]:
    """The grid's cells, in the order they are printed (`which`: `all`, `plain` without a
    second factor, `conditions` only the fixed designs with one; `repeats`: the answers a
    person gives each level of a fixed design; `condition_places`: where the truth lies in the
    cells with a second factor)."""
    out = []
    for design in designs:
        for name in observers if which != "conditions" else ():
            if name == "separated" and design != "fixed":
                continue  # near-step people on an adaptive ladder: not a separated design
            places = ("between levels", "on a level") if design == "fixed" else ("between levels",)
            for place in places:
                if name == "separated" and place != "between levels":
                    continue
                for n in people:
                    trials = repeats if design == "fixed" else ADAPTIVE_TRIALS
                    obs = at_place(OBSERVERS[name], place)
                    out.append(Cell(Study(design, obs, n, trials), place))
        if design == "fixed" and which != "plain":
            for name in ("alike", "differing", "steep"):
                if name not in observers:
                    continue
                for n in people:
                    for place in condition_places:
                        obs = at_place(OBSERVERS[name], place)
                        out.append(Cell(Study(design, obs, n, repeats, conditions=True), place))
    return out


def _cov(value: float) -> str:
    if value != value:
        return "–"
    return f"{value:.2f}" if 0.93 <= value <= 0.97 else f"**{value:.2f}**"


def _bias(value: float, level: float) -> str:
    if value != value:
        return "–"
    limit = 0.02 if level == 0.5 else 0.05
    return f"{value:+.1%}" if abs(value) < limit else f"**{value:+.1%}**"


def _printed(r: dict) -> str:
    parts = []
    for key, word in (("interval", "CI"), ("bracket", "bracket"), ("withheld", "withheld")):
        if r[key] > 0:
            parts.append(f"{word} {r[key]:.0%}")
    return ", ".join(parts) or "point only"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=60, help="studies per fixed-design cell")
    ap.add_argument(
        "--adaptive-studies", type=int, default=None, help="per adaptive cell (default: --studies)"
    )
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--designs", default="fixed,staircase,quest")
    ap.add_argument("--people", default="4,8,20")
    ap.add_argument("--observers", default="alike,differing,steep,skewed,separated")
    ap.add_argument("--csv", type=Path, help="also write every row here")
    ap.add_argument(
        "--cells",
        choices=("all", "plain", "conditions"),
        default="all",
        help="plain: without a second factor; conditions: only fixed designs with one",
    )
    ap.add_argument(
        "--repeats",
        type=int,
        default=FIXED_REPEATS,
        help=f"answers a person gives each level of a fixed design (default {FIXED_REPEATS})",
    )
    ap.add_argument(
        "--condition-places",
        default="between levels",
        help="where the truth lies in the cells with a second factor: 'between levels', "
        "'on a level' or both, comma-separated (default: between levels)",
    )
    args = ap.parse_args()
    grid = cells(
        args.designs.split(","),
        [int(v) for v in args.people.split(",")],
        args.observers.split(","),
        args.cells,
        args.repeats,
        tuple(p.strip() for p in args.condition_places.split(",")),
    )
    start = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(
        f"report validation: {args.studies} studies per fixed-design cell "
        f"({args.repeats} answers a level), "
        f"{args.adaptive_studies or args.studies} per adaptive one, B = {args.n_boot}, seed "
        f"{args.seed}; {start}, load average {os.getloadavg()[0]:.1f} at the start"
    )
    print(
        "| design | observers | N | truth | row | level | printed | coverage | bias ± MC SE | "
        "log-scale bias | s/study |"
    )
    print("|---|---|---:|---|---|---:|---|---:|---:|---:|---:|")
    t0 = time.perf_counter()
    every = []
    for cell in grid:
        studies = args.studies
        if cell.study.design != "fixed" and args.adaptive_studies:
            studies = args.adaptive_studies
        for r in run_cell(cell, studies, args.n_boot, args.seed):
            every.append(r)
            design, obs, n, place, *cond = (p.strip() for p in r["cell"].split("|"))
            cov = r["coverage"]
            if r["bracket"] > 0 and math.isfinite(r["bracket_coverage"]):
                cov_text = f"{_cov(cov)} (brackets {r['bracket_coverage']:.2f})"
            else:
                cov_text = _cov(cov)
            print(
                f"| {design} | {obs}{' x2 conditions' if cond else ''} | {n} | {place} | "
                f"{r['row']} | {r['level']:.0%} | {_printed(r)} | {cov_text} | "
                f"{_bias(r['bias'], r['level'])} ± {r['bias_se']:.1%} | "
                f"{_bias(r['log_bias'], r['level'])} | {r['s_per_study']:.2f} |",
                flush=True,
            )
    print(
        f"{len(grid)} cells in {time.perf_counter() - t0:.0f} s; load average "
        f"{os.getloadavg()[0]:.1f} at the end"
    )
    if args.csv:
        pd.DataFrame(every).to_csv(args.csv, index=False)


if __name__ == "__main__":
    main()
