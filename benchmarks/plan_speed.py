"""How long `uxlab plan`'s default grid takes, and what the batched analysis saves.

1. The default grid of `studies/ttft-threshold.toml` (8 x 6 cells, `--sims` studies per
   cell, 200 participant resamples each) through `run_plan` with `--jobs` processes: wall
   seconds, with the load average before and after, and the CPU seconds of this process
   and its workers. On a shared machine the wall time says how busy it was; the CPU time
   divided by the processes is what the same run needs on an otherwise idle machine with
   that many cores (a little more than that: start-up and the parent's merging).
2. Baseline from the same run: `--baseline` studies of one cell analysed one at a time
   with the report's `population_threshold` (B = 200) against the same studies in one
   `population_thresholds_batch` call: seconds each and the ratio.

    python benchmarks/plan_speed.py [--sims 200] [--jobs 2] [--baseline 20]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.population_batch import population_thresholds_batch
from analysis.small_sample_interval import population_threshold_small_n as population_threshold
from uxlab.plan.engine import PlanSpec, _study_and_designs, run_plan, simulate_counts, study_levels
from uxlab.plan.grid import (
    DEFAULT_N_PARTICIPANTS,
    DEFAULT_N_REPEATS,
    DEFAULT_PARTICIPANTS,
    DEFAULT_REPEATS,
    parse_range,
)
from uxlab.simulate.observers import PopulationTruth

STUDY = Path(__file__).resolve().parents[1] / "studies" / "ttft-threshold.toml"


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--baseline", type=int, default=20, help="studies in the baseline")
    ap.add_argument("--participants", default=DEFAULT_PARTICIPANTS)
    ap.add_argument("--repeats", default=DEFAULT_REPEATS)
    args = ap.parse_args()
    people = tuple(parse_range(args.participants, DEFAULT_N_PARTICIPANTS))
    repeats = tuple(parse_range(args.repeats, DEFAULT_N_REPEATS))
    spec = PlanSpec(STUDY, people, repeats, (PopulationTruth(),), args.sims, 200, 0)
    load0 = os.getloadavg()[0]
    cpu0 = _cpu_seconds()
    started = time.perf_counter()
    run_plan(spec, jobs=args.jobs)
    wall = time.perf_counter() - started
    cpu = _cpu_seconds() - cpu0
    print(
        f"default grid: {len(people)} x {len(repeats)} cells x {args.sims} studies, "
        f"{args.jobs} processes: {wall:.0f} s wall (load average {load0:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after); {cpu:.0f} CPU s, i.e. ~{cpu / args.jobs:.0f} s "
        f"wall on {args.jobs} idle cores (this run got {cpu / wall:.2f} cores)"
    )
    # baseline: one cell's studies, one at a time vs batched
    study, designs = _study_and_designs(spec)
    levels = study_levels(designs[max(repeats)])
    n_people, r = 15, 5
    counts = [simulate_counts(spec, study, designs, s) for s in range(args.baseline)]
    k = np.stack([c[r][0][:n_people] for c in counts])
    n = np.stack([c[r][1][:n_people] for c in counts])
    t0 = time.perf_counter()
    for s in range(args.baseline):
        rows = [
            (f"P{p:03d}", levels[j], y)
            for p in range(n_people)
            for j in range(levels.size)
            for y in [1] * int(k[s, p, j]) + [0] * int(n[s, p, j] - k[s, p, j])
        ]
        df = pd.DataFrame(rows, columns=["participant", "x", "y"])
        if df.empty or df["participant"].nunique() < 2:
            continue
        population_threshold(df, "x", "y", "participant", 200, s)
    one_by_one = time.perf_counter() - t0
    t0 = time.perf_counter()
    population_thresholds_batch(levels, k, n, n_boot=200, seeds=list(range(args.baseline)))
    batched = time.perf_counter() - t0
    print(
        f"baseline, cell {n_people} people x repeats {r}, {args.baseline} studies: "
        f"population_threshold one at a time {one_by_one:.2f} s, batched {batched:.2f} s "
        f"(x{one_by_one / batched:.2f})"
    )


if __name__ == "__main__":
    main()
