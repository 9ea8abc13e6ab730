"""Loading and validating the trial table (README contract 2): CSV, Parquet, an export folder,
SQLite.

`analysis` never imports `uxlab`: it reads the exported shape only, so a CSV from another lab
works as well as a uxlab export. An export folder holds `trials.csv` and optionally
`sessions.csv`, `events.csv` and `study.json` (factors and questions with their scales); a
Parquet export (`trials.parquet` and its companions) is read through the same CSV reader
(`analysis.parquet_table`), so it gives the same table and the same errors.
A SQLite file is read with plain SQL when it holds a table named `trials` with the exported
columns (the `uxlab report` command exports a uxlab study database to a folder first).

Every problem raises `TrialTableError` naming the file, the row (1-based data row, the header
is line 1 of a CSV, so row r is line r + 1) and the column, and saying what would be right.
"""

from __future__ import annotations

import hashlib
import json
import math
import sqlite3
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import pandas as pd

import trial_table_spec as spec
from analysis.foreign_table import ColumnMap, adapt_frame
from analysis.parquet_table import is_parquet_file, read_parquet_as_csv
from analysis.spreadsheet_cells import plain_frame
from analysis.table_errors import TrialTableError

# Columns the analysis needs in every table; the rest of contract 2 is used when present.
REQUIRED_COLUMNS = ("participant",)
# Contract 2's columns are data (`trial_table_spec`, shared with the export): every column
# it lists is a measurement or an identifier, never a design factor.
FIDELITY_COLUMNS = tuple(spec.names(spec.FIDELITY))
# Identifiers stay text (a hash of zeros or an id like 007 must not become a number).
ID_COLUMNS = spec.of_kind("id")
OUTCOMES = spec.OUTCOMES
FLAG_COLUMNS = spec.of_kind("flag")
TIME_COLUMNS = spec.of_kind("time")
MAX_TIME_MS = 24 * 3600 * 1000.0  # a trial time past one day is not a measurement
MAX_NUMBER_ABS = 1e9  # factor levels and answers beyond this are not plausible values
MAX_CSV_BYTES = 1024 * 1024 * 1024
MAX_STUDY_JSON_BYTES = 16 * 1024 * 1024
_YES = {"1", "1.0", "yes", "y", "true", "t"}
_NO = {"0", "0.0", "no", "n", "false", "f"}


@dataclass
class Question:
    """One question of the study: `q_<id>` holds the answer."""

    id: str
    type: str  # likert | yesno | choice | slider | text
    scale_size: int | None = None
    labels: list[str] = field(default_factory=list)
    acceptable_at: int | None = None  # likert: ratings >= this count as acceptable
    yes_means: str | None = None  # yesno: what "yes" (1) means, e.g. "acceptable" or "too slow"
    answer_kind: str | None = None  # what q_<id> holds (trial_table_spec.AnswerKind)

    @property
    def column(self) -> str:
        return f"q_{self.id}"


@dataclass
class TrialTable:
    """A validated trial table with what is known about the study and where it came from."""

    trials: pd.DataFrame
    source: Path
    source_sha256: str  # of `source`, or of the trial table exported from it (`digest_of`)
    study: dict[str, Any] = field(default_factory=dict)
    sessions: pd.DataFrame | None = None
    factors: list[str] = field(default_factory=list)
    questions: dict[str, Question] = field(default_factory=dict)
    runs: pd.DataFrame | None = None  # runs.csv: one row per start or resume of a session
    session_events: pd.DataFrame | None = None  # events.csv rows of SESSION_EVENT_KINDS
    factor_source: str = "study.json"  # where `factors` came from, in words
    stimulus: str | None = None  # the stimulus column named on load (after unit/measure)
    notes: list[str] = field(default_factory=list)  # what loading did to the data
    digest_of: str = "data file"  # or "trial table (as exported)": a database's export

    def question_for(self, column: str) -> Question | None:
        """The question whose answers are in `column` (`q_<id>`), if the study says."""
        for q in self.questions.values():
            if q.column == column:
                return q
        return None


