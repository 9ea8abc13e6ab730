"""Bias of the pooled 25 / 50 / 75% thresholds on adaptive designs: pooled fit vs the report's
participant-effects model.

Each simulated study has 16 people who differ (50% points log-normal around 800 ms, SD 0.3
ln ms; width 1.0 ln ms; guess = lapse = 0.02) answering "too slow?"; each person's 40
levels are chosen by a 1-up/2-down staircase or QUEST+ on 100-5000 ms (`uxlab.study.adaptive`,
as `benchmarks.support.adaptive_validation` runs them). The truth is the population curve: where the
share of people's F crossing the level, averaged over the population, reaches 25 / 50 / 75%.
Estimators: the psychometric fit of all trials pooled (no participant effects; what the
report used before) and the random-intercept logit the report now uses on adaptive designs
(`analysis.ratings.fit_mixed_acceptability`). Prints the mean relative bias per level.

    uv run python benchmarks/adaptive_pooled_bias.py [--studies 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import math
import os
import time

import numpy as np
import pandas as pd
from scipy import optimize

from analysis.psychometric import PsychometricFitter
from analysis.ratings import fit_mixed_acceptability
from benchmarks.support.adaptive_validation import HIGH_MS, LOW_MS, TrueObserver
from psychometric_function import core
from uxlab.study.adaptive import AdaptiveSpec, make_procedure

POP_MS, SD_LN, WIDTH_LN, PEOPLE, TRIALS = 800.0, 0.3, 1.0, 16, 40
LEVELS = (0.25, 0.5, 0.75)
_Z = np.random.default_rng(12345).normal(size=20000)


def population_point(level: float) -> float:
    """Where the population's mean F (no guess / lapse) crosses `level`."""
    m = np.log(POP_MS) + SD_LN * _Z

    def share(u: float) -> float:
        return float(np.mean(core(u, m, WIDTH_LN))) - level

    return float(np.exp(optimize.brentq(share, math.log(10), math.log(1e5))))


def simulate_study(method: str, rng: np.random.Generator) -> pd.DataFrame:
    rows = []
    for person in range(PEOPLE):
        obs = TrueObserver(float(POP_MS * np.exp(rng.normal(0, SD_LN))), WIDTH_LN)
        spec = AdaptiveSpec(method, LOW_MS, HIGH_MS, down=2, max_reversals=10**6)
        proc = make_procedure(spec, int(rng.integers(1 << 31)))
        for _ in range(TRIALS):
            x = proc.next_level()
            yes = bool(rng.random() < obs.p(x))
            proc.update(x, yes)
            rows.append({"participant": f"p{person}", "x": float(x), "y": float(yes)})
    return pd.DataFrame(rows)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=40)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--methods", default="staircase,quest")
    args = ap.parse_args()
    truth = {level: population_point(level) for level in LEVELS}
    load, t0 = os.getloadavg()[0], time.perf_counter()
    print("truth (population curve): " + ", ".join(f"{k:.0%} {v:.0f} ms" for k, v in truth.items()))
    print("| design | estimator | 25% bias | 50% bias | 75% bias |")
    print("|---|---|---:|---:|---:|")
    for method in args.methods.split(","):
        rng = np.random.default_rng(args.seed)
        pooled, mixed = [], []
        for _ in range(args.studies):
            df = simulate_study(method, rng)
            fit = PsychometricFitter(direction="rising").fit_trials(df.x, df.y, n_boot=0)
            pooled.append([fit.threshold(level) for level in LEVELS])
            model = fit_mixed_acceptability(df.assign(f=1 - df.y), "f", "x", 1.0, n_boot=2)
            mixed.append([model.threshold_ms(level) for level in LEVELS])
        for name, est in (("pooled fit", pooled), ("random intercept (report)", mixed)):
            rel = np.nanmean(np.array(est) / np.array([truth[v] for v in LEVELS]) - 1, axis=0)
            print(f"| {method} | {name} | " + " | ".join(f"{b:+.1%}" for b in rel) + " |")
    print(
        f"{args.studies} studies x {PEOPLE} people x {TRIALS} trials per design, seed "
        f"{args.seed}; load average {load:.1f} before, {os.getloadavg()[0]:.1f} after; "
        f"{time.perf_counter() - t0:.0f} s wall"
    )


if __name__ == "__main__":
    main()
