"""Does `uxlab plan` predict what real runs of the study give? Predicted vs realised, per cell.

For each (study design, truth, cell of participants x repeats):

- predicted: `uxlab plan`'s engine (`uxlab.plan.engine.run_plan`, `--sims` studies), its
  mean 95% CI width of the 50% threshold and its power (share of intervals excluding the
  reference);
- realised: `--studies` independent studies (a different seed stream) run through the real
  path (`benchmarks.support.realised.realised_thresholds`): `simulate_cohort` (observers through
  the session and the SQLite store, as `uxlab simulate`), `export_db`, `load_trial_table`,
  the report's exclusions and what it prints at 50%: on a fixed design its psychometric part
  (`analysis.report.psychometric_estimate`, B = 1000: the pooled fit with the participant
  jackknife-t), on an adaptive one (since 2026-12-07) the median of the sessions' own
  estimates with its interval (`benchmarks.support.realised.report_adaptive_median`).

Designs: constant stimuli (studies/ttft-threshold.toml), a 1-up/2-down staircase (the QUEST+
study with `procedure = "staircase"`, written to a temporary file) and QUEST+
(studies/ttft-quest.toml). Truths vary the threshold, the width, the between-participant
SD and the lapse rate.

Printed per row: both mean widths and their ratio (goal within ±10%) with the Monte-Carlo
SE of the ratio (both sides' errors, delta method), the ratio of the median widths (robust
to the few very wide intervals that dominate a mean of a handful of studies), both powers
and their difference (goal within ±0.05) with the Monte-Carlo SE of the difference (both
sides), and seconds. `--out FILE` also appends each row as CSV; `--raw DIR` keeps every
study's (estimate, ci_low, ci_high) at 50% of both sides as DIR/<design>_<truth>.npz, so
other summaries can be computed without running the studies again.

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

from benchmarks.support.realised import ci_at, realised_thresholds
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
# (study file, participants, repeats); "staircase" is made from the QUEST+ study
DESIGNS = {
    "constant-8x1": ("ttft-threshold.toml", 8, 1),
    "staircase-10x10": ("staircase", 10, 10),
    "quest-10x10": ("ttft-quest.toml", 10, 10),
}
QUICK = [
    ("quest-10x10", "spread-0.5"),
    ("constant-8x1", "default"),
    ("staircase-10x10", "fast-600"),
]


def staircase_study(where: Path) -> Path:
    """studies/ttft-quest.toml with a 1-up/2-down staircase instead of QUEST+."""
    text = (STUDIES / "ttft-quest.toml").read_text(encoding="utf-8")
    corpus = (STUDIES.parent / "replays" / "chat").as_posix()
    text = text.replace('procedure = "quest"', 'procedure = "staircase"')
    text = text.replace('id = "ttft-quest"', 'id = "ttft-staircase"')
    text = text.replace('corpus = "../replays/chat"', f'corpus = "{corpus}"')
    path = where / "ttft-staircase.toml"
    path.write_text(text, encoding="utf-8")
    return path


def realised_study(args: tuple) -> np.ndarray:
    """(estimate, ci_low, ci_high) at 50% of one study through the real path."""
    study_path, n_people, repeats, truth, seed = args
    return ci_at(realised_thresholds(study_path, n_people, repeats, truth, seed))


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
    ap.add_argument("--out", type=Path, help="append each row to this CSV file")
    ap.add_argument("--raw", type=Path, help="keep each row's per-study intervals here (.npz)")
    ap.add_argument(
        "--seed-base",
        type=int,
        default=10_000,
        help="realised study i has seed BASE + i (the same people in every row of a run)",
    )
    ap.add_argument(
        "--independent-rows",
        action="store_true",
        help="row r's realised studies start at BASE + 100000 r instead: other people in every "
        "row, so one unlucky draw of people does not move all rows the same way",
    )
    args = ap.parse_args()
    if args.cases == "quick":
        cases = QUICK
    elif args.cases == "all":  # the known hard case first, so a cut-short run has it
        cases = [("quest-10x10", "spread-0.5")]
        cases += [(d, t) for t in TRUTHS for d in DESIGNS if (d, t) not in cases]
    else:
        cases = [tuple(case.split(":")) for case in args.cases.split(",")]
    print(
        f"{args.sims} planned / {args.studies} realised studies per row; load average "
        f"{os.getloadavg()[0]:.1f} at start; reference {REFERENCE.label}"
    )
    header = (
        "design          truth        width plan  width real  ratio (SE)    median ratio  "
        "power plan  power real  diff (SE)     s"
    )
    print(header)
    if args.out and not args.out.exists():
        args.out.write_text(
            "design,truth,width_plan,width_real,ratio,ratio_se,median_ratio,power_plan,"
            "power_real,diff_se,seconds,load\n"
        )
    with tempfile.TemporaryDirectory(prefix="plan-validation-") as tmp:
        staircase = staircase_study(Path(tmp))
        for r, (design_name, truth_name) in enumerate(cases):
            base = args.seed_base + (100_000 * r if args.independent_rows else 0)
            study_file, n_people, repeats = DESIGNS[design_name]
            study_path = staircase if study_file == "staircase" else STUDIES / study_file
            truth = TRUTHS[truth_name]
            started = time.perf_counter()
            spec = PlanSpec(
                study_path.resolve(), (n_people,), (repeats,), (truth,), args.sims, 200, 1
            )
            planned = run_plan(spec, jobs=args.jobs)
            plan = cell_table(planned, REFERENCE, []).iloc[0]
            cell = planned.cells[(n_people, repeats)]
            j50 = 1  # LEVELS = (0.25, 0.5, 0.75)
            plan_ci = np.stack(
                [cell.estimate_ms[:, j50], cell.ci_low_ms[:, j50], cell.ci_high_ms[:, j50]], axis=1
            )
            jobs = [(study_path, n_people, repeats, truth, base + i) for i in range(args.studies)]
            with ProcessPoolExecutor(max_workers=args.jobs) as pool:
                real = np.array(list(pool.map(realised_study, jobs)))
            width = real[:, 2] - real[:, 1]
            ok = np.isfinite(width)
            power = float(np.mean(REFERENCE.excluded(real[:, 1], real[:, 2])))
            plan_width = plan_ci[:, 2] - plan_ci[:, 1]
            plan_ok = np.isfinite(plan_width)
            se = math.sqrt(
                max(power * (1 - power), 1e-12) / len(real)
                + max(plan["power"] * (1 - plan["power"]), 1e-12) / len(plan_ci)
            )
            w_real = float(np.mean(width[ok]))
            ratio = plan["ci_width_50_ms"] / w_real
            rel_real = float(np.std(width[ok], ddof=1) / math.sqrt(ok.sum())) / w_real
            rel_plan = float(
                np.std(plan_width[plan_ok], ddof=1) / math.sqrt(plan_ok.sum())
            ) / float(np.mean(plan_width[plan_ok]))
            ratio_se = ratio * math.sqrt(rel_real**2 + rel_plan**2)
            if args.raw:
                args.raw.mkdir(parents=True, exist_ok=True)
                np.savez(args.raw / f"{design_name}_{truth_name}.npz", plan=plan_ci, real=real)
            median_ratio = plan["ci_width_50_median_ms"] / float(np.median(width[ok]))
            seconds = time.perf_counter() - started
            print(
                f"{design_name:<15} {truth_name:<12} {plan['ci_width_50_ms']:10.0f}  "
                f"{w_real:10.0f}  {ratio:5.2f} ({ratio_se:.2f})  {median_ratio:12.2f}  "
                f"{plan['power']:10.2f}  "
                f"{power:10.2f}  {plan['power'] - power:+5.2f} ({se:.2f})  {seconds:4.0f}",
                flush=True,
            )
            if args.out:
                with args.out.open("a") as f:
                    f.write(
                        f"{design_name},{truth_name},{plan['ci_width_50_ms']:.1f},{w_real:.1f},"
                        f"{ratio:.3f},{ratio_se:.3f},{median_ratio:.3f},{plan['power']:.3f},"
                        f"{power:.3f},{se:.3f},"
                        f"{seconds:.0f},{os.getloadavg()[0]:.1f}\n"
                    )


if __name__ == "__main__":
    main()
