"""Options several commands share, declared once: the study database, the seed, `--quiet`,
`--raw-cells`, the price sheet (`inspect`, `report`).

Declaring a parser imports nothing heavy: `uxlab --help` builds every subcommand's parser,
so a value is turned into its type (a database path or URL) only when it is parsed.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pricing.sheet import PriceChoice

DB_HELP = (
    "study database: a SQLite file (default results/<id>.sqlite) or a "
    "postgresql:// URL shared by several hosts"
)


def database_arg(text: str) -> str | Path:
    """A `--db` value: a PostgreSQL URL as given, anything else a SQLite file's path."""
    from uxlab.store.dialect import database_arg as parse

    return parse(text)


def db_name(db: object) -> Path | str:
    """How messages name a database: a SQLite file's Path, or a URL without its password."""
    from uxlab.store.dialect import db_name as name

    named: Path | str = name(db)  # (the store's is typed Any: a Path or a redacted URL)
    return named


def add_db_option(parser: argparse.ArgumentParser, help: str = DB_HELP) -> None:
    """`--db PATH|URL` (`args.db`: a Path, a PostgreSQL URL, or None for the default)."""
    parser.add_argument("--db", type=database_arg, metavar="PATH|URL", help=help)


def add_seed_option(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    help: str = "random seed (default 0)",
    default: int | None = 0,
    metavar: str | None = None,
) -> None:
    """`--seed N` (`args.seed`, a whole number)."""
    parser.add_argument("--seed", type=int, default=default, metavar=metavar, help=help)


def add_quiet_option(parser: argparse.ArgumentParser, help: str = "no progress output") -> None:
    """`-q/--quiet` (`args.quiet`)."""
    parser.add_argument("-q", "--quiet", action="store_true", help=help)


def add_raw_cells_argument(parser: argparse.ArgumentParser) -> None:
    """Add `--raw-cells` (`args.raw_cells`): CSV text cells as stored, not spreadsheet-safe.

    One meaning for every command that writes CSV (`export`, `report`)."""
    parser.add_argument(
        "--raw-cells",
        action="store_true",
        help="write text cells exactly as stored; by default a cell starting with = + - @, "
        "a tab or a carriage return gets a leading ' so a spreadsheet shows it as text "
        "instead of running it as a formula (numbers are never changed)",
    )


def add_price_arguments(parser: argparse.ArgumentParser) -> None:
    """`--prices FILE`, `--price-as [SOURCE=]ENTRY` and `--estimate-usage` (also `report`'s)."""
    parser.add_argument(
        "--prices",
        metavar="FILE",
        help="a price sheet (TOML; see prices/example.toml): each recording is priced from "
        "its own token usage at its model's price; without usage it stays unpriced, never 0",
    )
    parser.add_argument(
        "--price-as",
        action="append",
        default=[],
        metavar="[SOURCE=]ENTRY",
        help="price the recordings of SOURCE (vendor/model as printed) as the sheet's ENTRY, "
        "or every recording when SOURCE is left out (repeatable)",
    )
    parser.add_argument(
        "--estimate-usage",
        action="store_true",
        help="estimate the tokens of recordings without usage from their text (characters / "
        "4, or the chunks' n_tokens); such costs are marked estimated (~) everywhere",
    )


def price_choice(args: argparse.Namespace, command: str) -> PriceChoice | None:
    """The `pricing.PriceChoice` of the options (None without `--prices`); exit-2 errors."""
    from uxlab.cli import CliError

    if args.prices is None:
        if args.price_as or args.estimate_usage:
            used = "--price-as" if args.price_as else "--estimate-usage"
            raise CliError(f"{used} needs --prices FILE (a price sheet)")
        return None
    from pricing.sheet import PriceChoice, load_price_sheet

    return PriceChoice.from_options(load_price_sheet(args.prices), args.price_as)
