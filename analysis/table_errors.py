"""The one error type for a trial table that cannot be analysed (file, row, column, what)."""

from __future__ import annotations

from pathlib import Path


class TrialTableError(ValueError):
    """A trial table that cannot be analysed: file, row, column, and what would be right."""

    def __init__(self, path: Path | str, row: int | None, column: str | None, message: str):
        self.path, self.row, self.column = Path(path), row, column
        where = str(path)
        if row is not None:
            where += f" row {row}"
        if column is not None:
            where += f" column {column!r}"
        super().__init__(f"{where}: {message}")
