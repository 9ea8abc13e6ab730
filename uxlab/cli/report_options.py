"""`uxlab report`'s options beyond the input and output: which columns to analyse (for
another lab's table too) and the exclusion rules; read into the analysis's `ColumnMap` and
`ReportOptions`."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import pandas as pd

    from analysis.foreign_table import ColumnMap
    from analysis.report import ReportOptions


def add_column_arguments(p: argparse.ArgumentParser) -> None:
    """What to analyse: the stimulus, judgement and rating columns, the factors, the estimand."""
    p.add_argument(
        "--stimulus",
        metavar="COLUMN",
        help="the latency factor (default: ttft_ms or the first factor in ms with 3+ levels)",
    )
    p.add_argument(
        "--judgement",
        metavar="COLUMN",
        help="binary question, 1 = yes (default: the study's yes/no question)",
    )
    p.add_argument(
        "--rating", metavar="COLUMN", help="rating question (default: the study's likert question)"
    )
    p.add_argument(
        "--participant",
        metavar="COLUMN",
        help="the column that names the participant (default: participant)",
    )
    p.add_argument(
        "--yes",
        metavar="VALUE[,VALUE]",
        help="the judgement's values that mean yes, e.g. j or y,yes (others mean no; "
        "empty cells are unanswered)",
    )
    p.add_argument(
        "--stimulus-unit",
        choices=("s", "ms"),
        help="unit of the stimulus column (default: ms if its name ends _ms, seconds if it "
        "ends _s or its median is under 30 (under 1 with --measure itl), else ms; the unit "
        "taken and why are said in a note)",
    )
    p.add_argument(
        "--measure",
        choices=("ttft", "itl", "e2e"),
        help="what the stimulus column is, so it is compared with the matching published "
        "figures (the column is analysed as <measure>_ms)",
    )
    p.add_argument(
        "--factor",
        metavar="COLUMN",
        action="append",
        default=[],
        help="a design factor besides the stimulus (repeatable); without it and without "
        "study.json another lab's table has the stimulus as its only factor",
    )
    p.add_argument(
        "--acceptable-at",
        type=float,
        metavar="N",
        help="ratings >= N count as acceptable (default: from study.json, else the scale midpoint)",
    )
    p.add_argument(
        "--estimand",
        choices=("population", "median-person"),
        default="population",
        help="what the pooled psychometric figures estimate: the population curve's point "
        "(all trials pooled; default) or the median participant's own point (median of "
        "per-person fits); the other is written too, under its own group",
    )
    p.add_argument(
        "--procedure",
        choices=("fixed", "staircase", "quest", "interleaved", "adaptive"),
        help="how the stimulus levels were chosen, for a table that does not say (default: "
        "study.json or sessions.csv, else detected: levels that differ between people, or "
        "that each answer moved as a staircase's would, are analysed as an adaptive design, "
        "with a note); fixed = everyone the same levels",
    )
    p.add_argument(
        "--judgement-kind",
        choices=("immediacy", "acceptability", "smoothness"),
        help="what the yes/no question judges, so it meets only published figures of that "
        "kind (default: from the question's words, e.g. 'acceptable' -> acceptability)",
    )


def add_exclusion_arguments(p: argparse.ArgumentParser) -> None:
    """Which trials and sessions are analysed (the exclusion rules)."""
    p.add_argument("--keep-practice", action="store_true", help="analyse practice trials too")
    p.add_argument("--keep-pilot", action="store_true", help="analyse pilot sessions too")
    p.add_argument(
        "--keep-simulated",
        action="store_true",
        help="analyse simulated sessions together with real ones (by default they are left "
        "out when both are present; a database of simulated sessions only is analysed as such)",
    )
    p.add_argument("--drop-simulated", action="store_true", help="leave simulated sessions out")
    p.add_argument(
        "--keep-flagged",
        action="store_true",
        help="analyse trials shown outside the study's timing tolerance too (fidelity_flag)",
    )
    p.add_argument(
        "--min-attention",
        type=float,
        default=0.75,
        metavar="SHARE",
        help="exclude participants passing fewer attention checks (default 0.75)",
    )
    p.add_argument(
        "--min-completion",
        type=float,
        default=0.5,
        metavar="SHARE",
        help="exclude participants completing fewer main trials (default 0.5)",
    )


def column_map(args: argparse.Namespace) -> ColumnMap:
    """The other-lab column options as an `analysis.foreign_table.ColumnMap`."""
    from analysis.foreign_table import ColumnMap
    from uxlab.trial_tables import ReportError

    yes = tuple(v.strip() for v in (args.yes or "").split(",") if v.strip())
    if args.yes is not None and not yes:
        raise ReportError("--yes: expected one or more values, e.g. --yes j or --yes y,yes")
    return ColumnMap(
        participant=args.participant,
        stimulus=args.stimulus,
        stimulus_unit=args.stimulus_unit,
        measure=args.measure,
        judgement=args.judgement,
        yes=yes,
        rating=args.rating,
        factors=tuple(args.factor),
    )


def report_options(args: argparse.Namespace) -> ReportOptions:
    """The report's options (and its exclusion rules) from the command line."""
    from analysis.exclusions import ExclusionRules
    from analysis.report import ReportOptions

    rules = ExclusionRules(
        drop_practice=not args.keep_practice,
        drop_pilot=not args.keep_pilot,
        drop_simulated=args.drop_simulated,
        drop_fidelity_flagged=not args.keep_flagged,
        keep_simulated=args.keep_simulated,
        min_attention_accuracy=args.min_attention,
        min_completion=args.min_completion,
    )
    return ReportOptions(
        stimulus=args.stimulus,
        judgement=args.judgement,
        rating=args.rating,
        acceptable_at=args.acceptable_at,
        n_boot=args.n_boot,
        seed=args.seed,
        rules=rules,
        per_participant=not args.no_participant_fits,
        progress=not args.quiet,
        score_corpus=args.score,
        title=args.title,
        estimand=args.estimand,
        judgement_kind=args.judgement_kind,
        procedure=args.procedure,
        design_power=design_sensitivity_of(args.seed),
    )


def design_sensitivity_of(seed: int) -> Callable[[pd.DataFrame, str, str], float]:
    """What the verdicts' power is simulated with (`uxlab.plan.sensitivity`, on the report's
    kept trials), the report's seed its seed."""

    def simulate(trials: pd.DataFrame, stimulus: str, judgement: str) -> float:
        from uxlab.plan.sensitivity import design_sensitivity

        return design_sensitivity(trials, stimulus, judgement, seed=seed)

    return simulate
