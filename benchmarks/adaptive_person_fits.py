"""Each person's own fit on an adaptive design, as the report makes it, scored against truth.

People come from the independent simulator (`tests/independent_tables.py`: a 1-up/2-down
staircase and QUEST+ written from their textbook definitions, 48 trials a person); each is
fitted by `analysis.report.psychometric_part.fit_participant` as the report fits a person
on an adaptive design (guess = lapse = 0, Firth's bias reduction) and, for comparison, as it
fits one on a fixed design (guess and lapse free in [0, 0.1], maximum likelihood), which is
how adaptive designs were fitted before 2026-12-07. Printed:

1. per person: the log-scale bias of the 25 / 50 / 75% points and the coverage of their 95%
   intervals (B bootstrap refits), the 50% point's bias as fitted before;
2. the median of the people's 50% points in a study of N people against the population's
   median person (the figure `--estimand median-person` would print), now and before.

Targets (issue 30): coverage 0.93-0.97, bias under 2% at 50% and 5% at 25 / 75%. The mean
log error over n people carries a Monte-Carlo SE of about sd / sqrt(n) (0.6% for 300
staircase people, whose single estimates spread about 11%).

    nice -n 10 uv run python benchmarks/adaptive_person_fits.py [--people 300] [--studies 60]
        [--designs staircase,quest] [--observers alike,differing,steep,skewed] [--n-boot 200]
        [--without-sensitivity] [--no-median]
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from independent_tables import (
    OBSERVERS,
    at_place,
    median_person_points_ms,
    person_point_ms,
    quest_plus_trials,
    staircase_trials,
)

from analysis.psychometric import PsychometricFitter
from analysis.report.psychometric_part import fit_participant

TRIALS = 48
DESIGNS = {"staircase": staircase_trials, "quest": quest_plus_trials}
LEVELS = (0.25, 0.5, 0.75)


def person_rows(
    design: str, name: str, people: int, n_boot: int, seed: int, without_sensitivity: bool
) -> dict[str, str]:
    """Bias and coverage of each person's points over `people` people of one design (with
    `without_sensitivity`, also the 50% interval's coverage without the sensitivity
    bootstrap, the same fit otherwise)."""
    obs = at_place(OBSERVERS[name], "between levels")
    rng = np.random.default_rng(seed)
    errors: dict[float, list[float]] = {level: [] for level in LEVELS}
    covered: dict[float, list[bool]] = {level: [] for level in LEVELS}
    before: list[float] = []
    plain: list[bool] = []
    for i, m_ms in enumerate(obs.centre_ms * np.exp(obs.offsets(people, rng))):
        x, y = DESIGNS[design](float(m_ms), obs, rng, TRIALS)
        fit = fit_participant(x, y, n_boot=n_boot, seed=i, adaptive=True)
        table = fit.thresholds_.set_index("level")
        for level in LEVELS:
            truth = person_point_ms(float(m_ms), obs, level)
            errors[level].append(math.log(table.loc[level, "estimate"] / truth))
            covered[level].append(
                table.loc[level, "ci_low"] <= truth <= table.loc[level, "ci_high"]
            )
        old = fit_participant(x, y, n_boot=0, seed=i)
        before.append(math.log(old.threshold(0.5) / m_ms))
        if without_sensitivity:
            bare = PsychometricFitter(guess=0.0, lapse=0.0, bias_reduction=True)
            bare.fit_trials(x, y, n_boot=n_boot, seed=i, sensitivity=False)
            low, high = bare.threshold_ci(0.5)
            plain.append(low <= m_ms <= high)
    row = {"design": design, "observers": name, "people": str(people)}
    for level in LEVELS:
        e = np.array(errors[level])
        se = np.std(e, ddof=1) / math.sqrt(e.size)
        row[f"{level:.0%}"] = (
            f"{100 * e.mean():+.1f}% ± {100 * se:.1f}, {np.mean(covered[level]):.2f}"
        )
    row["50% before"] = f"{100 * np.mean(before):+.1f}%"
    if without_sensitivity:
        row["50% coverage without the sensitivity step"] = f"{np.mean(plain):.3f}"
    return row


def median_rows(design: str, name: str, people: int, studies: int, seed: int) -> dict[str, str]:
    """Bias of the median of N people's 50% points, now and as fitted before."""
    obs = at_place(OBSERVERS[name], "between levels")
    truth = median_person_points_ms(obs)[0.5]
    rng = np.random.default_rng(seed)
    now, before = [], []
    for _ in range(studies):
        mine, old = [], []
        for m_ms in obs.centre_ms * np.exp(obs.offsets(people, rng)):
            x, y = DESIGNS[design](float(m_ms), obs, rng, TRIALS)
            if np.unique(x).size < 3:  # the report fits no one with fewer levels
                continue
            mine.append(fit_participant(x, y, n_boot=0, seed=0, adaptive=True).threshold(0.5))
            old.append(fit_participant(x, y, n_boot=0, seed=0).threshold(0.5))
        now.append(math.log(float(np.median(mine)) / truth))
        before.append(math.log(float(np.median(old)) / truth))
    se = np.std(now, ddof=1) / math.sqrt(len(now))
    return {
        "design": design,
        "observers": name,
        "N": str(people),
        "median person, now": f"{100 * np.mean(now):+.1f}% ± {100 * se:.1f}",
        "before": f"{100 * np.mean(before):+.1f}%",
    }


def table(rows: list[dict[str, str]]) -> str:
    head = list(rows[0])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(r[k] for k in head) + " |" for r in rows]
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--people", type=int, default=300, help="people per design and observers")
    ap.add_argument("--studies", type=int, default=60, help="studies per median-person cell")
    ap.add_argument("--designs", default="staircase,quest")
    ap.add_argument("--observers", default="alike,differing,steep,skewed")
    ap.add_argument("--n-boot", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument(
        "--without-sensitivity",
        action="store_true",
        help="also each person's 50%% interval without the sensitivity bootstrap",
    )
    ap.add_argument("--no-median", action="store_true", help="skip the median-person part")
    args = ap.parse_args()
    designs, observers = args.designs.split(","), args.observers.split(",")
    print(
        f"adaptive person fits: {args.people} people a cell, {args.studies} studies a median "
        f"cell, B = {args.n_boot}, seed {args.seed}; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}, load average "
        f"{os.getloadavg()[0]:.1f} at the start\n"
    )
    print("Each person (log-scale bias ± Monte-Carlo SE, coverage of the 95% interval):\n")
    rows = [
        person_rows(d, name, args.people, args.n_boot, args.seed + i, args.without_sensitivity)
        for d in designs
        for i, name in enumerate(observers)
    ]
    print(table(rows), flush=True)
    if args.no_median:
        print(f"\nload average {os.getloadavg()[0]:.1f} at the end")
        return
    print("\nThe median of a study's people's 50% points (log-scale bias ± Monte-Carlo SE):\n")
    rows = [
        median_rows(d, name, n, args.studies, args.seed + 100 * n + i)
        for d in designs
        for i, name in enumerate(observers)
        for n in (4, 8, 20)
    ]
    print(table(rows))
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
