"""Validation grid, hard cases included: coverage and bias per cell, per person and pooled.

Per-person part (`--part person`): one observer per dataset, the true 50% threshold on a
tested level or halfway between two (in ln ms) x widths 0.25 (steeper than the level
spacing: answers often separate), 0.5, 1.0, 2.0 (shallow) ln ms (F 0.1 -> 0.9) x 5, 10,
20, 40 trials per level; 7 log-spaced levels spanning 16x, guess = lapse = 0.02, logistic,
"too slow?". Every fit is the report's (width penalty, B bootstrap + the shallower
sensitivity bootstrap; `--no-sensitivity` drops the latter, to see what it adds). Scored at
25 / 50 / 75%: coverage of the 95% interval (target [0.93, 0.97]), relative bias (target
under 2% at 50%, under 5% at 25 / 75%), median interval high / low.

Pooled part (`--part pooled`): studies of 4-40 participants x alike / differing / skewed
observers x fixed / staircase / QUEST+ designs (`benchmarks.support.pooled_validation`), the
report's population estimator for the design with its participant-bootstrap interval and
the participant jackknife-t (`analysis.small_sample_interval`). Truth: the population
curve's point.

Coverage over n datasets carries a Monte-Carlo SE of about sqrt(0.95 * 0.05 / n) (0.022
at n = 100, 0.034 at n = 40).

    uv run python benchmarks/validation_grid.py --part person [--sims 100] [--n-boot 1000]
    uv run python benchmarks/validation_grid.py --part pooled --designs fixed --studies 100
    OPENBLAS_NUM_THREADS=1 uv run python benchmarks/validation_grid.py --part pooled \
        --designs staircase --adaptive-estimator psychometric-mixed

(On a shared, loaded machine OPENBLAS_NUM_THREADS=1 made the psychometric-mixed fits about
5x faster: SciPy's L-BFGS-B otherwise waits on BLAS threads.)
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np

from benchmarks.support.pooled_validation import ADAPTIVE_ESTIMATORS
from benchmarks.support.validation_grid import grid_cells, run_grid


def _band(cov: float) -> str:
    if cov != cov:  # NaN: not computed
        return "–"
    return f"{cov:.2f}" if 0.93 <= cov <= 0.97 else f"**{cov:.2f}**"


def person_part(args) -> None:
    widths = {float(w) for w in args.widths.split(",")} if args.widths else None
    rows = []
    for i, cell in enumerate(grid_cells()):  # a cell keeps its seed (seed + its index)
        if widths is None or cell[1].width_log in widths:
            rows += run_grid(
                [cell], args.sims, args.n_boot, args.seed + i, sensitivity=args.sensitivity
            )
    print(f"per person: {args.sims} datasets per cell, B = {args.n_boot}, seed {args.seed}, ")
    print(f"sensitivity bootstrap {'on' if args.sensitivity else 'off'}")
    print(
        "| threshold | w (ln ms) | trials/level | 25%: cov / bias | 50% | 75% | CI high/low (50%) |"
    )
    print("|---|---:|---:|---|---|---|---:|")
    for i in range(0, len(rows), 3):
        cells = rows[i : i + 3]
        r = cells[1]
        parts = [f"{_band(c['coverage'])} / {c['rel_bias']:+.1%}" for c in cells]
        head = f"| {r['place']} | {r['width']:g} | {r['n']} | "
        print(f"{head}{' | '.join(parts)} | ×{r['ratio']:.2f} |")
    cov = np.array([r["coverage"] for r in rows])
    print(
        f"cells x levels in [0.93, 0.97]: {int(np.sum((cov >= 0.93) & (cov <= 0.97)))} of "
        f"{len(rows)}; coverage {cov.min():.2f}-{cov.max():.2f}; degenerate (under 1% wide): "
        f"{max(r['degenerate'] for r in rows):.0%} at most"
    )


def pooled_part(args) -> None:
    from benchmarks.support.pooled_validation import PooledCell, run_pooled_cell

    people = [int(v) for v in args.people.split(",")]
    print(
        f"pooled: {args.studies} studies per fixed cell, {args.adaptive_studies} per adaptive "
        f"cell, B = {args.pooled_boot} (fixed) / {args.adaptive_boot} (adaptive), seed "
        f"{args.seed}; adaptive estimator {args.adaptive_estimator}"
    )
    print(
        "| design | observers | N | level | truth (ms) | bias | bootstrap cov | "
        "jackknife-t cov | CI high/low boot / jack | s/study |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for design in args.designs.split(","):
        studies = args.studies if design == "fixed" else args.adaptive_studies
        n_boot = args.pooled_boot if design == "fixed" else args.adaptive_boot
        for observers in args.observers.split(","):
            for n in people:
                for r in run_pooled_cell(
                    PooledCell(n, observers, design),
                    studies,
                    n_boot,
                    args.seed,
                    args.adaptive_estimator,
                ):
                    r = {"coverage bootstrap": math.nan, "ratio bootstrap": math.nan, **r}
                    print(
                        f"| {design} | {observers} | {n} | {r['level']:.0%} | "
                        f"{r['truth_ms']:.0f} | "
                        f"{r['rel_bias']:+.1%} | {_band(r['coverage bootstrap'])} | "
                        f"{_band(r['coverage jackknife-t'])} | ×{r['ratio bootstrap']:.2f} / "
                        f"×{r['ratio jackknife-t']:.2f} | {r['s_per_study']:.2f} |",
                        flush=True,
                    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=("person", "pooled", "all"), default="all")
    ap.add_argument("--sims", type=int, default=100, help="datasets per person cell")
    ap.add_argument("--n-boot", type=int, default=1000, help="B of the per-person fits")
    ap.add_argument("--no-sensitivity", dest="sensitivity", action="store_false")
    ap.add_argument("--widths", default="", help="only these person widths (ln ms), e.g. 0.25,0.5")
    ap.add_argument("--designs", default="fixed,staircase,quest")
    ap.add_argument("--people", default="4,10,20,40")
    ap.add_argument("--observers", default="alike,differing,skewed")
    ap.add_argument(
        "--adaptive-estimator",
        choices=ADAPTIVE_ESTIMATORS,
        default=ADAPTIVE_ESTIMATORS[0],
        help="logit-mixed: random-intercept logit; psychometric-mixed: with guess and lapse",
    )
    ap.add_argument("--studies", type=int, default=100, help="studies per fixed pooled cell")
    ap.add_argument("--adaptive-studies", type=int, default=100)
    ap.add_argument("--pooled-boot", type=int, default=200, help="B, fixed designs")
    ap.add_argument(
        "--adaptive-boot", type=int, default=0, help="B of the mixed model's bootstrap (0: none)"
    )
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average {load_before[0]:.1f}"
    )
    if args.part in ("person", "all"):
        person_part(args)
    if args.part in ("pooled", "all"):
        pooled_part(args)
    print(
        f"load average {load_before[0]:.1f} before, {os.getloadavg()[0]:.1f} after; "
        f"{time.perf_counter() - t0:.0f} s wall"
    )


if __name__ == "__main__":
    main()
