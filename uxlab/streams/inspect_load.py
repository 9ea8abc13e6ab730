"""Loading many replay files straight into the flat arrays the metrics use (`uxlab inspect`).

`read_replay` builds a full `Recording` (one object per event) for everyone who plays or
re-times a stream. Inspecting a corpus needs only a few numbers per chunk, so this path keeps
the validated columns of each file (`replay_file.parse_events`) as numpy arrays, without a
`Chunk` object per event, and reads the files on a pool of processes when there are many.
Validation is the same: a bad file is reported with file, line and field, and skipped.
"""

from __future__ import annotations

import functools
import itertools
import math
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Generic, Protocol, TypeVar

import numpy as np

from uxlab.streams.canonical_batch import (
    CHANNEL_CODES,
    CanonicalFile,
    arrays_of_canonical,
    canonical_columns,
    columns_of_canonical,
)
from uxlab.streams.metrics import describe_columns, pooled_summary
from uxlab.streams.process_batches import run_batches
from uxlab.streams.recording import Chunk, End, ErrorEvent, Header, Meta, Recording
from uxlab.streams.recording_columns import RecordingColumns
from uxlab.streams.replay_decode import canonical_file
from uxlab.streams.replay_file import (
    ReplayFormatError,
    ValidEvents,
    iter_replay_paths,
    parse_events,
    paused_gc,
    read_bytes,
    read_text,
    text_of,
)
from uxlab.streams.stream_arrays import (
    OUTPUT_CHANNELS,
    StreamArrays,
    error_type,
    has_synthetic_gaps,
    output_facts,
    server_decode_rate,
)
from uxlab.streams.tool_calls import TOOL_CALL

if TYPE_CHECKING:  # pricing is imported when a file is priced (`inspect --prices`), not before
    from pricing.corpus import RecordingFacts

MIN_FILES_FOR_POOL = 64
"""Fewer files than this are read in this process (starting workers costs ~50 ms)."""


def _billing(
    header: Header | None,
    end: End | None,
    cols: RecordingColumns,
) -> RecordingFacts | None:
    if header is None:
        return None
    from uxlab.streams.billing import billing_facts

    failed = cols.error is not None or end is None or end.finish_reason == "error"
    return billing_facts(
        cols.id,
        header.source,
        header.request,
        end.usage if end is not None else None,
        cols.t_ms,
        cols.channel_code,
        cols.n_chars,
        cols.n_tokens,
        cols.end_ms,
        failed,
    )


def columns_of_valid(
    rid: str, valid: ValidEvents, synthetic: bool = False, header: Header | None = None
) -> RecordingColumns:
    """The columns of a file that passed the bulk checks (no object per chunk)."""
    n = len(valid.texts)
    channels = valid.channels
    if channels.count("content") == n:
        codes = np.zeros(n, dtype=np.int8)
    else:
        codes = np.array([CHANNEL_CODES[c] for c in channels], dtype=np.int8)
    errors = [ev for _, ev in sorted(valid.others.items()) if isinstance(ev, ErrorEvent)]
    end = valid.end
    first = valid.first_event_ms
    if math.isnan(first) and end is not None and end.t_ms is not None:
        first = end.t_ms
    n_chars = np.fromiter(map(len, valid.texts), dtype=np.int64, count=n)
    first_output, n_calls, n_incomplete, rate = _facts_of_valid(valid, n_chars, codes)
    cols = RecordingColumns(
        id=rid,
        t_ms=valid.t_ms,
        channel_code=codes,
        n_chars=n_chars,
        n_tokens=valid.tokens,
        first_event_ms=first,
        first_output_ms=first_output,
        n_tool_calls=n_calls,
        n_incomplete_tool_calls=n_incomplete,
        server_decode_tokens_per_s=rate,
        end_ms=math.nan if end is None or end.t_ms is None else end.t_ms,
        finish_reason=None if end is None else end.finish_reason,
        error=error_type(errors[0].error) if errors else None,
        truncated=end is None,
        synthetic=synthetic,
    )
    cols.billing = _billing(header, end, cols)
    return cols


