"""The trial table from what `uxlab report` reads: a study database, an export folder, or
another lab's trial-table CSV or Parquet file.

`check_input` refuses, in one line, anything else (a replay file, a study file, a CSV
without a participant column); `load_trial_table` reads the table, a uxlab study database
through the store's exporter first (`uxlab report`, `uxlab demo`, `uxlab plan --truth-from`).
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import TYPE_CHECKING

from uxlab.errors import UxlabError

if TYPE_CHECKING:
    from analysis.foreign_table import ColumnMap
    from analysis.trial_table import TrialTable

ACCEPTS = (
    "uxlab report reads a study database (.sqlite), a `uxlab export` folder (with trials.csv "
    "or trials.parquet), a trial-table CSV (a header row with a 'participant' column) or a "
    "trial-table Parquet file"
)


class ReportError(UxlabError):
    """Bad input to `uxlab report` (the message names file, row and column)."""


def check_input(data: Path | str, participant_column: str | None = None) -> None:
    """Refuse, in one line, DATA that is not one of the inputs the report reads (`ACCEPTS`)."""
    if isinstance(data, str):  # a PostgreSQL URL: the exporter says what is wrong with it
        return
    what = not_a_trial_table(data, participant_column or "participant")
    if what is not None:
        raise ReportError(f"{data}: {what}; {ACCEPTS}")


def not_a_trial_table(data: Path, participant_column: str = "participant") -> str | None:
    """What DATA is instead of a trial table, or None when it may be one."""
    from uxlab.command_hint import command

    if not data.exists():
        return "no such file or folder"
    if data.is_dir():
        if (data / "trials.csv").is_file() or (data / "trials.parquet").is_file():
            return None
        if next(data.glob("*.jsonl"), None) or next(data.glob("*/*.jsonl"), None):
            return f"a folder of replay files, without trials.csv (see {command('inspect', data)})"
        return "a folder without trials.csv or trials.parquet"
    if is_sqlite(data) or data.suffix in (".gz", ".bz2", ".xz", ".zip", ".zst"):
        return None  # a compressed CSV is read (and checked) by the loader
    from analysis.parquet_table import is_parquet_file

    if is_parquet_file(data):
        return None  # read (and checked, naming the file) by the loader
    try:
        with open(data, "rb") as fh:
            head = fh.read(64 * 1024)
    except OSError as exc:
        return f"cannot be read ({exc.strerror})"
    if data.suffix == ".jsonl" or head.lstrip().startswith(b"{"):
        return f"a replay file or JSON, not a trial table (see {command('inspect', data)})"
    if data.suffix == ".toml":
        return f"a study file; run it ({command('run', data)}), then report on its database"
    try:
        first_line = head.decode("utf-8-sig").splitlines()[0] if head.strip() else ""
    except UnicodeDecodeError:
        return "not a text file"
    import csv

    header = next(csv.reader([first_line]), [])
    if participant_column not in [h.strip() for h in header]:
        return (
            f"not a trial table: its first line is not a header with a {participant_column!r} "
            "column (--participant COLUMN names another)"
        )
    return None


def is_sqlite(path: Path) -> bool:
    """Whether `path` is a SQLite file (a study database, or a table exported to SQLite)."""
    from uxlab.store.open_checks import is_sqlite_file

    return is_sqlite_file(path)


def load_trial_table(path: Path | str, columns: ColumnMap | None = None) -> TrialTable:
    """The trial table; a uxlab database goes through the store's exporter first."""
    from analysis.trial_table import load_trial_table as load
    from uxlab.store.open_checks import holds_trial_table

    if isinstance(path, str):  # a PostgreSQL study database (`--db postgresql://...`)
        return load_exported(path, columns)
    if not path.exists():
        raise ReportError(f"{path}: no such file or folder")
    if is_sqlite(path) and not holds_trial_table(path):
        return load_exported(path, columns)
    return load(path, columns)


def load_exported(db: Path | str, columns: ColumnMap | None = None) -> TrialTable:
    """A uxlab study database's trial table, through the store's exporter."""
    from analysis.table_errors import TrialTableError
    from analysis.trial_table import file_sha256
    from analysis.trial_table import load_trial_table as load
    from uxlab.store.dialect import database_stem, db_name
    from uxlab.store.export import export_db

    name = db_name(db)
    with tempfile.TemporaryDirectory(prefix="uxlab-report-") as tmp:
        export_db(db, tmp)
        try:
            table = load(tmp, columns)
        except TrialTableError as exc:  # name the database, not the temporary export
            message = str(exc).replace(str(Path(tmp) / "trials.csv"), f"{name} (its trials)")
            raise ReportError(message.replace(tmp, str(name))) from exc
        # the digest is of the trial table exported: a PostgreSQL database is no file, and a
        # SQLite file changes with every export (its audit row), so the file's digest would
        # differ between two reports of the same data; the report names a PostgreSQL
        # database as `postgresql:<database name>`
        digest = file_sha256(Path(tmp) / "trials.csv")
    source = db if isinstance(db, Path) else Path(f"postgresql:{database_stem(db)}")
    table.source, table.source_sha256 = source, digest
    table.digest_of = "trial table (as exported)"
    return table
