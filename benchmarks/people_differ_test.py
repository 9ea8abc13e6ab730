"""How often the report's test of "participants differ" rejects, for people alike and not.

The report's summary says whether per-person curves differ more than their trials' noise
allows: a likelihood-ratio test of one curve for everyone against one each
(`analysis.psychometric.people_differ`), each curve fitted as the report fits a person
(`analysis.report.psychometric_part.fit_participant`). Studies come from the independent
simulator (`tests/independent_tables.py`): people `alike` (the size of the test: it should
reject about 5% of studies at the 0.05 level, or fewer) and `differing` (ln 50% points
spread with SD 0.3: its power), on the fixed design (7 levels x 8 trials), a 1-up/2-down
staircase and QUEST+ (48 trials a person).

    nice -n 10 uv run python benchmarks/people_differ_test.py [--studies 100]
        [--designs fixed,staircase,quest] [--people 4,8] [--seed 5]

Measured 2026-12-07 (100 studies a cell, seed 5, load average 4.5 at the start and 3.0 at
the end): the share of studies rejected at the 0.05 level was, on the fixed design, 0.02 for
people alike at 4 and at 8 and 0.66 / 0.84 for people who differ; people alike were rejected
in 0.08 / 0.16 of staircase studies of 4 / 8 and 0.11 / 0.40 of QUEST+ ones, so the report
runs the test on fixed designs only.
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from independent_tables import (
    OBSERVERS,
    at_place,
    fixed_trials,
    quest_plus_trials,
    staircase_trials,
)

from analysis.psychometric.people_differ import one_curve_for_all_p
from analysis.report.psychometric_part import fit_participant


def study_p(design: str, observers: str, people: int, rng: np.random.Generator) -> float:
    """The test's p for one simulated study."""
    obs = at_place(OBSERVERS[observers], "between levels")
    adaptive = design != "fixed"
    each, xs, ys = [], [], []
    for m in obs.centre_ms * np.exp(obs.offsets(people, rng)):
        if design == "fixed":
            x, y = fixed_trials(float(m), obs, rng, 8)
        elif design == "staircase":
            x, y = staircase_trials(float(m), obs, rng, 48)
        else:
            x, y = quest_plus_trials(float(m), obs, rng, 48)
        each.append(fit_participant(x, y, n_boot=0, seed=0, adaptive=adaptive))
        xs.append(x)
        ys.append(y)
    together = fit_participant(
        np.concatenate(xs), np.concatenate(ys), n_boot=0, seed=0, adaptive=adaptive
    )
    return one_curve_for_all_p(each, together)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=100)
    parser.add_argument("--designs", default="fixed,staircase,quest")
    parser.add_argument("--people", default="4,8")
    parser.add_argument("--seed", type=int, default=5)
    args = parser.parse_args()
    print(f"load average {os.getloadavg()[0]:.1f} at the start; {args.studies} studies a cell")
    print(f"{'design':10s} {'observers':10s} {'N':>3s}  reject@0.05  reject@0.01  median p")
    for design in args.designs.split(","):
        for observers in ("alike", "differing"):
            for people in (int(n) for n in args.people.split(",")):
                rng = np.random.default_rng(args.seed)
                ps = np.array(
                    [study_p(design, observers, people, rng) for _ in range(args.studies)]
                )
                print(
                    f"{design:10s} {observers:10s} {people:3d}  {np.mean(ps < 0.05):11.3f}  "
                    f"{np.mean(ps < 0.01):11.3f}  {np.median(ps):8.2f}",
                    flush=True,
                )
    print(f"load average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