def _facts_of_valid(
    valid: ValidEvents, n_chars: np.ndarray, channel_code: np.ndarray
) -> tuple[float, int, int, float]:
    """`stream_arrays.output_facts` of a file that passed the bulk checks: its chunks are
    canonical (no `tool_index`), its metas are among `valid.others`."""
    said = n_chars > 0
    said_at = said & ~np.isnan(valid.t_ms)  # the first known time, as `output_facts`
    first = float(valid.t_ms[said_at][0]) if said_at.any() else math.nan
    starts = [
        ev
        for ev in valid.others.values()
        if isinstance(ev, Meta) and ev.data.get("kind") == TOOL_CALL
    ]
    t_start = starts[0].t_ms if starts else None
    if t_start is not None and (math.isnan(first) or t_start < first):
        first = t_start
    tool_channel = channel_code == CHANNEL_CODES["tool"]
    has_tool_text = bool(said[tool_channel].any())
    n_calls = len(starts) or int(has_tool_text)
    n_incomplete = sum(bool(m.data.get("incomplete")) for m in starts)
    end = valid.end
    rate = server_decode_rate(end.usage if end is not None else None)
    return first, n_calls, n_incomplete, math.nan if rate is None else rate


def columns_of_recording(rec: Recording) -> RecordingColumns:
    """The columns of a Recording (files the bulk checks were unsure of, and tests)."""
    chunks = [e for e in rec.events if isinstance(e, Chunk)]
    first = next((e.t_ms for e in rec.events if e.t_ms is not None), None)
    end = rec.end
    if first is None and end is not None:
        first = end.t_ms
    first_output, n_calls, n_incomplete, rate = output_facts(rec.events, end)
    cols = RecordingColumns(
        id=rec.id,
        t_ms=np.array([c.t_ms for c in chunks], dtype=float),
        channel_code=np.array([CHANNEL_CODES[c.channel] for c in chunks], dtype=np.int8),
        n_chars=np.array([len(c.text) for c in chunks], dtype=np.int64),
        n_tokens=np.array([c.n_tokens for c in chunks], dtype=float),
        first_event_ms=math.nan if first is None else first,
        first_output_ms=first_output,
        n_tool_calls=n_calls,
        n_incomplete_tool_calls=n_incomplete,
        server_decode_tokens_per_s=rate,
        end_ms=math.nan if end is None or end.t_ms is None else end.t_ms,
        finish_reason=None if end is None else end.finish_reason,
        error=error_type(rec.errors[0].error) if rec.errors else None,
        truncated=end is None,
        synthetic=has_synthetic_gaps(rec.header),
    )
    cols.billing = _billing(rec.header, end, cols)
    return cols


def read_columns(
    path: str | Path, allow_truncated: bool = False, with_billing: bool = False
) -> RecordingColumns:
    """Read and validate one replay file into columns; raise ReplayFormatError if bad.
    `with_billing`: also gather what its price needs (`RecordingColumns.billing`)."""
    return _columns_of_text(read_text(path), path, allow_truncated, with_billing)


def _columns_of_text(
    text: str, path: str | Path, allow_truncated: bool, with_billing: bool
) -> RecordingColumns:
    header, parsed = parse_events(text, path, allow_truncated=allow_truncated)
    if isinstance(parsed, Recording):
        cols = columns_of_recording(parsed)
        if not with_billing:
            cols.billing = None
        return cols
    billed = header if with_billing else None
    return columns_of_valid(header.id, parsed, has_synthetic_gaps(header), billed)


def _with_billing(file: CanonicalFile, cols: RecordingColumns) -> RecordingColumns:
    """A canonical file's columns with what its price needs (`RecordingColumns.billing`)."""
    cols.billing = _billing(file.header, file.end, cols)
    return cols


