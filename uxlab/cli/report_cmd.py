"""`uxlab report DATA [-o DIR]`: the threshold report from a study database or a trial table.

DATA is a uxlab study database (SQLite; exported here to the trial table first, read-only
apart from what the exporter records), an export folder (CSV or Parquet), or a trial-table
CSV or Parquet file from any lab. Writes `report.html`, `report.md` + `figures/*.png` and
`thresholds.csv` (spreadsheet-safe cells unless `--raw-cells`) into DIR. Simulated
data (`uxlab simulate`) is said to be so first and compared with the truth stored with it;
real and simulated sessions mixed give a warning with the count of each kind. A part of
the report that fails is named on stderr with its error in one line, the rest is still
written, and the exit status is `EXIT_PART_FAILED`; the same status when exclusions leave no
trial (the report then says which rules took what).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from uxlab.cli.options import (
    add_price_arguments,
    add_quiet_option,
    add_raw_cells_argument,
    add_seed_option,
    database_arg,
    price_choice,
)
from uxlab.cli.places import add_out_option, output_for
from uxlab.cli.report_options import add_column_arguments, add_exclusion_arguments

EXIT_PART_FAILED = 1
PATHS = ("html", "markdown", "thresholds", "score", "costs")
"""The report's files, in the order their `wrote` lines are printed."""


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "report",
        help="fit impatience thresholds and write the threshold report",
        description="Fit psychometric thresholds, abandonment survival models and rating "
        "models to a study's trials, compare them with the published figures, and write "
        "report.html, report.md (+ figures/) and thresholds.csv. Parts that need several "
        "participants run from 8 (below, the report says which and why); a part that fails "
        "is named on stderr, the rest is written, and the exit status is 1 (also when "
        "exclusions leave no trial to analyse).",
    )
    p.add_argument(
        "data",
        type=database_arg,
        help="study database (a file or a postgresql:// URL), export folder (CSV or Parquet), "
        "or trial-table CSV or Parquet file",
    )
    add_out_option(
        p,
        "output folder (default: NAME-report/ beside a file DATA, as "
        "results/quickstart.sqlite -> results/quickstart-report/; report/ inside a folder DATA)",
        metavar="DIR",
        type=Path,
    )
    add_column_arguments(p)
    p.add_argument("--n-boot", type=int, default=1000, help="bootstrap samples (default 1000)")
    add_seed_option(p, "seed of every bootstrap (default 0)")
    p.add_argument(
        "--score",
        metavar="CORPUS",
        type=Path,
        help="score a folder of recordings with the fitted models",
    )
    add_price_arguments(p)
    add_exclusion_arguments(p)
    p.add_argument(
        "--no-participant-fits", action="store_true", help="skip per-participant psychometric fits"
    )
    p.add_argument("--title", help="report title")
    p.add_argument(
        "--more-participants",
        type=int,
        metavar="K",
        help="also say what CI width K more participants would likely give (by simulation)",
    )
    add_raw_cells_argument(p)
    add_quiet_option(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from analysis.chains import ChainDataError
    from analysis.psychometric import PsychometricInputError
    from analysis.reference import ReferenceFileError
    from analysis.report import analyse, console, write_report
    from analysis.report.cost_part import console_lines as cost_lines
    from analysis.report.truth_part import comparison_text
    from analysis.score import ScoreError
    from analysis.table_errors import TrialTableError
    from uxlab.cli.report_options import column_map, report_options
    from uxlab.trial_tables import ReportError, load_trial_table

    _check_args(args)
    out = args.out or output_for(args.data, "report")
    options = report_options(args)
    options.prices = price_choice(args, "report")
    options.estimate_usage = args.estimate_usage
    try:
        table = load_trial_table(args.data, column_map(args))
        data = analyse(table, options)
        paths = write_report(data, out, raw_cells=args.raw_cells)
    except (
        TrialTableError,
        ScoreError,
        PsychometricInputError,
        ChainDataError,
        ReferenceFileError,
    ) as exc:  # the analysis package's input errors: one clean line each
        raise ReportError(str(exc)) from exc
    kinds = console.kinds_line(data)  # first, what the data are
    if kinds is not None:
        print(kinds[0], file=sys.stderr if kinds[1] else sys.stdout, flush=kinds[1])
    if data.nothing_left:  # the report says so; the message names each rule and option
        print(f"uxlab report: {data.table.source}: {data.nothing_left}", file=sys.stderr)
    truth = comparison_text(data)  # simulated data: each estimate beside its truth
    _say([*console.summary_lines(data), *([truth] if truth else []), *cost_lines(data)])
    if args.more_participants:
        from uxlab.plan.more_people import more_people_line

        _say([more_people_line(data, args.more_participants, args.seed)])
    _say([*console.notes_lines(data), *(f"wrote {paths[k]}" for k in PATHS if k in paths)])
    sys.stdout.flush()
    for part, error in data.failed_parts:
        print(f"uxlab report: part failed: {part}: {error}", file=sys.stderr)
    # nothing analysed is not a report done: a script must not take it for thresholds
    return EXIT_PART_FAILED if data.failed_parts or data.nothing_left else 0


def _check_args(args: argparse.Namespace) -> None:
    """The options' values, and the input, before anything is read."""
    from uxlab.trial_tables import ReportError, check_input

    for name in ("min_attention", "min_completion"):
        if not 0 <= getattr(args, name) <= 1:
            raise ReportError(f"--{name.replace('_', '-')}: expected a share in [0, 1]")
    if args.n_boot < 0:
        raise ReportError("--n-boot: expected 0 or more")
    check_input(args.data, args.participant)
    if args.score is not None and not args.score.exists():
        raise ReportError(f"--score {args.score}: no such file or folder (a folder of recordings)")
    if args.prices is not None and args.score is None:
        raise ReportError("--prices prices the recordings of --score CORPUS: name the corpus")
    if args.more_participants is not None and args.more_participants < 1:
        raise ReportError(f"--more-participants {args.more_participants}: expected 1 or more")


def _say(lines: list[str]) -> None:
    for line in lines:
        print(line)
