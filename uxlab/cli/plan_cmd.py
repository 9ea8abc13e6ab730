"""`uxlab plan STUDY`: how many participants and repeats, by simulating whole studies.

Simulates `--sims` studies in every cell of a participants x repeats grid (the study's own
design, adaptive procedures included, with observers of a known truth), analyses each with
the report's pooled-threshold code, and writes `plan.csv` (one row per cell), `plan.png`
(contours) and `plan.md` into `--out`, printing the table and the cheapest cell
(participant-minutes) that meets every `--target`. See `uxlab.plan`.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from uxlab.cli.options import add_quiet_option, add_seed_option
from uxlab.cli.places import add_out_option
from uxlab.plan.defaults import (
    DEFAULT_N_PARTICIPANTS,
    DEFAULT_N_REPEATS,
    DEFAULT_PARTICIPANTS,
    DEFAULT_POWER,
    DEFAULT_REFERENCE,
    DEFAULT_REPEATS,
)


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "plan",
        help="how many participants and repeats: power contours by simulation",
        description="Simulate whole studies over a grid of participants x repeats (the "
        "study's real design, observers with a known truth), analyse each like `uxlab "
        "report`, and write the expected 95% CI width of each threshold, coverage, power "
        "and the cheapest cell meeting the target (plan.csv, plan.png, plan.md).",
    )
    p.add_argument("study", type=Path, help="study file (TOML)")
    p.add_argument(
        "--participants",
        default=DEFAULT_PARTICIPANTS,
        metavar="LOW:HIGH[:COUNT]",
        help=f"participants axis (default {DEFAULT_PARTICIPANTS}, {DEFAULT_N_PARTICIPANTS} "
        "log-spaced values; or a list 8,16,32)",
    )
    p.add_argument(
        "--repeats",
        default=DEFAULT_REPEATS,
        metavar="LOW:HIGH[:COUNT]",
        help=f"the study's [design] repeats axis (default {DEFAULT_REPEATS}, "
        f"{DEFAULT_N_REPEATS} values)",
    )
    truth = p.add_mutually_exclusive_group()
    truth.add_argument(
        "--truth",
        metavar="NAME=VALUE,...",
        help="the simulated population: threshold (ms), width and between_sd (ln ms), "
        "lapse, guess, attention_lapse, patience (ms); default: the simulator's defaults",
    )
    truth.add_argument(
        "--truth-from",
        type=Path,
        metavar="PILOT",
        help="estimate the truth (with its uncertainty) from a pilot: its database, export "
        "folder or trial-table CSV",
    )
    p.add_argument(
        "--target",
        action="append",
        default=[],
        metavar="TARGET",
        help='"ci_width<=200ms" (mean width; ci_width@0.75<=300ms for another level), '
        '"ci_width_median<=200ms" (median), "ci_width<=200ms@80%%" (assurance: at least 80%% '
        'of studies give an interval at most 200 ms wide) or "exclude=800ms" / '
        '"exclude=<reference figure id>"; repeat for several (all must hold)',
    )
    p.add_argument(
        "--power",
        type=float,
        default=DEFAULT_POWER,
        help=f"share of studies an exclude target needs (default {DEFAULT_POWER})",
    )
    p.add_argument(
        "--reference",
        default=None,
        metavar="FIGURE",
        help=f"what the power column tests for exclusion: ms or a figure id (default "
        f"{DEFAULT_REFERENCE} for a TTFT study, else the first figure compared with the "
        "study's stimulus; an exclude target takes its place)",
    )
    p.add_argument("--sims", type=int, default=200, help="studies per cell (default 200)")
    p.add_argument(
        "--n-boot",
        type=int,
        default=200,
        help="parametric-bootstrap datasets of each simulated study's pooled counts, the "
        "floor of its participant jackknife-t interval (default 200; the report uses 1000)",
    )
    add_seed_option(p, "simulation seed (default 0)")
    p.add_argument("--jobs", type=int, default=None, help="worker processes (default: cores)")
    add_out_option(p, "default results/plan/<study id>", type=Path)
    p.add_argument("--no-figure", action="store_true", help="skip plan.png")
    add_quiet_option(p, "no progress line")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.cli import CliError
    from uxlab.plan.design import PlanError
    from uxlab.plan.making import plan_study

    if args.sims < 10 or args.n_boot < 50:
        raise CliError("--sims must be at least 10 and --n-boot at least 50")
    if not 0 < args.power < 1:
        raise CliError(f"--power {args.power}: a share between 0 and 1 (e.g. 0.8)")
    try:
        planned = plan_study(
            args.study,
            participants=args.participants,
            repeats=args.repeats,
            truth=args.truth,
            truth_from=args.truth_from,
            targets=args.target,
            power=args.power,
            reference=args.reference,
            sims=args.sims,
            n_boot=args.n_boot,
            seed=args.seed,
            jobs=args.jobs,
            quiet=args.quiet,
        )
    except PlanError as exc:
        raise CliError(str(exc)) from None
    print(planned.text())
    paths = planned.write(args.out, figure=not args.no_figure)
    print("\nwrote " + ", ".join(str(p) for p in paths))
    return 0
