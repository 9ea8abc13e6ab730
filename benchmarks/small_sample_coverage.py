"""Coverage of the pooled threshold's 95% interval with few participants: participant
bootstrap (percentile) against the participant jackknife-t, by study size.

Studies of N = 2, 3, 4, 6, 8, 12, 16 people who differ (ln 50% points normal, SD 0.3, around
800 ms; width 1.0 ln ms; guess = lapse = 0.02) on the fixed design of
studies/ttft-threshold.toml (8 levels, 100-5000 ms, 6 trials each), as
`benchmarks.support.pooled_validation` simulates them; truth: the population curve's 25 / 50 / 75%
points. The report's minimum number of participants for a population interval
(`analysis.report.support`) rests on this table; docs/explanation/small-samples.md has it.

    uv run python benchmarks/small_sample_coverage.py [--studies 200] [--n-boot 400]
"""

from __future__ import annotations

import argparse
import math
import os
import time

from benchmarks.support.pooled_validation import PooledCell, run_pooled_cell


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=200)
    ap.add_argument("--n-boot", type=int, default=400)
    ap.add_argument("--people", default="2,3,4,6,8,12,16")
    ap.add_argument("--observers", default="differing")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    load = os.getloadavg()[0]
    t0 = time.perf_counter()
    se = math.sqrt(0.95 * 0.05 / args.studies)
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; {args.studies} studies per N "
        f"(Monte-Carlo SE of a coverage near 0.95: ±{se:.3f}), B = {args.n_boot}, seed "
        f"{args.seed}, observers {args.observers}"
    )
    print("| N | level | bias | bootstrap | jackknife-t | CI high/low boot / jack |")
    print("|---:|---:|---:|---:|---:|---:|")
    for n in (int(v) for v in args.people.split(",")):
        cell = PooledCell(n, args.observers, "fixed")
        for r in run_pooled_cell(cell, args.studies, args.n_boot, args.seed):
            print(
                f"| {n} | {r['level']:.0%} | {r['rel_bias']:+.1%} | "
                f"{r['coverage bootstrap']:.3f} | {r['coverage jackknife-t']:.3f} | "
                f"×{r['ratio bootstrap']:.2f} / ×{r['ratio jackknife-t']:.2f} |",
                flush=True,
            )
    print(
        f"load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; "
        f"{time.perf_counter() - t0:.0f} s wall"
    )


if __name__ == "__main__":
    main()
