"""Where the pooled 50% point's bias comes from when people's thresholds spread unevenly.

With a right-skewed spread of people's 50% points (a standardised gamma of shape 2, SD 0.3
ln ms: `tests/independent_tables.py`), the report's pooled 50% point came out +2% to +3%
on the log scale with 4-8 people, over the 2% goal (docs/explanation/validation.md). This
splits that bias into three parts, on the independent simulator's fixed design (7 levels,
8 answers a level):

1. **the people sampled**: the 50% point of the curve of the N people drawn (their own
   curves averaged, no trials, no fit) against the population's: what any estimate of the
   sample's curve inherits (the sample median of a skewed spread lies above its median);
2. **the family**: the report's pooled curve (a cumulative normal) fitted to the
   population curve's own expected answers at the tested levels (a million trials a level):
   what the curve's shape misses with unlimited data;
3. **the estimate**: the report's pooled point on simulated studies, with its participant
   jackknife-t interval (without the parametric floor), and beside it the participant
   jackknife's bias-corrected point (N x estimate - (N - 1) x the mean of the leave-one-out
   estimates) with the same half-width: its bias, spread and coverage.

Prints log-scale bias (the geometric-mean ratio of estimate to truth) with its Monte-Carlo
SE, the SD of the log estimate, and coverage, at 25 / 50 / 75%.

Usage:
    uv run python benchmarks/skewed_pooled_bias.py                       # 800 studies a cell
    uv run python benchmarks/skewed_pooled_bias.py --observers skewed --people 8 --studies 200
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np
from scipy import optimize

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from independent_tables import (
    FIXED_LEVELS_MS,
    OBSERVERS,
    LN9x2,
    Study,
    at_place,
    population_points_ms,
    simulate_study,
)

import analysis.small_sample_interval as ssi
from analysis.psychometric import PsychometricFitter, threshold_logs
from benchmarks.support.jackknife_capture import REPORTS, kept_jackknife

LEVELS = (0.25, 0.5, 0.75)


def _pct(log_ratio: float) -> str:
    return f"{100 * math.expm1(log_ratio):+.1f}%"


def sample_curve_bias(obs, n: int, draws: int, rng: np.random.Generator) -> np.ndarray:
    """Mean log ratio of the sampled people's own curve's points to the population's."""
    truth = np.log([population_points_ms(obs)[level] for level in LEVELS])
    scale = obs.w_ln / LN9x2
    points = np.empty((draws, len(LEVELS)))
    for d in range(draws):
        m = math.log(obs.centre_ms) + obs.offsets(n, rng)
        for j, level in enumerate(LEVELS):

            def share(u: float, level: float = level, m: np.ndarray = m) -> float:
                return float(np.mean(1.0 / (1.0 + np.exp(-(u - m) / scale)))) - level

            points[d, j] = optimize.brentq(share, 0.0, 15.0)
    return points.mean(axis=0) - truth


def family_bias(obs) -> np.ndarray:
    """Log ratio of the pooled curve's points, fitted to the population's expected answers
    (with guess and lapse, a million trials a level), to the population's."""
    truth = np.log([population_points_ms(obs)[level] for level in LEVELS])
    m = math.log(obs.centre_ms) + obs.offsets(40_000, np.random.default_rng(2026))
    scale = obs.w_ln / LN9x2
    x = np.asarray(FIXED_LEVELS_MS, dtype=float)
    core = np.array([np.mean(1.0 / (1.0 + np.exp(-(math.log(v) - m) / scale))) for v in x])
    p = obs.guess + (1.0 - obs.guess - obs.lapse) * core
    n = np.full(x.size, 1_000_000.0)
    fit = PsychometricFitter(ssi.POPULATION_SIGMOID).fit(
        x, np.round(p * n), n, n_boot=0, sensitivity=False
    )
    res = fit.result_
    return threshold_logs(res.layout, res.theta[None, :], LEVELS)[0] - truth


