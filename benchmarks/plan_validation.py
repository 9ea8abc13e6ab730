"""Does `uxlab plan` predict what real runs of the study give? Predicted vs realised, per cell.

For each (study design, truth, cell of participants x repeats):

- predicted: `uxlab plan`'s engine (`uxlab.plan.engine.run_plan`, `--sims` studies, each
  analysed in a batch with 200 participant resamples), its mean 95% CI width of the 50%
  threshold and its power (share of intervals excluding the reference);
- realised: `--studies` independent studies (a different seed stream) run through the real
  path: `simulate_cohort` (observers through `StudySession` and the SQLite store, as
  `uxlab simulate`), `export_db`, `load_trial_table`, then the report's exclusions
  (`apply_exclusions`, default rules) and its pooled threshold (`population_threshold_small_n`
  on the yes/no column, B = 1000: the lines `analysis.report.analyse` runs for it; the
  rest of the report, e.g. ratings and survival, is skipped to save time).

Printed per row: both widths and their ratio (goal within ±10%), both powers and their
difference (goal within ±0.05) with the Monte-Carlo SE of the realised power, and seconds.

    python benchmarks/plan_validation.py [--studies 60] [--sims 200] [--cases all|quick]
"""

from __future__ import annotations

import argparse
import math
import os
import tempfile
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from uxlab.plan.design import with_repeats
from uxlab.plan.engine import PlanSpec, run_plan
from uxlab.plan.grid import Reference
from uxlab.plan.summarise import cell_table
from uxlab.simulate.observers import PopulationTruth

STUDIES = Path(__file__).resolve().parents[1] / "studies"
REFERENCE = Reference("1000 ms", 1000.0, 1000.0)
TRUTHS = {
    "default": PopulationTruth(),
    "fast-600": PopulationTruth(threshold_ms=600.0),
    "steep-1200": PopulationTruth(threshold_ms=1200.0, width_log=1.0),
    "spread-0.5": PopulationTruth(between_sd_log=0.5),
    "lapse-0.06": PopulationTruth(lapse=0.06, guess=0.05),
}
# (study file, participants, repeats)
DESIGNS = {
    "constant-8x1": ("ttft-threshold.toml", 8, 1),
    "constant-16x2": ("ttft-threshold.toml", 16, 2),
    "quest-10x10": ("ttft-quest.toml", 10, 10),
}
QUICK = [
    ("constant-8x1", "default"),
    ("constant-16x2", "steep-1200"),
    ("quest-10x10", "fast-600"),
]


def realised_study(args: tuple) -> tuple[float, float, float]:
    """One study through simulate -> export -> the report's pooled threshold:
    (estimate, ci_low, ci_high) at 50%."""
    study_file, n_people, repeats, truth, seed = args
    from analysis.exclusions import ExclusionRules, apply_exclusions, planned_trials_from_sessions
    from analysis.small_sample_interval import population_threshold_small_n as population_threshold
    from analysis.trial_table import binary_column, load_trial_table
    from uxlab.simulate import simulate_cohort
    from uxlab.store import Store
    from uxlab.store.export import export_db
    from uxlab.study import load_study

    study = with_repeats(load_study(STUDIES / study_file), repeats)
    with tempfile.TemporaryDirectory(prefix="plan-validation-") as tmp:
        db = Path(tmp) / "s.sqlite"
        with Store.open(db) as store:
            simulate_cohort(study, store, n_people, seed=seed, truth=truth)
        export_db(db, Path(tmp) / "export")
        table = load_trial_table(Path(tmp) / "export")
    # what `analysis.report.analyse` does for the pooled threshold (its `_psychometric`)
    planned = planned_trials_from_sessions(table.sessions)
    kept = apply_exclusions(table.trials, ExclusionRules(), planned).kept
    df = kept.assign(_y=binary_column(kept, "q_acceptable", table.source)).dropna(subset=["_y"])
    df = df.assign(_x=df["ttft_ms"].astype(float))
    pop = population_threshold(df, "_x", "_y", "participant", 1000, seed)
    row = pop.set_index("level").loc[0.5]
    return float(row.estimate), float(row.ci_low), float(row.ci_high)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--studies", type=int, default=60, help="realised studies per row")
    ap.add_argument("--sims", type=int, default=200, help="plan's simulated studies per cell")
    ap.add_argument(
        "--cases",
        default="quick",
        help="quick (3 rows), all (5 truths x 3 designs) or a list design:truth,...",
    )
    ap.add_argument("--jobs", type=int, default=min(os.cpu_count() or 1, 2))
    args = ap.parse_args()
    cases = QUICK if args.cases == "quick" else [(d, t) for d in DESIGNS for t in TRUTHS]
    if args.cases not in ("quick", "all"):
        cases = [tuple(case.split(":")) for case in args.cases.split(",")]
    print(
        f"{args.sims} planned / {args.studies} realised studies per row; load average "
        f"{os.getloadavg()[0]:.1f} at start; reference {REFERENCE.label}"
    )
    print(
        "design          truth        width plan  width real  ratio   power plan  power real"
        " (SE)     diff    s"
    )
    for design_name, truth_name in cases:
        study_file, n_people, repeats = DESIGNS[design_name]
        truth = TRUTHS[truth_name]
        started = time.perf_counter()
        spec = PlanSpec(
            (STUDIES / study_file).resolve(), (n_people,), (repeats,), (truth,), args.sims, 200, 1
        )
        plan = cell_table(run_plan(spec, jobs=args.jobs), REFERENCE, []).iloc[0]
        jobs = [(study_file, n_people, repeats, truth, 10_000 + i) for i in range(args.studies)]
        with ProcessPoolExecutor(max_workers=args.jobs) as pool:
            real = np.array(list(pool.map(realised_study, jobs)))
        width = real[:, 2] - real[:, 1]
        ok = np.isfinite(width)
        power = float(np.mean(REFERENCE.excluded(real[:, 1], real[:, 2])))
        se = math.sqrt(max(power * (1 - power), 1e-12) / len(real))
        w_real = float(np.mean(width[ok]))
        print(
            f"{design_name:<15} {truth_name:<12} {plan['ci_width_50_ms']:10.0f}  {w_real:10.0f}"
            f"  {plan['ci_width_50_ms'] / w_real:5.2f}   {plan['power']:10.2f}  {power:10.2f}"
            f" ({se:.2f})  {plan['power'] - power:+5.2f}  {time.perf_counter() - started:4.0f}",
            flush=True,
        )


if __name__ == "__main__":
    main()
