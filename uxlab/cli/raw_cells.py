"""`--raw-cells`, one meaning for every command that writes CSV (`export`, `report`)."""

from __future__ import annotations

import argparse


def add_raw_cells_argument(parser: argparse.ArgumentParser) -> None:
    """Add `--raw-cells` (`args.raw_cells`): CSV text cells as stored, not spreadsheet-safe."""
    parser.add_argument(
        "--raw-cells",
        action="store_true",
        help="write text cells exactly as stored; by default a cell starting with = + - @, "
        "a tab or a carriage return gets a leading ' so a spreadsheet shows it as text "
        "instead of running it as a formula (numbers are never changed)",
    )