def estimate_rows(
    obs, n: int, studies: int, rng: np.random.Generator, kept: dict[str, np.ndarray]
) -> dict[str, list]:
    """Per study: the report's pooled log points and the bias-corrected ones, and whether
    each one's interval covers the truth."""
    truth = np.log([population_points_ms(obs)[level] for level in LEVELS])
    out: dict[str, list] = {"plain": [], "corrected": [], "plain_hit": [], "corrected_hit": []}
    for s in range(studies):
        trials = simulate_study(Study("fixed", obs, n, 8), rng)
        ssi.population_threshold_small_n(
            trials, "ttft_ms", "too_slow", "participant", n_boot=0, seed=s
        )
        est, jack = kept["est"], kept["jack"]
        low, high = REPORTS(est, jack)
        corrected = np.full(len(LEVELS), np.nan)
        for j in range(len(LEVELS)):
            col = jack[:, j][np.isfinite(jack[:, j])]
            if col.size >= 2:
                corrected[j] = col.size * est[j] - (col.size - 1) * col.mean()
        half = high - est
        out["plain"].append(est)
        out["corrected"].append(corrected)
        out["plain_hit"].append((low <= truth) & (truth <= high))
        out["corrected_hit"].append((corrected - half <= truth) & (truth <= corrected + half))
    return out


def _summary(estimates: list, hits: list, truth: np.ndarray) -> str:
    e = np.array(estimates, dtype=float)
    bias = np.nanmean(e, axis=0) - truth
    sd = np.nanstd(e, axis=0)
    se = sd / math.sqrt(len(e))
    cover = np.nanmean(np.array(hits, dtype=float), axis=0)
    return (
        " / ".join(f"{_pct(b)} ± {100 * s:.1f}" for b, s in zip(bias, se, strict=True))
        + " | "
        + " / ".join(f"{v:.3f}" for v in sd)
        + " | "
        + " / ".join(f"{v:.3f}" for v in cover)
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--observers", default="skewed,differing")
    parser.add_argument("--people", default="4,8,20")
    parser.add_argument("--studies", type=int, default=800)
    parser.add_argument("--draws", type=int, default=4000, help="samples of people for part 1")
    parser.add_argument("--seed", type=int, default=5107)
    args = parser.parse_args(argv)
    with kept_jackknife() as kept:  # the report's own leave-one-out estimates
        _run(args, kept)
    return 0


def _run(args: argparse.Namespace, kept: dict[str, np.ndarray]) -> None:
    started = time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())
    print(
        f"{args.studies} studies a cell, seed {args.seed}, {started}, "
        f"load average {os.getloadavg()[0]:.1f} at the start"
    )
    print("log-scale bias ± MC SE at 25 / 50 / 75% | SD of the log estimate | coverage")
    people_counts = [int(v) for v in args.people.split(",")]
    for name in args.observers.split(","):
        # the same offsets wherever the median lies: one computation a count of people
        people = {
            n: sample_curve_bias(OBSERVERS[name], n, args.draws, np.random.default_rng([1, n]))
            for n in people_counts
        }
        print(
            f"\n{name}: the people sampled (no trials, no fit) "
            + "; ".join(f"N = {n}: " + " / ".join(map(_pct, b)) for n, b in people.items())
        )
        for place in ("between levels", "on a level"):
            obs = at_place(OBSERVERS[name], place)
            truth = np.log([population_points_ms(obs)[level] for level in LEVELS])
            fam = family_bias(obs)
            print(f"{name}, {place}: the family (unlimited trials) " + " / ".join(map(_pct, fam)))
            for n in people_counts:
                rng = np.random.default_rng([args.seed, n])
                rows = estimate_rows(obs, n, args.studies, rng, kept)
                print(f"  N = {n}:")
                print(
                    "    the report's point   " + _summary(rows["plain"], rows["plain_hit"], truth)
                )
                print(
                    "    jackknife-corrected  "
                    + _summary(rows["corrected"], rows["corrected_hit"], truth),
                    flush=True,
                )
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    raise SystemExit(main())
