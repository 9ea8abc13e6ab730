"""`uxlab study check FILE [--participant P] [--number N]`: validate a study, print its design."""

from __future__ import annotations

import argparse
import sys

from uxlab.cli.options import add_seed_option

EXAMPLE_PARTICIPANT = "P-EXAMPLE"
PREVIEW_ROWS = 12


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "study",
        help="check a study file and print its design",
        description="Study files: validate one and print its design.",
    )
    sub = parser.add_subparsers(dest="study_command", metavar="ACTION", required=True)
    check = sub.add_parser(
        "check",
        help="validate FILE, then print conditions, trial counts, duration and a trial list",
        description="Validate a study file (key paths, references, the corpus) and print its "
        "design: conditions, trials per participant, estimated duration from the corpus, and "
        "the exact trial list for a participant.",
    )
    check.add_argument("file", metavar="FILE", help="the study file (TOML)")
    check.add_argument(
        "--participant",
        metavar="P",
        help="print this participant's whole trial list (default: the first "
        f"{PREVIEW_ROWS} trials of {EXAMPLE_PARTICIPANT})",
    )
    check.add_argument(
        "--number",
        type=int,
        default=1,
        metavar="N",
        help="the participant's number (1, 2, ...: picks the Latin-square row; the store "
        "numbers participants in order of arrival); default 1",
    )
    add_seed_option(check, "the session seed (default: the study's seed)", None, "S")
    check.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.session import shortest_gap_ms
    from uxlab.store.store import check_participant_id
    from uxlab.study.describe import Who, study_design_lines
    from uxlab.study.loading import load_study

    study = load_study(args.file)
    participant = args.participant or EXAMPLE_PARTICIPANT
    check_participant_id(participant)
    if args.number < 1:
        print("uxlab study: --number must be 1 or more", file=sys.stderr, flush=True)
        return 2
    rows = None if args.participant else PREVIEW_ROWS  # one asked for: all their trials
    who = Who(participant, args.number, args.seed, rows)
    for line in study_design_lines(study, who, lambda: shortest_gap_ms(study)):
        print(line)
    return 0
