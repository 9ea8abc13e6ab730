"""Export a study database to the trial table (README contract 2) and its companions.

`export_db(db, out_dir, fmt="csv")` writes, into `out_dir`:

- `trials.csv`   one row per trial begun, tidy (no JSON in cells): the contract's columns in
                 order, one column per factor and one `q_<id>`/`rt_<id>_ms` pair per
                 per-trial question, and the playback-fidelity columns
                 (`FIDELITY_COLUMNS`). yes/no answers are 1 (yes) / 0 (no); a trial still in
                 flight (its process died and it was never resumed) is exported as
                 `interrupted`. A trial queued again at the end adds `RERUN_COLUMNS`.
- `events.csv`   `session_id, trial_index, t_ms, kind, data` (data: the event's other fields
                 as compact JSON), in stored order. A trial's events have `t_ms` from its
                 send; session events have `trial_index` -1 and `t_ms` from the start or
                 resume they happened in: `terminal` (the size at each start and resume,
                 `{"cols", "rows", "resumed"}`) and `resize` (`{"cols", "rows"}`, also among
                 a trial's events when the terminal was resized during it).
                 An attention check shown on its own screen has no stream: its trial row has
                 empty factor columns and `condition_id` `attention-check`.
- `sessions.csv` one row per session: state, pilot/simulated flags, resumed count, trial
                 counts, end-of-study answers (`q_<id>`) and the environment flattened into
                 `env_<key>` columns.
                 With an adaptive factor, also the procedure's final estimate per session
                 and track (`ADAPTIVE_FIELDS`: `adaptive_<factor>_estimate`, `_ci_low`,
                 `_ci_high`, `_target`, `_procedure`, `_n_trials`, `_reversals`; a track
                 other than "all" adds `_at_<levels>` after the factor).
- `runs.csv`     one row per start or resume of a session (`RUN_COLUMNS`): when, the trial
                 it began with, and that run's environment and timing warnings as `env_<key>`
                 columns (`sessions.csv` keeps the first run's).
- `adaptive_posteriors.json` (adaptive studies only) every session's stored procedure state,
                 arrays included: the QUEST+ posterior, the staircases' reversal levels.
- `study.json`   the study's factors, conditions, questions (type, scale, labels,
                 `acceptable_at`, `yes_means`), design and base profile, and every study
                 version found.

CSV cells are spreadsheet-safe: text starting with `= + - @`, a tab or a carriage return
(a formula to Excel, LibreOffice, Google Sheets) gets a leading `'`; numbers never do; a
cell holding a bare carriage return is quoted (`analysis.spreadsheet_cells`; `raw_cells`
writes the values unchanged). With `fmt="parquet"` the four tables are written as
`.parquet` (needs pyarrow). The export reads one consistent snapshot through a read-only
connection; the only write it makes is one `export` entry in the audit log (with the
SHA-256 of every file written), so it can be rerun at any time, also while a study runs.

The tables are read by `uxlab.store.export_tables` (one reader per table, the column names
above: `FIDELITY_COLUMNS`, `RERUN_COLUMNS`, `ADAPTIVE_FIELDS`); the trial table's columns are
contract 2 as data (`trial_table_spec`). This module writes them.
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from analysis.spreadsheet_cells import write_safe_csv
from uxlab.store.export_tables import read_tables
from uxlab.store.schema import StoreError

__all__ = ["TABLES", "Exported", "export_db", "read_tables"]

TABLES = ("trials", "events", "sessions", "runs")


class Exported(dict[str, Path]):
    """The files written (`trials`, `events`, `sessions`, `runs`, `study`, and for an
    adaptive study `adaptive_posteriors` -> path), and `rows`."""

    rows: dict[str, int]


def export_db(
    db: str | Path, out_dir: str | Path, fmt: str = "csv", raw_cells: bool = False
) -> Exported:
    """Write trials, events, sessions and study.json to `out_dir`; returns the paths.

    CSV cells that a spreadsheet would run as a formula get a leading `'` unless
    `raw_cells` (see `analysis.spreadsheet_cells`; `load_trial_table` takes it off again).
    """
    if fmt not in ("csv", "parquet"):
        raise StoreError(f"format {fmt!r}: use csv or parquet")
    content = read_tables(db)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = Exported()
    for name in TABLES:
        columns, rows = content[name]
        path = out / f"{name}.{fmt}"
        if fmt == "csv":
            _write_csv(path, columns, rows, raw_cells)
        else:
            _write_parquet(path, columns, rows)
        written[name] = path
    study_path = out / "study.json"
    _atomic_write(study_path, json.dumps(content["study"], indent=2, ensure_ascii=False) + "\n")
    written["study"] = study_path
    if content["adaptive"]:
        posteriors_path = out / "adaptive_posteriors.json"
        _atomic_write(posteriors_path, json.dumps(content["adaptive"]) + "\n")
        written["adaptive_posteriors"] = posteriors_path
    digests = {name: hashlib.sha256(p.read_bytes()).hexdigest() for name, p in written.items()}
    counts = {name: len(content[name][1]) for name in TABLES}
    _record_export(db, digests, counts)
    written.rows = counts
    return written


def _record_export(db: str | Path, digests: dict[str, str], counts: dict[str, int]) -> None:
    from uxlab.store.store import Store, sha256_json

    try:
        store = Store.open(db)
    except (sqlite3.OperationalError, StoreError):
        return  # a read-only copy: nothing to append to
    try:
        store.audit.record_export(sha256_json(digests), {"files": digests, "rows": counts})
    except sqlite3.OperationalError:
        pass
    finally:
        store.close()


@contextmanager
def _replacing(path: Path) -> Iterator[Path]:
    """A temporary file beside `path` to write, renamed over `path` when the block ends well and
    removed when it does not. Its name is this export's own: two exports into one folder once
    shared `<name>.tmp` and could write into one file."""
    tmp = path.with_name(f".{path.name}.{os.getpid()}.{secrets.token_hex(4)}.tmp")
    try:
        yield tmp
        tmp.replace(path)
    finally:
        tmp.unlink(missing_ok=True)


def _atomic_write(path: Path, text: str) -> None:
    with _replacing(path) as tmp:
        tmp.write_text(text, encoding="utf-8")


def _write_csv(
    path: Path, columns: list[str], rows: list[dict[str, Any]], raw_cells: bool = False
) -> None:
    """Spreadsheet-safe cells unless `raw_cells` (`analysis.spreadsheet_cells`)."""
    cells = ([("" if (v := row.get(c)) is None else v) for c in columns] for row in rows)
    with _replacing(path) as tmp:
        write_safe_csv(tmp, columns, cells, raw=raw_cells)


def _write_parquet(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    try:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise StoreError("--format parquet needs pyarrow: uv sync --extra parquet") from None
    table = pa.table({c: [row.get(c) for row in rows] for c in columns})
    with _replacing(path) as tmp:
        pq.write_table(table, tmp)
