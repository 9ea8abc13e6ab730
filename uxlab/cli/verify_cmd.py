"""`uxlab verify DB [--study FILE]`: prove the study can be rebuilt from its file and seeds."""

from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "verify",
        help="check that every trial list, stimulus and stored event can be rebuilt from the study "
        "file",
        description="Rebuild every session's trial list from the study file, the participant "
        "id and number, the group and the seed, and every trial's schedule from the corpus, "
        "and compare them with what the database says was played (the SHA-256 kept when each "
        "trial began), then each trial's stored chunk events and timings against that "
        "schedule (live trials: as far as uxlab drew their timing). Also checks the stimulus "
        "files against their SHA-256 at registration and the audit log's hash chain, and "
        "every committed trial's outcome, timings, answers and events against the digest its "
        "audit entry holds (a changed answer or response time is named with its trial), "
        "trials and sessions deleted, the sessions' finishes and end-of-study answers. "
        "Prints a summary with the audit chain head; exit status 1 on any mismatch. "
        "Read-only.",
    )
    parser.add_argument("db", metavar="DB", help="the study database (results/<study>.sqlite)")
    parser.add_argument(
        "--study",
        metavar="FILE",
        help="the study file to check against the database (its corpus is found relative to "
        "it); default: the text stored in the database, placed where the study was run from",
    )
    parser.add_argument(
        "--expect-head",
        metavar="HEAD",
        help="an audit chain head an earlier verify printed (kept in a pre-registration or an "
        "e-mail; 64 hex digits or at least the first 12): the log must still lead to it, "
        "unchanged up to it (entries added since are fine)",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.store.verify import verify_db
    from uxlab.store.verify_report import format_report

    report = verify_db(args.db, args.study, expect_head=args.expect_head)
    print(format_report(report))
    return 0 if report.ok else 1
