"""The validation table from the per-study intervals `plan_validation.py --raw DIR` kept.

Per row (design, truth): the plan's and the realised mean width of the 95% interval of the
50% threshold and their ratio, the same for the median width, both powers (share of
intervals excluding the reference) and their difference. Monte-Carlo SEs come from
resampling each side's studies (B = 2000), so they hold for the median and for heavy
tails too. The width goal (ratio 0.90-1.10) is judged on the mean where the plan's mean is
at most 1.5x its median, else on the median (a mean dominated by a few enormous intervals
is not estimable from hundreds of studies: `uxlab plan` names such cells and offers a
median or assurance target); the power goal is a difference within ±0.05.

    python benchmarks/plan_validation_table.py DIR [--reference-ms 1000] [--compact]

`--compact` prints the short form README carries: one width ratio per row (the mean's, or
the median's where heavy-tailed, marked *) and the powers.
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

HEAVY = 1.5  # the plan's heavy-tail note fires above this mean / median ratio
ORDER = ("quest-10x10", "constant-8x1", "staircase-10x10")
TRUTHS = ("default", "fast-600", "steep-1200", "spread-0.5", "lapse-0.06")
NAMES = {
    "quest-10x10": "QUEST+ 10 x 20",
    "constant-8x1": "constant 8 x 1",
    "staircase-10x10": "staircase 10 x 20",
}


def boot_se(stat, plan: np.ndarray, real: np.ndarray, rng: np.random.Generator) -> float:
    """SE of stat(plan, real) over resamples of each side's studies."""
    draws = [
        stat(
            plan[rng.integers(0, len(plan), len(plan))], real[rng.integers(0, len(real), len(real))]
        )
        for _ in range(2000)
    ]
    return float(np.nanstd(draws, ddof=1))


def row(plan: np.ndarray, real: np.ndarray, reference: float, rng: np.random.Generator) -> dict:
    """Figures of one row from [S, 3] (estimate, ci_low, ci_high) per side."""
    wp, wr = plan[:, 2] - plan[:, 1], real[:, 2] - real[:, 1]

    def mean_ratio(p, r):
        return np.nanmean(p) / np.nanmean(r)

    def median_ratio(p, r):
        return np.nanmedian(p) / np.nanmedian(r)

    def power(ci):
        return np.mean((ci[:, 1] > reference) | (ci[:, 2] < reference))

    return {
        "mean_plan": np.nanmean(wp),
        "mean_real": np.nanmean(wr),
        "mean_ratio": mean_ratio(wp, wr),
        "mean_se": boot_se(mean_ratio, wp, wr, rng),
        "median_plan": np.nanmedian(wp),
        "median_real": np.nanmedian(wr),
        "median_ratio": median_ratio(wp, wr),
        "median_se": boot_se(median_ratio, wp, wr, rng),
        "heavy": np.nanmean(wp) / np.nanmedian(wp) > HEAVY,
        "power_plan": power(plan),
        "power_real": power(real),
        "power_se": boot_se(lambda p, r: power(p) - power(r), plan, real, rng),
        "n_plan": len(plan),
        "n_real": len(real),
    }


def row_rng(design: str, truth: str) -> np.random.Generator:
    """One row's resampling generator (the same SEs in the full and the compact table)."""
    return np.random.default_rng([ORDER.index(design), TRUTHS.index(truth)])


def verdict(value: float, goal: float, se: float) -> str:
    """'met', or how far outside the goal in SEs."""
    if abs(value) <= goal:
        return "met"
    return f"{(abs(value) - goal) / se:.1f} SE out"


def compact(raw: Path, reference_ms: float) -> None:
    """design | truth | width ratio (SE) | power plan / real (diff, SE)."""
    print("| design | truth | CI width ratio, plan / real (SE) | power, plan / real | diff (SE) |")
    print("|---|---|---|---|---|")
    for design in ORDER:
        for truth in TRUTHS:
            path = raw / f"{design}_{truth}.npz"
            if not path.exists():
                continue
            data = np.load(path)
            r = row(data["plan"], data["real"], reference_ms, row_rng(design, truth))
            on, se, mark = (
                ("median_ratio", r["median_se"], "*")
                if r["heavy"]
                else ("mean_ratio", r["mean_se"], "")
            )
            diff = r["power_plan"] - r["power_real"]
            print(
                f"| {NAMES[design]} | {truth} | {r[on]:.2f}{mark} ({se:.2f}) | "
                f"{r['power_plan']:.2f} / {r['power_real']:.2f} | "
                f"{diff:+.2f} ({r['power_se']:.2f}) |"
            )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("raw", type=Path, help="the --raw folder of plan_validation.py")
    ap.add_argument("--reference-ms", type=float, default=1000.0)
    ap.add_argument("--compact", action="store_true", help="the short table of README")
    args = ap.parse_args()
    if args.compact:
        compact(args.raw, args.reference_ms)
        return
    print(
        "| design | truth | mean width plan / real | ratio (SE) | median width plan / real "
        "| ratio (SE) | width goal | power plan / real | diff (SE) | power goal |"
    )
    print("|---|---|---|---|---|---|---|---|---|---|")
    for design in ORDER:
        for truth in TRUTHS:
            path = args.raw / f"{design}_{truth}.npz"
            if not path.exists():
                continue
            data = np.load(path)
            r = row(data["plan"], data["real"], args.reference_ms, row_rng(design, truth))
            on = "median_ratio" if r["heavy"] else "mean_ratio"
            se = r["median_se"] if r["heavy"] else r["mean_se"]
            width_goal = verdict(r[on] - 1.0, 0.10, se) + (" (median)" if r["heavy"] else "")
            diff = r["power_plan"] - r["power_real"]
            if r["heavy"]:  # the means of a few enormous intervals: no figure to compare
                tail = r["mean_plan"] / r["median_plan"]
                mean_cell, ratio_cell = f"heavy tail (plan mean = {tail:,.1f} x median)", "-"
            else:
                mean_cell = f"{r['mean_plan']:,.0f} / {r['mean_real']:,.0f} ms"
                ratio_cell = f"{r['mean_ratio']:.2f} ({r['mean_se']:.2f})"
            print(
                f"| {NAMES[design]} | {truth} | {mean_cell} | {ratio_cell} "
                f"| {r['median_plan']:,.0f} / {r['median_real']:,.0f} ms | "
                f"{r['median_ratio']:.2f} ({r['median_se']:.2f}) | {width_goal} | "
                f"{r['power_plan']:.2f} / {r['power_real']:.2f} | "
                f"{diff:+.2f} ({r['power_se']:.2f}) | {verdict(diff, 0.05, r['power_se'])} |"
            )


if __name__ == "__main__":
    main()