def arrays_from_columns(cols: Sequence[RecordingColumns]) -> StreamArrays:
    """The flat output-chunk arrays of many recordings (see `StreamArrays`), vectorised."""
    n_recs = len(cols)
    sizes = np.fromiter((len(c.t_ms) for c in cols), dtype=np.int64, count=n_recs)
    rec_of = np.repeat(np.arange(n_recs), sizes)

    def flat(name: str, dtype: type) -> np.ndarray:
        if not n_recs:
            return np.zeros(0, dtype=dtype)
        return np.concatenate([getattr(c, name) for c in cols]).astype(dtype, copy=False)

    t_ms, codes = flat("t_ms", float), flat("channel_code", np.int8)
    n_chars, n_tokens = flat("n_chars", np.int64), flat("n_tokens", float)
    output_codes = [CHANNEL_CODES[c] for c in OUTPUT_CHANNELS]
    output = (n_chars > 0) & np.isin(codes, output_codes)
    out_rec = rec_of[output]
    starts = np.zeros(n_recs + 1, dtype=np.int64)
    np.cumsum(np.bincount(out_rec, minlength=n_recs), out=starts[1:])
    reasoning = output & (codes == CHANNEL_CODES["reasoning"])
    return StreamArrays(
        ids=[c.id for c in cols],
        starts=starts,
        t_ms=t_ms[output],
        n_tokens=n_tokens[output],
        n_chars=n_chars[output],
        n_chunks=sizes,
        n_reasoning_chunks=np.bincount(rec_of[reasoning], minlength=n_recs),
        n_tool_chunks=np.bincount(rec_of[codes == CHANNEL_CODES["tool"]], minlength=n_recs),
        first_event_ms=np.array([c.first_event_ms for c in cols], dtype=float),
        first_output_ms=np.array([c.first_output_ms for c in cols], dtype=float),
        n_tool_calls=np.array([c.n_tool_calls for c in cols], dtype=np.int64),
        n_incomplete_tool_calls=np.array([c.n_incomplete_tool_calls for c in cols], dtype=np.int64),
        server_decode_tokens_per_s=np.array(
            [c.server_decode_tokens_per_s for c in cols], dtype=float
        ),
        end_ms=np.array([c.end_ms for c in cols], dtype=float),
        finish_reason=[c.finish_reason for c in cols],
        error=[c.error for c in cols],
        truncated=np.array([c.truncated for c in cols], dtype=bool),
        synthetic=np.array([c.synthetic for c in cols], dtype=bool),
    )


@dataclass
class LoadedArrays:
    """The metric arrays of every good file, the files they came from, and the bad files."""

    arrays: StreamArrays
    paths: list[Path] = field(default_factory=list)
    errors: list[ReplayFormatError] = field(default_factory=list)
    billing: list[RecordingFacts | None] = field(default_factory=list)
    """What each good file's price needs, in the order of `paths`."""


CANONICAL_GROUP = 256
"""Canonical files whose times are checked together (`canonical_batch`); their texts are
kept until then, for the precise path to name a problem. `inspect` reads its files in parts
of this size (`INSPECT_PART`): a part of canonical files in order is one group, made metric
arrays at once (`arrays_of_canonical`)."""

CANONICAL_GROUP_BYTES = 64 * 1024 * 1024
"""A group is checked sooner once the texts it keeps add up to this (files of many MB each:
a few hundred of them must not be held in memory at once)."""


def _load_batch(
    paths: Sequence[Path], allow_truncated: bool, with_billing: bool = False
) -> LoadedArrays:
    found: list[RecordingColumns | ReplayFormatError | None] = []  # None: in `group`
    group: list[tuple[int, Path, bytes | None, CanonicalFile]] = []
    kept_bytes = 0  # the texts `group` holds

    def read(path: Path, data: bytes | None = None) -> RecordingColumns | ReplayFormatError:
        try:
            text = read_text(path) if data is None else text_of(data, path)
            return _columns_of_text(text, path, allow_truncated, with_billing)
        except ReplayFormatError as exc:
            return exc
        except Exception as exc:  # one bad file never stops the others
            problem = f"could not be read ({type(exc).__name__}: {str(exc)[:120]})"
            return ReplayFormatError(path, None, None, problem)

    def check_group() -> None:
        nonlocal kept_bytes
        checked = columns_of_canonical([file for _, _, _, file in group])
        for (slot, path, data, file), cols in zip(group, checked, strict=True):
            # Times that go back: the precise path names the line.
            if cols is None:
                found[slot] = read(path, data)
            else:
                found[slot] = _with_billing(file, cols) if with_billing else cols
        group.clear()
        kept_bytes = 0

    with paused_gc():
        for path in paths:
            data: bytes | None = None
            try:
                data = read_bytes(path)
                parts = canonical_file(data, path)
            except Exception:  # the precise path says what is wrong
                parts = None
            if parts is None or not parts[1]:
                found.append(read(path, data))
                continue
            header, chunks, end = parts
            file = canonical_columns(header, chunks, end, has_synthetic_gaps(header))
            del chunks, parts  # freed now, while in the cache
            if len(group) >= CANONICAL_GROUP or kept_bytes >= CANONICAL_GROUP_BYTES:
                check_group()
            group.append((len(found), path, data, file))
            kept_bytes += len(data or b"")
            found.append(None)  # its place, filled by check_group
        if len(group) == len(paths) and not with_billing:  # inspect's common case
            arrays = arrays_of_canonical([file for _, _, _, file in group])
            if arrays is not None:
                return LoadedArrays(arrays, list(paths), [], [None] * len(paths))
        check_group()
        cols = [c for c in found if isinstance(c, RecordingColumns)]
        good = [p for p, c in zip(paths, found, strict=True) if isinstance(c, RecordingColumns)]
        errors = [c for c in found if isinstance(c, ReplayFormatError)]
        billing = [c.billing for c in cols]
        return LoadedArrays(arrays_from_columns(cols), good, errors, billing)


