"""Does the acceptable-rating threshold's 95% CI cover the simulated truth about 95% of the time?

Simulates `--studies` x `--participants` people through the real study path
(`uxlab.simulate.simulate_cohort`, store, export, exclusions) on the fixed-level study
(`studies/ttft-threshold.toml`) and the adaptive one (`studies/ttft-quest.toml`), cuts the
cohort into studies of `--participants` people each (different people, so independent
studies), and fits each study's "rating >= acceptable" threshold two ways:

- pooled: the psychometric engine on all trials pooled, guess and lapse fixed at 0,
  intervals from resampling participants (`analysis.psychometric.population_threshold`);
- mixed: a logit with a random intercept per participant (`analysis.ratings.
  fit_mixed_acceptability`), thresholds of the population's curve, intervals from
  resampling participants.

The truth is the population's (marginal over people) share of ratings below "acceptable":
`uxlab.simulate.observers.rating_acceptable_ms` (at 0.5 also the median person's point).
Prints, per design, estimator and level: coverage, bias of ln(estimate / truth) with its
standard error, and the median CI width as high / low.

    uv run python benchmarks/rating_recovery.py                 # 40 studies of 16, ~15 min
    uv run python benchmarks/rating_recovery.py --studies 10    # a quick look
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

import numpy as np
import pandas as pd

REPO = Path(__file__).resolve().parents[1]
DESIGNS = {"fixed": "ttft-threshold.toml", "quest": "ttft-quest.toml"}


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
        with Store.open(db) as store:
            simulate_cohort(study, store, n_people, seed=seed, truth=truth)
        export_db(db, Path(tmp) / "export")
        table = load_trial_table(Path(tmp) / "export")
    planned = planned_trials_from_sessions(table.sessions)
    return apply_exclusions(table.trials, None, planned).kept, study_truth(study, truth)


def fit_study(part: pd.DataFrame, n_boot: int, seed: int) -> dict[str, pd.DataFrame]:
    """Both estimators' thresholds (level, estimate, ci_low, ci_high) for one study."""
    from analysis.psychometric import population_threshold
    from analysis.ratings import RATING_FIT, acceptable_binary, fit_mixed_acceptability

    rated = part.dropna(subset=["q_speed"])
    binary = rated.assign(_y=acceptable_binary(rated["q_speed"], 4))
    pooled = population_threshold(
        binary, "ttft_ms", "_y", "participant", n_boot, seed, **RATING_FIT
    )
    mixed = fit_mixed_acceptability(part, "q_speed", "ttft_ms", 4, n_boot=n_boot, seed=seed)
    return {"pooled": pooled, "mixed": mixed.thresholds()}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--studies", type=int, default=40)
    ap.add_argument("--participants", type=int, default=16)
    ap.add_argument("--n-boot", type=int, default=300)
    ap.add_argument("--seed", type=int, default=100)
    ap.add_argument("--designs", default="fixed,quest")
    args = ap.parse_args()
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
            fits = fit_study(kept[kept["participant"].isin(group)], args.n_boot, args.seed + i)
            for name, table in fits.items():
                for r in table.itertuples():
                    true_ms = truth[str(r.level)]
                    rows.append(
                        {
                            "design": design,
                            "estimator": name,
                            "level": r.level,
                            "truth_ms": true_ms,
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
        f"{args.n_boot} participant resamples per interval; truth = the population's point"
    )
    print(
        "design  estimator  level  truth ms  coverage     bias ln(est/true) +- SE  "
        "median CI high/low"
    )
    for (design, name, level), g in df.groupby(["design", "estimator", "level"], sort=False):
        n = len(g)
        bias, se = g["log_ratio"].mean(), g["log_ratio"].std(ddof=1) / np.sqrt(n)
        print(
            f"{design:<7} {name:<10} {level:<5.2f} {g['truth_ms'].iloc[0]:9.0f}  "
            f"{g['inside'].sum():3d}/{n:<3d} {g['inside'].mean():4.0%}  "
            f"{bias:+.3f} +- {se:.3f} ({np.expm1(bias):+.1%})       "
            f"{g['width'].median():.2f}"
        )


if __name__ == "__main__":
    main()
