"""Does the acceptable-rating threshold's 95% CI cover the simulated truth about 95% of the time?

Simulates `--studies` x `--participants` people through the real study path
(`uxlab.simulate.simulate_cohort`, store, export, exclusions) on the fixed-level study
(`studies/ttft-threshold.toml`, 8 levels), the quickstart (`studies/quickstart.toml`, 3
levels far apart) and the adaptive one (`studies/ttft-quest.toml`), cuts the cohort into
studies of `--participants` people each (different people, so independent studies), and
fits each study's "rating >= acceptable" threshold (`--estimators`):

- pooled: the psychometric engine on all trials pooled, guess and lapse fixed at 0,
  intervals from resampling participants (`analysis.psychometric.population_threshold`);
- mixed: a logit with a random intercept per participant (`analysis.ratings.
  fit_mixed_acceptability`, the report's), thresholds of the population's curve, intervals
  from resampling participants; no threshold when the ratings separate by latency;
- mixed-unchecked: the same fit without the separation check (the report before it): on
  separated ratings the slope runs away and the interval is a sliver around the one level
  with both kinds of rating.

The truth is the population's (marginal over people) share of ratings below "acceptable":
`uxlab.simulate.observers.rating_acceptable_ms` (at 0.5 also the median person's point).
Prints the date and load, then per design, estimator and level: the thresholds given (of
the studies), coverage among them with its binomial SE, bias of ln(estimate / truth) with
its standard error, and the median CI width as high / low.

    uv run python benchmarks/rating_recovery.py                 # 40 studies of 16, ~15 min
    uv run python benchmarks/rating_recovery.py --studies 10    # a quick look
    uv run python benchmarks/rating_recovery.py --designs quickstart,fixed --participants 8 \
        --studies 150 --estimators mixed,mixed-unchecked
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
DESIGNS = {
    "fixed": "ttft-threshold.toml",
    "quest": "ttft-quest.toml",
    "quickstart": "quickstart.toml",
}


def simulate_trials(study_file: Path, n_people: int, seed: int) -> tuple[pd.DataFrame, dict]:
    """Simulate a cohort, export it and return the kept trials and the truth record."""
    from analysis.exclusions import apply_exclusions, planned_trials_from_sessions
    from analysis.trial_table import load_trial_table
    from uxlab.simulate import PopulationTruth, simulate_cohort, study_truth
    from uxlab.store import Store
    from uxlab.store.export import export_db
    from uxlab.study import load_study

    study, truth = load_study(study_file), PopulationTruth()
    with tempfile.TemporaryDirectory(prefix="rating-recovery-") as tmp:
        db = Path(tmp) / "cohort.sqlite"
        with Store.open(db, durable=False) as store:
            simulate_cohort(study, store, n_people, seed=seed, truth=truth)
        export_db(db, Path(tmp) / "export")
        table = load_trial_table(Path(tmp) / "export")
    planned = planned_trials_from_sessions(table.sessions)
    return apply_exclusions(table.trials, None, planned).kept, study_truth(study, truth)


def fit_study(
    part: pd.DataFrame, n_boot: int, seed: int, estimators: list[str]
) -> dict[str, pd.DataFrame]:
    """The estimators' thresholds (level, estimate, ci_low, ci_high) for one study."""
    from analysis.psychometric import population_threshold
    from analysis.ratings.acceptable import (
        RATING_FIT,
        _acceptable_cells,
        acceptable_binary,
        fit_mixed_acceptability,
        fit_mixed_cells,
    )

    out = {}
    if "pooled" in estimators:
        rated = part.dropna(subset=["q_speed"])
        binary = rated.assign(_y=acceptable_binary(rated["q_speed"], 4))
        out["pooled"] = population_threshold(
            binary, "ttft_ms", "_y", "participant", n_boot, seed, **RATING_FIT
        )
    if "mixed" in estimators:
        mixed = fit_mixed_acceptability(part, "q_speed", "ttft_ms", 4, n_boot=n_boot, seed=seed)
        out["mixed"] = mixed.thresholds()
    if "mixed-unchecked" in estimators:  # the fit as the report made it before the check
        cells = _acceptable_cells(part, "q_speed", "ttft_ms", 4, "participant")
        out["mixed-unchecked"] = fit_mixed_cells(*cells, n_boot, seed).thresholds()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=int, default=40)
    ap.add_argument("--participants", type=int, default=16)
    ap.add_argument("--n-boot", type=int, default=300)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--designs", default="fixed,quest")
    ap.add_argument("--estimators", default="pooled,mixed")
    args = ap.parse_args()
    estimators = args.estimators.split(",")
    print(
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}; load average "
        f"{os.getloadavg()[0]:.1f} at the start ({os.cpu_count()} cores)",
        flush=True,
    )
    rows = []
    for design in args.designs.split(","):
        started = time.perf_counter()
        n_people = args.studies * args.participants
        kept, known = simulate_trials(REPO / "studies" / DESIGNS[design], n_people, args.seed)
        truth = next(iter(known["rating_acceptable_ms"].values()))
        people = sorted(kept["participant"].unique())  # after exclusions (attention checks)
        n_studies = len(people) // args.participants
        t_sim = time.perf_counter() - started
        for i in range(n_studies):
            group = people[i * args.participants : (i + 1) * args.participants]
            study = kept[kept["participant"].isin(group)]
            fits = fit_study(study, args.n_boot, args.seed + i, estimators)
            for name, table in fits.items():
                for r in table.itertuples():
                    true_ms = truth[str(r.level)]
                    rows.append(
                        {
                            "design": design,
                            "estimator": name,
                            "level": r.level,
                            "truth_ms": true_ms,
                            "given": np.isfinite(r.estimate),
                            "log_ratio": np.log(r.estimate / true_ms),
                            "inside": r.ci_low <= true_ms <= r.ci_high,
                            "width": r.ci_high / r.ci_low,
                        }
                    )
        print(
            f"{design}: {n_people} people simulated in {t_sim:.0f} s ({len(people)} kept), "
            f"{n_studies} studies fitted in {time.perf_counter() - started - t_sim:.0f} s",
            flush=True,
        )
    df = pd.DataFrame(rows)
    print(
        f"\nstudies of {args.participants} simulated participants each, "
        f"{args.n_boot} participant resamples per interval; truth = the population's point; "
        "coverage among the thresholds given, +- its binomial SE"
    )
    print(
        "design      estimator        level  truth ms  given    coverage         "
        "bias ln(est/true) +- SE       median CI high/low"
    )
    for (design, name, level), g in df.groupby(["design", "estimator", "level"], sort=False):
        given = g[g["given"]]
        n = len(given)
        cover = given["inside"].mean() if n else np.nan
        cover_se = np.sqrt(cover * (1 - cover) / n) if n else np.nan
        bias = given["log_ratio"].mean()
        se = given["log_ratio"].std(ddof=1) / np.sqrt(n) if n > 1 else np.nan
        print(
            f"{design:<11} {name:<16} {level:<5.2f} {g['truth_ms'].iloc[0]:9.0f}  "
            f"{n:3d}/{len(g):<3d}  {given['inside'].sum():3d}/{n:<3d} {cover:4.0%} +- "
            f"{cover_se:4.1%}  {bias:+.3f} +- {se:.3f} ({np.expm1(bias):+.1%})       "
            f"{given['width'].median():.2f}"
        )
    print(
        f"load average {os.getloadavg()[0]:.1f} at the end; "
        f"{time.strftime('%Y-%m-%d %H:%M UTC', time.gmtime())}"
    )


if __name__ == "__main__":
    main()
