"""`uxlab export DB [-o DIR] [--format csv|parquet] [--raw-cells]`: the trial table and more."""

from __future__ import annotations

import argparse
from pathlib import Path

from uxlab.cli.options import add_raw_cells_argument, database_arg, db_name
from uxlab.cli.places import add_out_option, output_for


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "export",
        help="write trials, events, sessions and study.json from a study database",
        description="Export a study database to trials.csv (one row per trial, one column "
        "per factor and per question), events.csv, sessions.csv and study.json. Rerunnable; "
        "the data are read through a read-only connection and only an audit entry is added.",
    )
    parser.add_argument("db", metavar="DB", help="the study database (results/<study>.sqlite)")
    add_out_option(
        parser,
        "output folder (default: NAME-export/ beside the database, as "
        "results/quickstart.sqlite -> results/quickstart-export/)",
        metavar="DIR",
    )
    parser.add_argument(
        "--format",
        choices=("csv", "parquet"),
        default="csv",
        help="table format (parquet needs pyarrow); default csv",
    )
    add_raw_cells_argument(parser)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.store.export import export_db

    db = database_arg(args.db)
    out = Path(args.out) if args.out else output_for(db, "export")
    written = export_db(db, out, args.format, raw_cells=args.raw_cells)
    db = db_name(db)
    rows = written.rows
    print(
        f"{db}: {rows['sessions']} session(s), {rows['trials']} trial(s), {rows['events']} event(s)"
    )
    for name, path in written.items():
        print(f"  wrote {path}" + (f"  ({rows[name]} rows)" if name in rows else ""))
    return 0
