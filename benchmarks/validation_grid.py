"""Validation grid of the per-person psychometric fit, hard cases included: coverage and bias.

Cells: the true 50% threshold on a tested level or halfway between two (in ln ms) x widths
0.25 (steeper than the level spacing: answers often separate), 0.5, 1.0, 2.0 (shallow)
ln ms (F 0.1 -> 0.9) x 5, 10, 20, 40 trials per level; 7 log-spaced levels spanning 16x,
guess = lapse = 0.02, logistic, "too slow?" (rising). Per cell: 95% interval coverage of
the true 50% threshold (target [0.93, 0.97]), relative bias (target under 2%), median
interval width as high / low, time per dataset. Every fit is the report's (width penalty,
B bootstrap + the shallower sensitivity bootstrap). Coverage over n datasets carries a
Monte-Carlo SE of about sqrt(0.95 * 0.05 / n) (0.028 at n = 60).

Not in this grid (see README, section report): pooled intervals across participants (the
participant bootstrap: benchmarks/cluster_bootstrap_coverage.py) and adaptive designs
(staircase / QUEST+: benchmarks/adaptive_validation.py for the per-session estimates).

    uv run python benchmarks/validation_grid.py [--sims 60] [--n-boot 1000] [--seed 0]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from analysis.validation_grid import grid_cells, run_grid


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=60, help="datasets per cell (default 60)")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    load_before = os.getloadavg()[0]
    t0 = time.perf_counter()
    rows = run_grid(grid_cells(), args.sims, args.n_boot, args.seed)
    wall = time.perf_counter() - t0
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.sims} datasets per cell, "
        f"B = {args.n_boot}, seed {args.seed}; load average {load_before:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after; {wall:.0f} s wall"
    )
    print(
        "| threshold | width (ln ms) | trials/level | coverage | bias | median CI high/low "
        "| under 1% wide | s/dataset |"
    )
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    for r in rows:
        flag = "" if 0.93 <= r["coverage"] <= 0.97 else " (off target)"
        print(
            f"| {r['place']} | {r['width']:g} | {r['n']} | {r['coverage']:.3f}{flag} | "
            f"{r['rel_bias']:+.1%} | ×{r['ratio']:.2f} | {r['degenerate']:.0%} | {r['s']:.3f} |"
        )
    cov = np.array([r["coverage"] for r in rows])
    bias = np.array([abs(r["rel_bias"]) for r in rows])
    print(
        f"cells in [0.93, 0.97]: {int(np.sum((cov >= 0.93) & (cov <= 0.97)))} of {len(rows)}; "
        f"coverage {cov.min():.2f}-{cov.max():.2f}; |bias| under 2%: "
        f"{int(np.sum(bias < 0.02))} of {len(rows)} (max {bias.max():.1%})"
    )


if __name__ == "__main__":
    main()
