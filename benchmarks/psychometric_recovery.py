"""Parameter recovery of the psychometric fitter over the full grid of simulated observers.

Grid: true 50% thresholds 200, 500, 800, 2000 ms x widths (ln ms, F 0.1->0.9) 0.5, 1.0,
2.0 x lapse 0, 0.02, 0.05 (guess 0.02 when lapse > 0) x 10, 20, 40 trials per level; 7
log-spaced levels spanning 16x, centred on the threshold. Per cell: relative bias, RMSE
and 95% interval coverage of the true threshold, mean interval width, time per dataset
(B = 1000 bootstrap). With n datasets per cell, coverage carries a Monte-Carlo error of
about sqrt(0.95 * 0.05 / n) (0.022 at n = 100).

    .venv/bin/python benchmarks/psychometric_recovery.py               # full grid, 100/cell
    .venv/bin/python benchmarks/psychometric_recovery.py --sims 20 --quick
"""

from __future__ import annotations

import argparse
import itertools
import os
import time

import numpy as np

from benchmarks.support.psychometric_recovery import Cell, recovery_cell

THRESHOLDS_MS = (200, 500, 800, 2000)
WIDTHS_LOG = (0.5, 1.0, 2.0)
LAPSES = (0.0, 0.02, 0.05)
TRIALS_PER_LEVEL = (10, 20, 40)


def grid(quick: bool) -> list[Cell]:
    thresholds = (200, 2000) if quick else THRESHOLDS_MS
    cells = []
    for m, w, lapse, n in itertools.product(thresholds, WIDTHS_LOG, LAPSES, TRIALS_PER_LEVEL):
        guess = 0.02 if lapse > 0 else 0.0
        cells.append(Cell(threshold_ms=m, width_log=w, lapse=lapse, guess=guess, n_per_level=n))
    return cells


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sims", type=int, default=100, help="datasets per cell")
    parser.add_argument("--boot", type=int, default=1000, help="bootstrap datasets per fit")
    parser.add_argument("--ci-method", default="percentile", choices=["percentile", "bca"])
    parser.add_argument(
        "--no-sensitivity",
        action="store_true",
        help="bootstrap from the MLE only (no shallower second bootstrap)",
    )
    parser.add_argument("--quick", action="store_true", help="thresholds 200 and 2000 ms only")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    cells = grid(args.quick)
    print(
        f"{len(cells)} cells x {args.sims} datasets, B = {args.boot}, {args.ci_method}, "
        f"sensitivity {'off' if args.no_sensitivity else 'on'}"
    )
    print(
        f"{'m ms':>6} {'w':>4} {'lapse':>5} {'n/lv':>4} {'bias %':>7} {'RMSE ms':>8} "
        f"{'RMSE %':>7} {'cover':>6} {'CI width':>9} {'s/ds':>6}"
    )
    results = []
    t0, c0 = time.perf_counter(), time.process_time()
    for i, cell in enumerate(cells):
        res = recovery_cell(
            cell,
            args.sims,
            seed=args.seed + i,
            n_boot=args.boot,
            ci_method=args.ci_method,
            sensitivity=not args.no_sensitivity,
        )
        results.append(res)
        print(
            f"{cell.threshold_ms:>6g} {cell.width_log:>4g} {cell.lapse:>5g} "
            f"{cell.n_per_level:>4d} {100 * res.rel_bias:>+7.2f} {res.rmse_ms:>8.1f} "
            f"{100 * res.rmse_ms / cell.threshold_ms:>7.1f} {res.coverage:>6.2f} "
            f"{res.mean_ci_width_ms:>9.1f} {res.seconds_per_dataset:>6.3f}",
            flush=True,
        )
    coverage = np.array([r.coverage for r in results])
    rel_bias = np.array([r.rel_bias for r in results])
    per_ds = np.array([r.seconds_per_dataset for r in results])
    print()
    print(
        f"overall coverage {coverage.mean():.3f} (cells: min {coverage.min():.2f}, "
        f"p10 {np.quantile(coverage, 0.1):.2f}, median {np.median(coverage):.2f}, "
        f"max {coverage.max():.2f})"
    )
    print(
        f"relative bias: mean {100 * rel_bias.mean():+.2f}%, worst cell "
        f"{100 * rel_bias[np.argmax(np.abs(rel_bias))]:+.2f}%"
    )
    for n in TRIALS_PER_LEVEL:
        sel = [r.coverage for r in results if r.cell.n_per_level == n]
        print(f"  {n:>2} trials/level: coverage {np.mean(sel):.3f}")
    for w in WIDTHS_LOG:
        sel = [r.coverage for r in results if r.cell.width_log == w]
        print(f"  width {w:g}: coverage {np.mean(sel):.3f}")
    print(
        f"time per dataset (B = {args.boot}): median {np.median(per_ds):.3f} s, "
        f"p90 {np.quantile(per_ds, 0.9):.3f} s; total {time.perf_counter() - t0:.0f} s wall, "
        f"{time.process_time() - c0:.0f} s CPU; load average {os.getloadavg()[0]:.1f} "
        f"on {os.cpu_count()} cores"
    )


if __name__ == "__main__":
    main()