def default_jobs(n_files: int) -> int:
    """Processes to read `n_files` with: one per core when there are many files, else 1."""
    if n_files < MIN_FILES_FOR_POOL:
        return 1
    return max(1, min(os.cpu_count() or 1, 8, n_files // (MIN_FILES_FOR_POOL // 2)))


def _find_files(paths: Sequence[str | Path]) -> list[Path]:
    files: list[Path] = []
    for path in paths:
        root = Path(path)
        if not root.exists():
            raise FileNotFoundError(f"{root}: no such file or folder")
        files.extend(iter_replay_paths(root))
    return files


class _HasPaths(Protocol):
    paths: list[Path]


P = TypeVar("P", bound=_HasPaths)


def _run_batches(
    work: Callable[[Sequence[Path], bool], P], files: list[Path], allow_truncated: bool, jobs: int
) -> list[P]:
    """`work` on contiguous batches of `files` in `jobs` processes, results in file order:
    this one and `jobs - 1` helpers (`process_batches`)."""
    # A few batches per process, so that one slow batch does not hold up the rest.
    n_batches = min(len(files), jobs * 4)
    bounds = np.linspace(0, len(files), n_batches + 1).astype(int)
    batches = [files[a:b] for a, b in itertools.pairwise(bounds.tolist())]
    done = run_batches(_Batch(work, batches, allow_truncated), len(batches), jobs)
    results = []
    for batch, (result, good) in zip(batches, done, strict=True):
        if good is not None:  # from a helper: its good files by their places in the batch
            result.paths = [batch[i] for i in good]
        results.append(result)
    return results


class _Batch(Generic[P]):
    """`work` on batch `k` of the files: in this process as it is; in a helper, with the
    good files sent back as their places in the batch (a pickled Path costs ten times a
    string to load: for 6,000 files 0.03 s of CPU), and `paths` emptied."""

    def __init__(
        self,
        work: Callable[[Sequence[Path], bool], P],
        batches: list[list[Path]],
        allow_truncated: bool,
    ) -> None:
        self.work = work
        self.batches = batches
        self.allow_truncated = allow_truncated
        self.home = os.getpid()

    def __call__(self, k: int) -> tuple[P, list[int] | None]:
        paths = self.batches[k]
        result = self.work(paths, self.allow_truncated)
        if os.getpid() == self.home:
            return result, None
        places = {id(path): i for i, path in enumerate(paths)}
        good = [places[id(path)] for path in result.paths]
        result.paths = []
        return result, good

    def __getstate__(self) -> dict[str, Any]:  # to a pool's worker: the paths as strings
        names = [list(map(os.fspath, batch)) for batch in self.batches]
        return {**self.__dict__, "batches": names}

    def __setstate__(self, state: dict[str, Any]) -> None:
        state["batches"] = [list(map(Path, names)) for names in state["batches"]]
        self.__dict__.update(state)


def load_arrays(
    paths: Sequence[str | Path], allow_truncated: bool = False, jobs: int | None = None
) -> LoadedArrays:
    """Read every replay file at `paths` (files or folders) into metric arrays.

    Bad files are collected in `errors` (file, line, field), not raised; the good ones keep
    the order of `iter_replay_paths`. `jobs` processes read the files (default: one per core
    when there are at least `MIN_FILES_FOR_POOL` files).
    """
    files = _find_files(paths)
    jobs = default_jobs(len(files)) if jobs is None else max(1, jobs)
    if jobs == 1:
        return _load_batch(files, allow_truncated)
    parts = _run_batches(_load_batch, files, allow_truncated, jobs)
    return LoadedArrays(
        arrays=StreamArrays.concat([p.arrays for p in parts]),
        paths=[p for part in parts for p in part.paths],
        errors=[e for part in parts for e in part.errors],
        billing=[b for part in parts for b in part.billing],
    )


@dataclass
class Inspection:
    """What `uxlab inspect` shows: the metrics of every good file, and the bad files."""

    table: dict[str, Any]
    """`describe_columns` of the good files, in the order of `paths`."""
    gaps_ms: np.ndarray
    """Every ITL gap of every good file, in order (for the pooled summary)."""
    paths: list[Path] = field(default_factory=list)
    errors: list[ReplayFormatError] = field(default_factory=list)
    include_synthetic: bool = False
    """Whether synthetic gaps were pooled (see `stream_arrays.has_synthetic_gaps`)."""
    billing: list[RecordingFacts | None] = field(default_factory=list)
    """What each good file's price needs, in the order of `paths`."""

    def summary(self) -> dict[str, Any]:
        """The pooled summary (`metrics.summarize`)."""
        return pooled_summary(self.table, self.gaps_ms, self.include_synthetic)


INSPECT_PART = CANONICAL_GROUP
"""Files whose metrics are computed together: the arrays of a few hundred files stay in the
processor's cache and in memory already mapped (all of them at once cost page faults)."""


def _inspect_batch(
    paths: Sequence[Path],
    allow_truncated: bool,
    include_synthetic: bool = False,
    with_billing: bool = False,
) -> Inspection:
    parts = []
    for start in range(0, max(len(paths), 1), INSPECT_PART):
        loaded = _load_batch(paths[start : start + INSPECT_PART], allow_truncated, with_billing)
        table = describe_columns(loaded.arrays, include_synthetic)
        gaps_ms = loaded.arrays.measured_gaps(include_synthetic)[0]
        parts.append(
            Inspection(
                table, gaps_ms, loaded.paths, loaded.errors, include_synthetic, loaded.billing
            )
        )
    return parts[0] if len(parts) == 1 else _joined(parts, include_synthetic)


def _joined(parts: Sequence[Inspection], include_synthetic: bool) -> Inspection:
    """The inspections of groups of files, one after the other."""
    return Inspection(
        table=_concat_tables([p.table for p in parts]),
        gaps_ms=np.concatenate([p.gaps_ms for p in parts]),
        paths=[p for part in parts for p in part.paths],
        errors=[e for part in parts for e in part.errors],
        include_synthetic=include_synthetic,
        billing=[b for part in parts for b in part.billing],
    )


def _concat_tables(tables: Sequence[dict[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for name, first in tables[0].items():
        parts = [t[name] for t in tables]
        if isinstance(first, np.ndarray):
            out[name] = np.concatenate(parts)
        else:
            out[name] = [v for part in parts for v in part]
    return out


def inspect_paths(
    paths: Sequence[str | Path],
    allow_truncated: bool = False,
    jobs: int | None = None,
    include_synthetic: bool = False,
    with_billing: bool = False,
) -> Inspection:
    """Read every replay file at `paths` and compute its metrics, on `jobs` processes.

    As `load_arrays`, but each process also computes the per-recording metrics of its files,
    so only the table and the gaps come back (not every chunk): the metric stage runs in
    parallel too. The result is the same as with one process. `with_billing` also gathers
    what each recording's price needs (`Inspection.billing`, for `inspect --prices`; off by
    default, since it costs tens of microseconds a file).
    """
    files = _find_files(paths)
    jobs = default_jobs(len(files)) if jobs is None else max(1, jobs)
    if jobs == 1:
        return _inspect_batch(files, allow_truncated, include_synthetic, with_billing)
    work = functools.partial(
        _inspect_batch, include_synthetic=include_synthetic, with_billing=with_billing
    )
    parts = _run_batches(work, files, allow_truncated, jobs)
    return _joined(parts, include_synthetic)