def file_sha256(path: Path) -> str:
    """SHA-256 of a file's bytes (of `trials.csv` for a folder)."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


# Event kinds about the session rather than a trial's stream (the report's session facts).
SESSION_EVENT_KINDS = (
    "terminal",
    "resize",
    "terminal_size",
    "resume",
    "interrupt",
    "quit",
    "signal",
)


def read_session_events(path: Path) -> pd.DataFrame | None:
    """The rows of an `events.csv` (or `events.parquet`) whose kind is in SESSION_EVENT_KINDS
    (None if unreadable); read in blocks of columns `session_id, trial_index, t_ms, kind,
    data`, so a large event log (every chunk of every trial) is never held whole."""
    if is_parquet_file(path):
        try:
            return read_parquet_as_csv(
                path, _session_events, max_csv_bytes=MAX_CSV_BYTES, keep=_session_event_rows
            )
        except TrialTableError:
            return None
    return _session_events(path)


def _session_events(source: Path | TextIO) -> pd.DataFrame | None:
    """Every cell read as text, then `trial_index` and `t_ms` as numbers (NaN where not one):
    the dtypes do not depend on which rows a block held, so a Parquet event log filtered
    first reads as its CSV does."""
    wanted = ["session_id", "trial_index", "t_ms", "kind", "data"]
    try:
        parts = [
            block[block["kind"].isin(SESSION_EVENT_KINDS)]
            for block in pd.read_csv(
                source, usecols=lambda c: c in wanted, dtype=str, chunksize=200_000
            )
            if "kind" in block.columns
        ]
    except (OSError, ValueError, pd.errors.ParserError):
        return None
    if not parts:
        return None
    events = pd.concat(parts, ignore_index=True)
    for column in ("trial_index", "t_ms"):
        if column in events.columns:
            events[column] = pd.to_numeric(events[column], errors="coerce").astype(float)
    return events


def _session_event_rows(batch: Any) -> Any:
    """The session events of a pyarrow RecordBatch of `events.parquet` (all of it without a
    `kind` column: the CSV reader then finds none)."""
    import pyarrow as pa  # type: ignore[import-untyped]
    import pyarrow.compute as pc  # type: ignore[import-untyped]

    if "kind" not in batch.schema.names:
        return batch
    kinds = pa.array(SESSION_EVENT_KINDS)
    return batch.filter(pc.is_in(batch.column("kind").cast(pa.string()), value_set=kinds))


def load_trial_table(path: str | Path, columns: ColumnMap | None = None) -> TrialTable:
    """Load a trial table from a CSV or Parquet file, an export folder (`trials.csv`, else
    `trials.parquet`), or a SQLite file with a `trials` table.

    `columns` names the columns of another lab's table (`analysis.foreign_table`)."""
    path = Path(path)
    if not path.exists():
        raise TrialTableError(path, None, None, "no such file or folder")
    study: dict[str, Any] = {}
    sessions = runs = session_events = None
    notes: list[str] = []
    if path.is_dir():
        data_path, ext = _folder_trials(path, notes)
        trials = _read_trials(data_path)
        study_path = path / "study.json"
        if study_path.exists():
            study = _read_study_json(study_path)
        sessions = _read_companion(path / f"sessions.{ext}")
        runs = _read_companion(path / f"runs.{ext}")
        if (path / f"events.{ext}").exists():
            session_events = read_session_events(path / f"events.{ext}")
    elif _is_sqlite(path):
        trials = read_sqlite_trials(path)
        data_path = path
    else:
        trials = _read_trials(path)
        data_path = path
        sidecar = path.with_name("study.json")
        if sidecar.exists():
            study = _read_study_json(sidecar)
    columns = columns or ColumnMap()
    stimulus = None
    if not columns.is_empty:
        trials, adapted, stimulus = adapt_frame(trials, columns, data_path)
        notes += adapted
    trials = validate_trials(trials, data_path)
    factors, factor_source = _factor_names(trials, study, columns, stimulus)
    questions = _questions(study)
    table = TrialTable(
        trials=trials,
        source=data_path,
        source_sha256=file_sha256(data_path),
        study=study,
        sessions=sessions,
        factors=factors,
        questions=questions,
        runs=runs,
        session_events=session_events,
        factor_source=factor_source,
        stimulus=stimulus,
        notes=notes,
    )
    check_answers(table)
    return table


