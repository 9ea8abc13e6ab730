"""`uxlab demo [-o DIR] [--participants N] [--seed S]`: the one-command showcase.

First prints a small plan for the study (`uxlab plan` on a 3 x 2 grid around the cohort's
size: the expected width of the threshold's interval and the power), then simulates a
cohort on `studies/ttft-threshold.toml` (observers with a known threshold), exports the
database, writes the threshold report (what `uxlab report` does), and prints
where it is and how close the recovered thresholds are to the simulated truth: the
report's own comparison (`analysis.report.truth_part`, from the truth stored with every
simulated session), as `uxlab report` prints it for simulated data.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path
from typing import TYPE_CHECKING

from uxlab.cli.options import add_seed_option
from uxlab.cli.places import add_out_option

if TYPE_CHECKING:
    from uxlab.simulate.observers import PopulationTruth
    from uxlab.study.spec import Study

DEMO_STUDY = "ttft-threshold.toml"


def default_study() -> Path:
    """The bundled study: `studies/` of this checkout, else of the current folder."""
    here = Path(__file__).resolve().parents[2] / "studies" / DEMO_STUDY
    return here if here.is_file() else Path("studies") / DEMO_STUDY


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "demo",
        help="simulate a cohort, write the report, compare with the truth",
        description="Simulate participants with known thresholds on the TTFT-threshold "
        "study, export, write the threshold report, and print true vs recovered thresholds.",
    )
    add_out_option(
        p,
        "output folder, holding the database, export/ and report/ (default results/demo)",
        type=Path,
        default=Path("results/demo"),
    )
    p.add_argument("--participants", "-n", type=int, default=16, metavar="N", help="default 16")
    add_seed_option(p, "simulation and bootstrap seed")
    p.add_argument("--n-boot", type=int, default=300, help="bootstrap samples (default 300)")
    p.add_argument("--study", type=Path, default=None, help=f"study file (default {DEMO_STUDY})")
    p.add_argument("--no-plan", action="store_true", help="skip the plan printed first")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.exclusions import ExclusionRules
    from analysis.report import ReportOptions, analyse, write_report
    from analysis.report.truth_part import comparison_text
    from uxlab.cli import CliError
    from uxlab.cli.report_options import design_sensitivity_of
    from uxlab.simulate import PopulationTruth, refuse_unsimulatable, simulate_cohort
    from uxlab.store import Store
    from uxlab.store.export import export_db
    from uxlab.study import load_study
    from uxlab.trial_tables import load_trial_table

    if args.participants < 2:
        raise CliError(f"--participants {args.participants}: the demo needs at least 2")
    if args.seed < 0 or args.n_boot < 50:
        raise CliError("--seed must be >= 0 and --n-boot at least 50")
    started = time.perf_counter()
    study = load_study(args.study or default_study())
    refuse_unsimulatable(study)
    out: Path = args.out
    db = out / f"{study.id}-s{args.seed}.sqlite"
    for old in (db, db.with_name(db.name + "-wal"), db.with_name(db.name + "-shm")):
        old.unlink(missing_ok=True)  # the demo's own database: a fresh cohort every time
    truth = PopulationTruth()
    if not args.no_plan:
        print(_plan(study, args.participants, truth, args.seed), flush=True)
    print(f"simulating {args.participants} participants on {study.path.name} ...", flush=True)
    with Store.open(db, durable=False) as store:
        done = simulate_cohort(study, store, args.participants, seed=args.seed, truth=truth)
    t_sim = time.perf_counter() - started
    n_trials = sum(s.n_trials for s in done)
    print(
        f"  {n_trials} trials ({sum(s.n_abandoned for s in done)} abandoned) in {t_sim:.1f} s, "
        f"{t_sim / len(done):.2f} s per session of {n_trials // len(done)} trials -> {db}"
    )
    export_db(db, out / "export")
    table = load_trial_table(out / "export")
    options = ReportOptions(
        n_boot=args.n_boot,
        seed=args.seed,
        rules=ExclusionRules(),
        per_participant=True,
        title=f"Demo: {args.participants} simulated participants",
        design_power=design_sensitivity_of(args.seed),
    )
    data = analyse(table, options)
    paths = write_report(data, out / "report")
    print(f"report: {paths['html']}  (also {paths['markdown'].name}, thresholds.csv)")
    print()
    print(comparison_text(data))  # the report's own comparison with the stored truth
    print(f"\ndone in {time.perf_counter() - started:.1f} s")
    return 0


PLAN_SIMS = 24


def _plan(study: Study, n_people: int, truth: PopulationTruth, seed: int) -> str:
    """`uxlab plan` for the demo's own study on a small grid: half, the same and twice the
    cohort, at half and the study's own repeats (40 simulated studies per cell)."""
    from uxlab.plan.grid import reference_from
    from uxlab.plan.making import make_plan
    from uxlab.plan.rendering import printed_table
    from uxlab.plan.summarise import cell_table

    repeats = sorted({max(1, study.design.repeats // 2), study.design.repeats})
    people = sorted({max(2, n_people // 2), n_people, 2 * n_people})
    plan = make_plan(
        study, people, repeats, (truth,), sims=PLAN_SIMS, n_boot=100, seed=seed, quiet=True
    )
    reference = reference_from("nielsen1993-1s")
    table = cell_table(plan, reference, [])
    return (
        f"plan first (`uxlab plan`, {PLAN_SIMS} simulated studies per cell, the same truth): "
        f"expected 95% CI width of each threshold, coverage of the true 50% point, power to "
        f"exclude {reference.label}\n{printed_table(table)}\n"
    )
