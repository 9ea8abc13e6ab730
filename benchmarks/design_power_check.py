"""Does the verdicts' power hold? The sensitivity `uxlab report` prints beside a verdict
("80% power to exclude a figure xR or more from the true threshold"), against the design's
real power at that R.

`uxlab.plan.sensitivity.design_sensitivity` fits a truth to a study's own trials and
simulates studies of its size and design. Here many tables are drawn from one known truth
(the simulator's default population, or people who differ more), on a study's design (8
levels from 100 ms to 5 s, 6 answers a level); for each, the report's R is computed from
the table alone, and the design's real power at R is read from 2,000 studies simulated from
the known truth (the share whose interval excludes a figure R times above or below it).
Printed per N: the real sensitivity (R at 80% with the truth known), the report's R
(median, 10-90%; a table whose design excludes no figure up to x10 counts as x10), and the
real power at the report's R (median, 10-90%).

Usage:
    uv run python benchmarks/design_power_check.py                  # 60 tables at N = 4, 8, 20
    uv run python benchmarks/design_power_check.py --people 4 --tables 20 --spread 0.5
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import time

import numpy as np
import pandas as pd

from uxlab.plan.sensitivity import (
    MAX_RATIO,
    design_sensitivity,
    exclusion_share,
    sensitivity_from,
)
from uxlab.plan.table_design import TableDesign, simulate_studies
from uxlab.plan.truth import PilotTruth
from uxlab.simulate.observers import Cues, Observer, PopulationTruth

LEVELS = np.array([100.0, 175.0, 300.0, 530.0, 920.0, 1600.0, 2800.0, 5000.0])
ANSWERS = 6
"""Answers a participant gives at each level (the bundled TTFT study: 3 repeats x 2 blocks)."""


def trial_table(truth: PopulationTruth, n_people: int, seed: int) -> pd.DataFrame:
    """A kept-trials table of `n_people` drawn from `truth`: participant, ttft_ms and the
    yes/no answer of an "acceptable?" question (yes falls with latency)."""
    rng = np.random.default_rng([seed, n_people])
    rows = []
    for p in range(n_people):
        obs = Observer.draw(truth, rng)
        for x in LEVELS:
            slow = rng.random(ANSWERS) < obs.p_too_slow(Cues(x, None, 0.0, x))
            rows.extend((f"p{p:03d}", x, "no" if s else "yes") for s in slow)
    return pd.DataFrame(rows, columns=["participant", "ttft_ms", "q_acceptable"])


def known_design(truth: PopulationTruth, n_people: int) -> TableDesign:
    """The design with the truth known (one draw: the truth itself)."""
    pilot = PilotTruth(truth, [truth], n_people, n_people * LEVELS.size * ANSWERS, "known")
    n_level = np.full(LEVELS.size, float(ANSWERS))
    return TableDesign(LEVELS, n_level, True, pilot, n_people)


def check(truth: PopulationTruth, n_people: int, tables: int, seed: int) -> dict[str, float]:
    """The report's R on `tables` tables against the design's real power at it."""
    real = simulate_studies(known_design(truth, n_people), n_people, sims=2000, n_boot=0, seed=seed)
    stated = []
    for t in range(tables):
        table = trial_table(truth, n_people, seed * 1000 + t)
        stated.append(design_sensitivity(table, "ttft_ms", "q_acceptable", seed=t))
    ratios = np.minimum(np.array(stated), MAX_RATIO)  # "none up to x10" counts as x10
    powers = exclusion_share(real, ratios)
    return {
        "real_R": sensitivity_from(real),
        "R_median": float(np.median(ratios)),
        "R_10": float(np.quantile(ratios, 0.1)),
        "R_90": float(np.quantile(ratios, 0.9)),
        "none": float(np.mean(ratios >= MAX_RATIO)),
        "power_median": float(np.median(powers)),
        "power_10": float(np.quantile(powers, 0.1)),
        "power_90": float(np.quantile(powers, 0.9)),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--people", type=int, nargs="+", default=[4, 8, 20])
    ap.add_argument("--tables", type=int, default=60)
    ap.add_argument("--spread", type=float, default=0.25, help="between-people SD, ln ms")
    ap.add_argument("--seed", type=int, default=1207)
    args = ap.parse_args(argv)
    truth = dataclasses.replace(PopulationTruth(), between_sd_log=args.spread)
    load = os.getloadavg()[0]
    print(
        f"design power check: truth threshold {truth.threshold_ms:g} ms, width "
        f"{truth.width_log:g} ln ms, spread {truth.between_sd_log:g} ln ms; {args.tables} "
        f"tables a cell; load {load:.1f} at the start"
    )
    print(" N   real R   report's R median [10%, 90%]   real power at it median [10%, 90%]")
    for n in args.people:
        t0 = time.process_time()
        r = check(truth, n, args.tables, args.seed)
        print(
            f"{n:2d}   x{r['real_R']:.2f}   x{r['R_median']:.2f} [x{r['R_10']:.2f}, "
            f"x{r['R_90']:.2f}]            {r['power_median']:.2f} [{r['power_10']:.2f}, "
            f"{r['power_90']:.2f}]   ({time.process_time() - t0:.0f} s CPU"
            + (f"; {r['none']:.0%} of tables: none up to x10" if r["none"] else "")
            + ")",
            flush=True,
        )
    print(f"load {os.getloadavg()[0]:.1f} at the end")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