def read_sqlite_trials(path: Path, table: str = "trials") -> pd.DataFrame:
    """Read the exported-shape trial table from a SQLite file with plain SQL."""
    try:
        with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as con:
            names = [r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            if table not in names:
                raise TrialTableError(
                    path, None, None, f"SQLite file has no {table!r} table (tables: {names})"
                )
            frame = pd.read_sql_query(f'SELECT * FROM "{table}"', con)
    except sqlite3.DatabaseError as exc:
        raise TrialTableError(path, None, None, f"cannot read as SQLite: {exc}") from exc
    if "participant" not in frame.columns:
        raise TrialTableError(
            path,
            None,
            "participant",
            f"the {table!r} table is not in the exported trial-table shape; "
            "export it with `uxlab export DB` or pass the DB to `uxlab report`",
        )
    return frame


def _is_sqlite(path: Path) -> bool:
    with open(path, "rb") as fh:
        return fh.read(16) == b"SQLite format 3\x00"


def _folder_trials(folder: Path, notes: list[str]) -> tuple[Path, str]:
    """An export folder's trial table and its format: `trials.csv`, else `trials.parquet`
    (its companions `sessions`, `runs`, `events` are read in the same format)."""
    csv_path, parquet_path = folder / "trials.csv", folder / "trials.parquet"
    if csv_path.exists():
        if parquet_path.exists():
            notes.append(
                f"The folder holds both trials.csv and trials.parquet; read trials.csv "
                f"(report on {parquet_path} itself to read the other)."
            )
        return csv_path, "csv"
    if parquet_path.exists():
        return parquet_path, "parquet"
    raise TrialTableError(
        folder,
        None,
        None,
        "folder has no trials.csv or trials.parquet (expected a `uxlab export` folder)",
    )


def _read_companion(path: Path) -> pd.DataFrame | None:
    """An export folder's `sessions` or `runs` table (None when absent), read as its CSV is."""
    if not path.exists():
        return None
    if path.suffix == ".parquet":
        return read_parquet_as_csv(path, pd.read_csv, max_csv_bytes=MAX_CSV_BYTES)
    return plain_frame(pd.read_csv(path))


def _read_trials(path: Path) -> pd.DataFrame:
    """A trial-table CSV (possibly compressed) or Parquet file, every cell as stored."""
    if is_parquet_file(path):
        return read_parquet_as_csv(
            path, lambda fh: _parse_csv(fh, path), max_csv_bytes=MAX_CSV_BYTES
        )
    return _read_csv(path)


def _read_csv(path: Path) -> pd.DataFrame:
    if path.stat().st_size > MAX_CSV_BYTES:
        raise TrialTableError(path, None, None, f"larger than {MAX_CSV_BYTES:,} bytes")
    return plain_frame(_parse_csv(path, path))  # text cells as stored (the `'` taken off)


def _parse_csv(source: Path | TextIO, path: Path) -> pd.DataFrame:
    """The trial table's CSV reader: identifiers as text, errors naming `path`."""
    try:
        return pd.read_csv(source, low_memory=False, dtype=dict.fromkeys(ID_COLUMNS, str))
    except pd.errors.EmptyDataError as exc:
        raise TrialTableError(path, None, None, "empty file (expected a CSV header)") from exc
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise TrialTableError(path, None, None, f"not a readable CSV: {exc}") from exc


def _read_study_json(path: Path) -> dict[str, Any]:
    if path.stat().st_size > MAX_STUDY_JSON_BYTES:
        raise TrialTableError(path, None, None, f"larger than {MAX_STUDY_JSON_BYTES:,} bytes")
    try:
        data = json.loads(
            path.read_text(encoding="utf-8"),
            parse_constant=_no_constant,
            parse_float=_finite_float,
        )
    except json.JSONDecodeError as exc:
        raise TrialTableError(path, exc.lineno, None, f"not valid JSON: {exc.msg}") from exc
    except (UnicodeDecodeError, RecursionError, ValueError) as exc:
        raise TrialTableError(path, None, None, f"not a readable study.json ({exc})") from exc
    if not isinstance(data, dict):
        raise TrialTableError(path, None, None, "expected a JSON object with the study")
    return data


def _no_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is not a finite number")
    return value


def _row_of(frame: pd.DataFrame, mask: np.ndarray) -> int:
    """1-based data row of the first True in `mask` (the file's row when rows were dropped
    but the index kept, as `analysis.foreign_table` does)."""
    pos = int(np.flatnonzero(mask)[0])
    if pd.api.types.is_integer_dtype(frame.index):
        return int(frame.index[pos]) + 1
    return pos + 1


def known_columns() -> tuple[str, ...]:
    """Every non-factor, non-question column of contract 2 (`trial_table_spec.COLUMNS`)."""
    return tuple(c.name for c in spec.COLUMNS)


def validate_trials(trials: pd.DataFrame, path: Path) -> pd.DataFrame:
    """Check and normalise the columns the analysis uses; return a cleaned copy."""
    trials = trials.copy()
    for col in REQUIRED_COLUMNS:
        if col not in trials.columns:
            raise TrialTableError(
                path, None, col, f"missing column (columns present: {', '.join(trials.columns)})"
            )
    if trials.empty:
        raise TrialTableError(path, None, None, "the table has no trial rows")
    missing_pid = trials["participant"].isna().to_numpy()
    if missing_pid.any():
        row = _row_of(trials, missing_pid)
        raise TrialTableError(path, row, "participant", "empty participant id")
    trials["participant"] = trials["participant"].astype(str)
    if "outcome" in trials.columns:
        outcome = trials["outcome"].astype(str).str.strip().str.lower()
        bad = ~outcome.isin(OUTCOMES).to_numpy()
        if bad.any():
            r = _row_of(trials, bad)
            raise TrialTableError(
                path,
                r,
                "outcome",
                f"{trials['outcome'][bad].iloc[0]!r} is not one of {', '.join(OUTCOMES)}",
            )
        trials["outcome"] = outcome
    for col in FLAG_COLUMNS:
        if col in trials.columns:
            trials[col] = _flag_column(trials[col], path, col)
    for col in TIME_COLUMNS:
        if col in trials.columns:
            trials[col] = _number_column(trials[col], path, col)
            negative = (trials[col] < 0).to_numpy()
            if negative.any():
                r = _row_of(trials, negative)
                raise TrialTableError(
                    path,
                    r,
                    col,
                    f"{trials[col][negative].iloc[0]} is negative (times are ms from send)",
                )
            too_late = (trials[col] > MAX_TIME_MS).to_numpy()
            if too_late.any():
                r = _row_of(trials, too_late)
                raise TrialTableError(
                    path,
                    r,
                    col,
                    f"{trials[col][too_late].iloc[0]:g} ms is not plausible (at most one day, "
                    f"{MAX_TIME_MS:g} ms)",
                )
    if "outcome" in trials.columns and "t_abandon_ms" in trials.columns:
        no_time = ((trials["outcome"] == "abandoned") & trials["t_abandon_ms"].isna()).to_numpy()
        if no_time.any():
            raise TrialTableError(
                path,
                _row_of(trials, no_time),
                "t_abandon_ms",
                "empty on an abandoned trial (the time the participant gave up is needed)",
            )
    return trials


def _flag_column(values: pd.Series, path: Path | str, col: str) -> pd.Series:
    """0/1 (or yes/no, true/false) with empties kept as NaN."""
    text = values.astype(str).str.strip().str.lower()
    empty = values.isna() | text.isin({"", "nan", "none"})
    yes, no = text.isin(_YES), text.isin(_NO)
    bad = ~(empty | yes | no)
    if bad.any():
        r = _row_of(values.to_frame(), bad.to_numpy())
        raise TrialTableError(path, r, col, f"{values[bad].iloc[0]!r} is not 0/1")
    return pd.Series(np.where(yes, 1.0, np.where(no, 0.0, np.nan)), index=values.index)


def _number_column(values: pd.Series, path: Path, col: str) -> pd.Series:
    numbers = pd.to_numeric(values, errors="coerce")
    bad = (numbers.isna() & values.notna() & (values.astype(str).str.strip() != "")).to_numpy()
    if bad.any():
        r = _row_of(values.to_frame(), bad)
        raise TrialTableError(path, r, col, f"{values[bad].iloc[0]!r} is not a number of ms")
    return numbers.astype(float)


def binary_column(trials: pd.DataFrame, column: str, path: Path | str) -> pd.Series:
    """A yes/no answer column as 1.0/0.0 (NaN where unanswered); errors name the bad row."""
    if column not in trials.columns:
        raise TrialTableError(
            path, None, column, f"no such column (question columns: {question_columns(trials)})"
        )
    try:
        return _flag_column(trials[column], path, column)
    except TrialTableError as exc:
        raise TrialTableError(
            path,
            exc.row,
            column,
            f"{str(exc).rsplit(': ', 1)[-1]}; name the values that mean yes with "
            "--yes VALUE[,VALUE] (e.g. --yes j), the others then mean no",
        ) from None


def numeric_column(trials: pd.DataFrame, column: str, path: Path) -> pd.Series:
    """A numeric column (a factor level or a rating), NaN where empty; errors name the bad row."""
    if column not in trials.columns:
        raise TrialTableError(
            path, None, column, f"no such column (columns present: {', '.join(trials.columns)})"
        )
    values = trials[column]
    numbers = pd.to_numeric(values, errors="coerce")
    bad = (numbers.isna() & values.notna() & (values.astype(str).str.strip() != "")).to_numpy()
    if bad.any():
        r = _row_of(trials, bad)
        raise TrialTableError(path, r, column, f"{values[bad].iloc[0]!r} is not a number")
    numbers = numbers.astype(float)
    _check_plausible(numbers, path, column)
    return numbers


def _check_plausible(numbers: pd.Series, path: Path, column: str) -> None:
    """Finite, and within ±MAX_NUMBER_ABS (empty cells, NaN, are fine)."""
    wild = (np.isinf(numbers) | (numbers.abs() > MAX_NUMBER_ABS)).to_numpy()
    if wild.any():
        r = _row_of(numbers.to_frame(), wild)
        raise TrialTableError(
            path,
            r,
            column,
            f"{numbers[wild].iloc[0]:g} is not a plausible value (finite, within "
            f"±{MAX_NUMBER_ABS:g})",
        )


def check_answers(table: TrialTable) -> None:
    """Each answer column on its question's scale, each factor level plausible: by the
    question's answer kind (`study.json` "answer_kinds"), a binary answer is 0 or 1, a rating
    a whole number in 1..scale, any number finite and within ±MAX_NUMBER_ABS. Raises
    TrialTableError naming row and column."""
    trials, path = table.trials, table.source
    for name in table.factors:
        numeric_column(trials, name, path)
    for q in table.questions.values():
        col = q.column
        if col not in trials.columns:
            continue
        if q.answer_kind == "binary":
            binary_column(trials, col, path)
        elif q.answer_kind in ("rating", "number"):
            values = numeric_column(trials, col, path)
            if q.answer_kind == "rating" and q.scale_size:
                ok = values.isna() | (values.between(1, q.scale_size) & (values % 1 == 0))
                bad = (~ok).to_numpy()
                if bad.any():
                    r = _row_of(trials, bad)
                    raise TrialTableError(
                        path,
                        r,
                        col,
                        f"{values[bad].iloc[0]:g} is not a rating on the scale 1..{q.scale_size}",
                    )


def question_columns(trials: pd.DataFrame) -> list[str]:
    """Every `q_<id>` column."""
    return [c for c in trials.columns if str(c).startswith("q_")]


def is_uxlab_shaped(trials: pd.DataFrame) -> bool:
    """True for a table in contract 2's shape (a uxlab export), whose column names say
    which columns are design factors; False for another lab's table."""
    cols = set(trials.columns)
    return "study_sha256" in cols or {"trial_index", "condition_id", "outcome"} <= cols


def _factor_names(
    trials: pd.DataFrame, study: dict[str, Any], columns: ColumnMap, stimulus: str | None
) -> tuple[list[str], str]:
    """(design factors, where they came from): --factor, else study.json, else the column
    names of a uxlab export; another lab's table without either has the stimulus only."""
    declared = study.get("factors")
    first = [stimulus] if stimulus else []
    if columns.factors:
        names, source = [*first, *columns.factors], "--factor"
    elif isinstance(declared, dict):
        names, source = list(declared), "study.json"
    elif isinstance(declared, list):
        names = [str(f.get("name")) if isinstance(f, dict) else str(f) for f in declared]
        source = "study.json"
    elif is_uxlab_shaped(trials):
        known = set(known_columns())
        names = [
            c
            for c in trials.columns
            if c not in known
            and not str(c).startswith(("q_", "rt_"))
            and pd.api.types.is_numeric_dtype(trials[c])
        ]
        source = "the uxlab export's column names (no study.json)"
    else:
        names = first or [
            c
            for c in ("ttft_ms", "itl_ms", "e2e_ms")
            if c in trials.columns and pd.api.types.is_numeric_dtype(trials[c])
        ]
        source = (
            "the stimulus only: not a uxlab export and no study.json; "
            "name other design factors with --factor COL"
        )
    names = list(dict.fromkeys(n for n in names if n in trials.columns))
    return names, source


DEFAULT_ANSWER_KINDS = {"yesno": "binary", "likert": "rating", "slider": "number"}
"""The answer kind of a question type when `study.json` has no "answer_kinds" (an export
from before it was written, or another lab's file using uxlab's type names)."""


def _questions(study: dict[str, Any]) -> dict[str, Question]:
    kinds = study.get("answer_kinds")
    kinds = {**DEFAULT_ANSWER_KINDS, **(kinds if isinstance(kinds, dict) else {})}
    raw = study.get("questions") or []
    if isinstance(raw, dict):
        raw = [dict(v, id=k) if isinstance(v, dict) else {"id": k} for k, v in raw.items()]
    out: dict[str, Question] = {}
    for item in raw:
        if not isinstance(item, dict) or "id" not in item:
            continue
        qid = str(item["id"])
        size = item.get("scale_size", item.get("scale", item.get("points")))
        labels = item.get("labels") or []
        acceptable = item.get("acceptable_at", item.get("acceptable"))
        yes_means = item.get("yes_means", item.get("means"))
        if yes_means is None and isinstance(acceptable, str):
            yes_means = "acceptable" if acceptable.lower() in _YES else None
        out[qid] = Question(
            id=qid,
            type=str(item.get("type", "")),
            scale_size=int(size) if isinstance(size, int | float) else None,
            labels=[str(x) for x in labels] if isinstance(labels, list) else [],
            acceptable_at=int(acceptable) if isinstance(acceptable, int | float) else None,
            yes_means=str(yes_means) if yes_means is not None else None,
            answer_kind=_answer_kind(kinds.get(str(item.get("type", "")))),
        )
    return out


def _answer_kind(kind: Any) -> str | None:
    """A known answer kind (`trial_table_spec.ANSWER_KINDS`), else None (not checked)."""
    return kind if kind in spec.ANSWER_KINDS else None
