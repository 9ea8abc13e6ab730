"""Coverage of the participant-resampled 95% interval of the pooled threshold, by study size.

For N = 2, 4, 8, 16, 32 simulated participants (the project's observers,
`uxlab.simulate.observers`, on the design of `studies/ttft-threshold.toml`: 8 TTFT levels,
6 main trials per level and person) it simulates `--datasets` independent studies, fits each
with the percentile participant bootstrap (`analysis.psychometric.population_threshold`,
B = `--n-boot`; the report's population interval is now the participant jackknife-t,
measured against this one by benchmarks/small_sample_coverage.py) and
prints, per N and level of F (25 / 50 / 75%): how often the interval holds the population's
pooled threshold (with its Monte-Carlo standard error), the median width (high / low), the
share of degenerate intervals, and the load average before and after.
A second table does the same for the MOS interval per TTFT level (population mean rating on
1-5, `benchmarks.support.cluster_coverage.true_mos`): the t-interval over ratings, the percentile
participant bootstrap and the participant jackknife-t the report uses (from 16 participants,
where it first covers 0.93), with how often each leaves the 1-5 scale.

    uv run python benchmarks/cluster_bootstrap_coverage.py                 # 400 studies per N
    uv run python benchmarks/cluster_bootstrap_coverage.py --datasets 100  # a quick look
"""

from __future__ import annotations

import argparse
import os
import time
from datetime import UTC, datetime
from pathlib import Path

from benchmarks.support.cluster_coverage import coverage_table, mos_coverage_table, study_design

REPO = Path(__file__).resolve().parents[1]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--datasets", type=int, default=400, help="studies per N (default 400)")
    ap.add_argument("--n-boot", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--ns", default="2,4,8,16,32", help="study sizes, comma-separated")
    args = ap.parse_args()
    ns = tuple(int(n) for n in args.ns.split(","))
    design = study_design(REPO / "studies" / "ttft-threshold.toml")
    load_before = os.getloadavg()
    t0 = time.perf_counter()
    table = coverage_table(ns, args.datasets, design, n_boot=args.n_boot, seed=args.seed)
    wall = time.perf_counter() - t0
    load_after = os.getloadavg()
    print(
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC; {args.datasets} studies per N, B = "
        f"{args.n_boot}, seed {args.seed}; levels {design.levels_ms} ms x "
        f"{design.trials_per_level} trials per person"
    )
    print(f"load average {load_before[0]:.1f} before, {load_after[0]:.1f} after; {wall:.0f} s wall")
    print("| N | level | coverage (± MC SE) | median CI high/low | degenerate | CPU s |")
    print("|---:|---:|---:|---:|---:|---:|")
    for r in table.itertuples():
        print(
            f"| {r.n_participants} | {r.level:.0%} | {r.coverage:.3f} ± {r.mc_se:.3f} | "
            f"×{r.median_width_ratio:.2f} | {r.share_degenerate:.1%} | {r.cpu_s:.0f} |"
        )
    t0 = time.perf_counter()
    mos = mos_coverage_table(ns, args.datasets, design, n_boot=args.n_boot, seed=args.seed)
    print(
        f"\nMOS per TTFT level (8 levels per study; SE per level-study pair, levels of one study "
        f"are correlated); {time.perf_counter() - t0:.0f} s wall, load average "
        f"{os.getloadavg()[0]:.1f}"
    )
    print("| N | interval | coverage (± MC SE) | off the 1-5 scale |")
    print("|---:|---|---:|---:|")
    for r in mos.itertuples():
        print(
            f"| {r.n_participants} | {r.interval} | {r.coverage:.3f} ± {r.mc_se:.3f} | "
            f"{r.share_off_scale:.1%} |"
        )


if __name__ == "__main__":
    main()
