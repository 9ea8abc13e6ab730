"""Spreadsheet-safe CSV cells: text a spreadsheet would run as a formula is kept as text.

A cell whose text starts with `=`, `+`, `-`, `@`, a tab or a carriage return is run as a
formula by Excel, LibreOffice and Google Sheets when the CSV is opened (`=HYPERLINK(...)` in
a participant's free-text answer, in a choice option, in a participant id). `safe_cell`
prefixes such text with `'`, which every spreadsheet shows as text. Numbers are never
prefixed: a number of the table (an int or a float, e.g. `t_ms = -1.5`) and a text that is a
plain number (`-2`, `-1.5e3`) stay as they are. Text that already starts with `'` before
one of those characters gets one more `'`, so `plain_cell` gives every value back exactly:
an analysis reading its own export sees what was stored.

`write_safe_csv` writes rows with these cells, and quotes any cell holding a bare `\\r` (a
reader would otherwise split the row there; Python's csv module only quotes the line
terminator's own characters). `raw=True` (`--raw-cells` of `uxlab export` and `uxlab
report`) writes the values unchanged, still quoted where needed.
"""

from __future__ import annotations

import csv
import io
import numbers
import re
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any, TextIO

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
_RISKY_FIRST = frozenset("=+-@\t\r'")
_ESCAPED = re.compile(r"'+[=+\-@\t\r]")
_PLAIN_NUMBER = re.compile(r"[+-]?(\d+\.?\d*|\.\d+)([eE][+-]?\d+)?")


def needs_prefix(text: str) -> bool:
    """Whether a spreadsheet would run `text` as a formula (or it looks escaped already)."""
    if text.startswith(FORMULA_STARTS):
        return _PLAIN_NUMBER.fullmatch(text) is None
    return _ESCAPED.match(text) is not None


def safe_cell(value: Any) -> Any:
    """`value` as a spreadsheet-safe cell: formula-like text gets a leading `'`."""
    if isinstance(value, str) and value and not isinstance(value, _Number) and needs_prefix(value):
        return "'" + value
    return value


def plain_cell(value: Any) -> Any:
    """The stored value of a cell written by `safe_cell` (other values pass through)."""
    if isinstance(value, str) and _ESCAPED.match(value):
        return value[1:]
    return value


def plain_frame(frame: Any) -> Any:
    """A pandas DataFrame with `plain_cell` applied to its text columns (in place)."""
    for column in frame.columns:
        if frame[column].dtype == object:
            frame[column] = frame[column].map(plain_cell)
    return frame


def frame_rows(frame: Any, float_format: str = "%.6g") -> list[list[Any]]:
    """A DataFrame's rows as cells the way `DataFrame.to_csv(float_format=...)` writes them:
    missing values empty, floats through `float_format`, text and integers as they are."""
    out = []
    for row in frame.itertuples(index=False):
        cells: list[Any] = []
        for v in row:
            missing = v is None or type(v).__name__ in ("NAType", "NaTType")
            if missing or (isinstance(v, numbers.Real) and v != v):  # None, NA, NaN
                cells.append("")
            elif isinstance(v, (bool, numbers.Integral)) or type(v).__name__ == "bool_":
                cells.append(str(v))
            elif isinstance(v, numbers.Real):
                cells.append(_Number(float_format % v))
            else:
                cells.append(v)
        out.append(cells)
    return out


class _Number(str):
    """A number already formatted as text: never prefixed, whatever its sign."""


def write_safe_csv(
    path: Path | str,
    columns: Sequence[str],
    rows: Iterable[Sequence[Any]],
    *,
    raw: bool = False,
) -> None:
    """Write a header and rows (sequences in `columns` order) as spreadsheet-safe CSV."""
    with open(path, "w", newline="", encoding="utf-8") as fh:
        write_header(fh, columns, raw=raw)
        write_rows(fh, rows, raw=raw)


def write_header(fh: TextIO, columns: Sequence[str], *, raw: bool = False) -> None:
    """The header line of `write_safe_csv` into an open text file (opened with newline="")."""
    csv.writer(fh, lineterminator="\n").writerow(
        list(columns) if raw else [safe_cell(c) for c in columns]
    )


def write_rows(fh: TextIO, rows: Iterable[Sequence[Any]], *, raw: bool = False) -> None:
    """Rows as `write_safe_csv` writes them, into an open text file (opened with newline="")."""
    writer = csv.writer(fh, lineterminator="\n")
    quoted = _CrQuoter()
    for row in rows:
        cells = list(row)
        has_cr = False
        for k, v in enumerate(cells):
            if type(v) is str and v:  # the cheap test first: most cells are plain
                if not raw and v[0] in _RISKY_FIRST:
                    cells[k] = safe_cell(v)
                if "\r" in v:
                    has_cr = True
        if has_cr:
            fh.write(quoted.line(cells))
        else:
            writer.writerow(cells)


class _CrQuoter:
    """Writes a row with every `\\r`-holding cell quoted, ending in `\\n` like the rest."""

    def __init__(self) -> None:
        self.buffer = io.StringIO()
        self.writer = csv.writer(self.buffer, lineterminator="\r\n")

    def line(self, cells: list[Any]) -> str:
        self.buffer.seek(0)
        self.buffer.truncate()
        self.writer.writerow(cells)
        return self.buffer.getvalue()[:-2] + "\n"
