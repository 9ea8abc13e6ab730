"""How long `uxlab plan`'s default grid takes, and what the batched analysis saves.

1. The default grid of a study (`--study`, default `studies/ttft-threshold.toml`; 8 x 6
   cells, `--sims` studies per cell, 200 participant resamples each) through `run_plan`
   with `--jobs` processes: wall seconds, with the load average before and after, and the
   CPU seconds of this process and its workers. On a shared machine the wall time says how
   busy it was; the CPU time divided by the processes is what the same run needs on an
   otherwise idle machine with that many cores (a little more than that: start-up and the
   parent's merging).
2. Baseline from the same run, `--baseline` studies of one cell (15 people, repeats 5):
   on a fixed design, each analysed alone with the report's `population_threshold`
   (B = 200) against all of them in one `population_thresholds_batch` call; on an
   adaptive design (`studies/ttft-quest.toml`: QUEST+), where the report prints the median
   of the sessions' own estimates, each study's estimates through the report's adaptive
   section (`adaptive_part` on a sessions table) against the planner's
   `adaptive_median_figures` on all of them: CPU seconds each and the ratio.

    python benchmarks/plan_speed.py [--study studies/ttft-quest.toml] [--sims 200]
        [--jobs 2] [--baseline 20]
"""

from __future__ import annotations

import argparse
import os
import resource
import time
from pathlib import Path
from types import SimpleNamespace

import numpy as np
import pandas as pd

from analysis.population_batch import population_thresholds_batch
from analysis.report.adaptive_part import adaptive_part
from analysis.small_sample_interval import population_threshold_small_n as population_threshold
from uxlab.plan.defaults import (
    DEFAULT_N_PARTICIPANTS,
    DEFAULT_N_REPEATS,
    DEFAULT_PARTICIPANTS,
    DEFAULT_REPEATS,
)
from uxlab.plan.engine import (
    PlanSpec,
    _study_and_designs,
    adaptive_median_figures,
    run_plan,
    simulate_counts,
    study_levels,
)
from uxlab.plan.grid import parse_range
from uxlab.simulate.observers import PopulationTruth

STUDY = Path(__file__).resolve().parents[1] / "studies" / "ttft-threshold.toml"
LEVELS = (0.25, 0.5, 0.75)


def _cpu_seconds() -> float:
    """User + system CPU seconds of this process and its finished children."""
    own = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + kids.ru_utime + kids.ru_stime


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--study", type=Path, default=STUDY, help="the study file")
    ap.add_argument("--sims", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--baseline", type=int, default=20, help="studies in the baseline")
    ap.add_argument("--participants", default=DEFAULT_PARTICIPANTS)
    ap.add_argument("--repeats", default=DEFAULT_REPEATS)
    args = ap.parse_args()
    people = tuple(parse_range(args.participants, DEFAULT_N_PARTICIPANTS))
    repeats = tuple(parse_range(args.repeats, DEFAULT_N_REPEATS))
    spec = PlanSpec(args.study, people, repeats, (PopulationTruth(),), args.sims, 200, 0)
    load0 = os.getloadavg()[0]
    cpu0 = _cpu_seconds()
    started = time.perf_counter()
    run_plan(spec, jobs=args.jobs)
    wall = time.perf_counter() - started
    cpu = _cpu_seconds() - cpu0
    print(
        f"{args.study.name}, default grid: {len(people)} x {len(repeats)} cells x {args.sims} "
        f"studies, {args.jobs} processes: {wall:.0f} s wall (load average {load0:.1f} before, "
        f"{os.getloadavg()[0]:.1f} after); {cpu:.0f} CPU s, i.e. ~{cpu / args.jobs:.0f} s "
        f"wall on {args.jobs} idle cores (this run got {cpu / wall:.2f} cores)"
    )
    # baseline: one cell's studies, one at a time (the report's path) vs the planner's
    study, designs = _study_and_designs(spec)
    levels = study_levels(designs[max(repeats)])
    n_people, r = 15, 5
    counts = [simulate_counts(spec, study, designs, s) for s in range(args.baseline)]
    k = np.stack([c[r][0][:n_people] for c in counts])
    n = np.stack([c[r][1][:n_people] for c in counts])
    adaptive = designs[r].adaptive
    if adaptive is not None:
        estimates = np.stack([c[r].estimates[:n_people] for c in counts])
        report_s, planner_s = _adaptive_baseline(estimates, adaptive.spec.procedure)
        what = "the report's adaptive section one at a time", "adaptive_median_figures"
    else:
        report_s, planner_s = _fixed_baseline(levels, k, n)
        what = "population_threshold one at a time", "batched"
    print(
        f"baseline, cell {n_people} people x repeats {r}, {args.baseline} studies: "
        f"{what[0]} {report_s:.2f} CPU s, {what[1]} {planner_s:.2f} CPU s "
        f"(x{report_s / planner_s:.2f})"
    )


def _trials(levels: np.ndarray, k: np.ndarray, n: np.ndarray) -> pd.DataFrame:
    """One study's trial table (participant, x, y) from its counts [P, L]."""
    rows = [
        (f"P{p:03d}", levels[j], y)
        for p in range(k.shape[0])
        for j in range(levels.size)
        for y in [1] * int(k[p, j]) + [0] * int(n[p, j] - k[p, j])
    ]
    return pd.DataFrame(rows, columns=["participant", "x", "y"])


def _fixed_baseline(levels: np.ndarray, k: np.ndarray, n: np.ndarray) -> tuple[float, float]:
    t0 = time.process_time()
    for s in range(k.shape[0]):
        df = _trials(levels, k[s], n[s])
        if df.empty or df["participant"].nunique() < 2:
            continue
        population_threshold(df, "x", "y", "participant", 200, s)
    one_by_one = time.process_time() - t0
    t0 = time.process_time()
    population_thresholds_batch(levels, k, n, n_boot=200, seeds=list(range(k.shape[0])))
    return one_by_one, time.process_time() - t0


def _adaptive_baseline(estimates: np.ndarray, procedure: str) -> tuple[float, float]:
    """The report's adaptive section on each study's sessions against the planner's
    figures of all the studies at once (`estimates` [S, P], ms)."""
    t0 = time.process_time()
    for row in estimates:
        people = [f"P{p:03d}" for p in range(row.size)]
        sessions = pd.DataFrame(
            {
                "participant": people,
                "adaptive_ttft_ms_estimate": row,
                "adaptive_ttft_ms_target": 0.5,
                "adaptive_ttft_ms_procedure": procedure,
            }
        )
        data = SimpleNamespace(
            table=SimpleNamespace(sessions=sessions),
            kept=pd.DataFrame({"participant": people, "ttft_ms": row}),
            options=SimpleNamespace(seed=0, n_boot=0),
            tested_range=(float(np.nanmin(row)), float(np.nanmax(row))),
        )
        adaptive_part(data)
    report = time.process_time() - t0
    t0 = time.process_time()
    adaptive_median_figures(estimates, procedure)
    return report, time.process_time() - t0


if __name__ == "__main__":
    main()
