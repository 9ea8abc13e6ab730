"""Reading a Parquet table (`uxlab export --format parquet`, or another lab's) as its CSV is read.

A Parquet export holds the values the CSV export writes as cells. `read_parquet_as_csv`
writes those values, row by row, as `uxlab export --raw-cells` would write them (None as an
empty cell, a bare carriage return quoted) into a temporary file, and hands that file to the
caller's CSV reader. So a Parquet table goes through the very reader, type inference and
checks of its CSV: the same columns, the same dtypes, the same errors. No `'` prefix is taken
off afterwards: Parquet cells are never escaped for spreadsheets.

pyarrow is an optional extra (`uv sync --extra parquet`); without it, and for a file that is
not readable Parquet, a `TrialTableError` names the file in one line.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TextIO, TypeVar

from analysis.spreadsheet_cells import write_header, write_rows
from analysis.table_errors import TrialTableError

INSTALL_HINT = "uv sync --extra parquet"
PARQUET_MAGIC = b"PAR1"
BATCH_ROWS = 65_536

Frame = TypeVar("Frame")


def is_parquet_file(path: Path) -> bool:
    """A `.parquet` file, or any file starting with Parquet's magic bytes."""
    if path.suffix.lower() == ".parquet":
        return True
    try:
        with open(path, "rb") as fh:
            return fh.read(4) == PARQUET_MAGIC
    except OSError:
        return False


def read_parquet_as_csv(
    path: Path,
    read_csv: Callable[[TextIO], Frame],
    *,
    max_csv_bytes: int,
    keep: Callable[[Any], Any] | None = None,
) -> Frame:
    """`read_csv` of the Parquet table at `path` written as a raw-cells CSV.

    `keep(batch)` may filter each pyarrow RecordBatch first (e.g. the session events out of
    a large event log). Raises TrialTableError naming `path` when pyarrow is missing, the file
    is not readable Parquet, a column holds nested or binary values, or the table is larger
    than `max_csv_bytes` as CSV."""
    pq = _pyarrow_parquet(path)
    import pyarrow as pa  # type: ignore[import-untyped]

    with tempfile.TemporaryFile("w+", newline="", encoding="utf-8") as fh:
        try:
            parquet = pq.ParquetFile(path)
            schema = parquet.schema_arrow
            _check_types(path, schema)
            write_header(fh, schema.names, raw=True)
            for batch in parquet.iter_batches(batch_size=BATCH_ROWS):
                if keep is not None:
                    batch = keep(batch)
                write_rows(fh, _rows(batch), raw=True)
                if fh.tell() > max_csv_bytes:
                    raise TrialTableError(
                        path, None, None, f"larger than {max_csv_bytes:,} bytes as CSV"
                    )
        except (pa.ArrowException, OSError, ValueError) as exc:
            if isinstance(exc, TrialTableError):
                raise
            raise TrialTableError(
                path, None, None, f"not a readable Parquet file ({_first_line(exc)})"
            ) from exc
        fh.seek(0)
        return read_csv(fh)


def _pyarrow_parquet(path: Path) -> Any:
    try:
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise TrialTableError(
            path, None, None, f"reading Parquet needs pyarrow: {INSTALL_HINT}"
        ) from None
    return pq


def _check_types(path: Path, schema: Any) -> None:
    """Every column holds cells a CSV could: numbers, text, booleans, dates and times."""
    import pyarrow as pa

    if not schema.names:
        raise TrialTableError(path, None, None, "the Parquet table has no columns")
    for field in schema:
        kind = field.type.value_type if pa.types.is_dictionary(field.type) else field.type
        if pa.types.is_nested(kind) or _is_binary(kind):
            raise TrialTableError(
                path,
                None,
                field.name,
                f"holds {kind} values; a trial table's cells are numbers, text or booleans",
            )


def _is_binary(kind: Any) -> bool:
    import pyarrow as pa

    return any(
        test(kind)
        for test in (
            pa.types.is_binary,
            pa.types.is_large_binary,
            pa.types.is_fixed_size_binary,
            pa.types.is_binary_view,
        )
    )


def _rows(batch: Any) -> Iterator[list[Any]]:
    """A batch's rows as cells: None empty, everything else as the CSV export writes it."""
    columns = [column.to_pylist() for column in batch.columns]
    for row in zip(*columns, strict=True):
        yield ["" if v is None else v for v in row]


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
