"""Coverage of each participant's own 95% threshold interval (the report's per-person fits).

Simulated people (`uxlab.simulate.simulate_cohort`: observers through the session and the
SQLite store, abandonment and attention checks included) on studies/ttft-threshold.toml,
exported and read as `uxlab report` reads them, exclusions applied; then each person's
answers fitted as the report fits them (`analysis.report.psychometric_part.fit_participant`)
and their 25 / 50 / 75% intervals judged against that person's own truth: where their
lapse-free curve F (`uxlab.simulate.observers.Observer`: ln 50% point ``m_i``, width
``width_log``) crosses the level, the quantity the fit's thresholds name.

`--before` also fits every person with the sensitivity bootstrap's shallow model taken from
the main bootstrap alone (its 84th width percentile: the rule before the profile-likelihood
step, `analysis.psychometric.profile_width`), on the same people and seeds.

Designs: `demo` (the demo's: 8 levels x 6 repeats, guess = lapse = 0.02), `short` (repeats = 1:
16 main trials), `medium` (repeats = 2: 32 main trials), `nolapse` (the demo's
with guess = lapse = 0), `lapse05` (guess =
lapse = 0.05). Coverage with its binomial SE; `ln ratio` is the median of ln(high / low).

    uv run python benchmarks/person_interval_coverage.py [--people 300] [--n-boot 300]
        [--designs demo,short,medium,nolapse,lapse05] [--seed 1]
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np

import psychometric_function as pf
from analysis.report import ReportOptions
from analysis.report.estimate import psychometric_estimate
from analysis.report.psychometric_part import fit_participant
from analysis.trial_table import load_trial_table
from uxlab.plan.design import with_repeats
from uxlab.simulate import simulate_cohort
from uxlab.simulate.truth_option import parse_truth
from uxlab.store import Store
from uxlab.store.export import export_db
from uxlab.study import load_study

STUDY = Path(__file__).resolve().parents[1] / "studies" / "ttft-threshold.toml"
DESIGNS = {  # name: (repeats, --truth text)
    "demo": (3, ""),
    "short": (1, ""),
    "medium": (2, ""),
    "nolapse": (3, "guess=0,lapse=0"),
    "lapse05": (3, "guess=0.05,lapse=0.05"),
}
LEVELS = (0.25, 0.5, 0.75)


def simulated_people(design: str, people: int, seed: int):
    """[(x ms, y 0/1, true ln 50% point)] per analysed person, and the population width."""
    repeats, truth_text = DESIGNS[design]
    truth = parse_truth(truth_text or None)
    study = with_repeats(load_study(STUDY), repeats)
    with tempfile.TemporaryDirectory(prefix="uxlab-person-ci-") as tmp:
        db = Path(tmp) / "study.sqlite"
        with Store.open(db, durable=False) as store:
            done = simulate_cohort(study, store, people, seed=seed, truth=truth)
        export_db(db, Path(tmp) / "export")
        options = ReportOptions(n_boot=0, seed=seed, per_participant=False)
        _, trials = psychometric_estimate(load_trial_table(Path(tmp) / "export"), options)
    m_log = {s.participant: s.observer.m_log for s in done}
    out = []
    for pid, sub in trials.groupby("participant"):
        if sub["_x"].nunique() >= 3:
            out.append((sub["_x"].to_numpy(), sub["_y"].to_numpy(), m_log[str(pid)]))
    return out, truth.width_log


def coverage(people, width_log: float, n_boot: int, seed: int, before: bool = False) -> dict:
    """Per level: share of intervals holding the truth, misses below / above, ln widths
    (`before`: with the bootstrap-only sensitivity model)."""
    import analysis.psychometric.resampling as resampling

    kept = resampling.shallowest_supported
    if before:  # the profile step off: the shallow model is the bootstrap's 84th percentile
        resampling.shallowest_supported = lambda layout, theta, k, n: theta
    seeds = np.random.SeedSequence(seed).spawn(len(people))
    hit = {lv: [] for lv in LEVELS}
    low_miss = {lv: 0 for lv in LEVELS}
    widths = {lv: [] for lv in LEVELS}
    t0 = time.process_time()
    for (x, y, m_log), s in zip(people, seeds, strict=True):
        fit = fit_participant(x, y, n_boot=n_boot, seed=int(s.generate_state(1)[0]))
        for row in fit.thresholds_.itertuples():
            true_ms = pf.threshold_ms(row.level, math.exp(m_log), width_log)
            hit[row.level].append(row.ci_low <= true_ms <= row.ci_high)
            low_miss[row.level] += true_ms < row.ci_low
            widths[row.level].append(math.log(row.ci_high / row.ci_low))
    cpu = time.process_time() - t0
    resampling.shallowest_supported = kept
    return {"hit": hit, "low_miss": low_miss, "widths": widths, "cpu": cpu}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--people", type=int, default=300)
    ap.add_argument("--n-boot", type=int, default=300)
    ap.add_argument("--designs", default="demo,short,nolapse,lapse05")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--before", action="store_true", help="also the bootstrap-only rule")
    args = ap.parse_args()
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
        f"{os.getloadavg()[0]:.1f}; {args.people} simulated people per design, B = "
        f"{args.n_boot}, seed {args.seed}"
    )
    print(
        "| design | rule | trials/person (median) | level | coverage ± SE | truth below / above "
        "| median ln(high/low) | CPU s/person |"
    )
    print("|---|---|---:|---:|---:|---:|---:|---:|")
    for design in args.designs.split(","):
        people, width = simulated_people(design, args.people, args.seed)
        trials = int(np.median([len(p[0]) for p in people]))
        for rule in ("before", "now") if args.before else ("now",):
            r = coverage(people, width, args.n_boot, args.seed, before=rule == "before")
            for lv in LEVELS:
                h = np.asarray(r["hit"][lv], dtype=float)
                cov, n = float(h.mean()), h.size
                se = math.sqrt(cov * (1 - cov) / n)
                below = r["low_miss"][lv]
                above = int(n - h.sum()) - below
                print(
                    f"| {design} | {rule} | {trials} | {lv:.0%} | {cov:.3f} ± {se:.3f} "
                    f"(n={n}) | {below} / {above} | {np.median(r['widths'][lv]):.2f} | "
                    f"{r['cpu'] / n:.3f} |",
                    flush=True,
                )
    print(f"load average at the end {os.getloadavg()[0]:.1f}")


if __name__ == "__main__":
    main()
