"""What every importer shares: its result type, its error type, and small helpers.

An importer is a function `(path, options) -> ImportResult`. It turns one foreign file (or
a folder of captures) into Recordings whose `source.origin` points back at the file and
the request inside it, and reports every request it skipped with the reason.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Generic, TypeVar

from uxlab.errors import UxlabError
from uxlab.reading import (
    MAX_JSON_FILE_BYTES,
    InputProblem,
    LocatedError,
    check_range,
    loads_json,
    read_bounded_text,
)
from uxlab.streams.recording import Chunk, Header, Recording
from uxlab.streams.replay_file import (
    ReplayFormatError,
    dumps_recording,
    parse_replay,
    safe_filename,
)
from uxlab.streams.sse import SseEvent

T = TypeVar("T")


class ImportFormatError(LocatedError):
    """A source file that does not follow its documented format; says where and what.

    `where` is the position in the source's own terms (a line number, `event 3`)."""

    def __init__(self, path: str | Path, where: str | None, field: str | None, problem: str):
        super().__init__(path, where, field, problem)
        self.where = where


class StreamEventError(UxlabError, ValueError):
    """An event of a stream that cannot be mapped; `index` is its position in the list."""

    def __init__(self, index: int, field: str | None, problem: str):
        self.index = index
        self.field = field
        self.problem = problem
        what = f"{field}: {problem}" if field else problem
        super().__init__(f"event {index}: {what}")


@dataclass
class ImportOptions:
    """Choices the user makes on import."""

    text: str | None = None
    """Text to lay over timing-only sources (None: the bundled neutral text)."""
    text_name: str | None = None
    """Where `text` came from (a file name), recorded in the header."""
    limit: int | None = None
    """Stop after this many recordings."""
    select: Sequence[int] | None = None
    """Only these request indices (as counted in `source.origin`)."""
    id_prefix: str | None = None
    """Start of each recording id (default: the source file's stem)."""
    tolerant: bool = False
    """SSE captures: keep an event that cannot be mapped as a `malformed_event` meta (as
    the live recorder does) instead of stopping with an error naming its line."""


@dataclass
class Skipped:
    """A request in the source that was not imported, and why."""

    origin: str
    reason: str


@dataclass
class ImportResult:
    """The recordings an importer produced, what it skipped, and any warnings."""

    recordings: list[Recording] = field(default_factory=list)
    skipped: list[Skipped] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    def add(self, origin: str, rec: Recording | str) -> None:
        """Keep `rec`, or note why the request at `origin` was skipped (`rec` the reason)."""
        if isinstance(rec, str):
            self.skipped.append(Skipped(origin, rec))
        else:
            self.recordings.append(rec)

    def skipped_by_reason(self) -> dict[str, int]:
        """Skip counts per reason, most frequent first."""
        counts: dict[str, int] = {}
        for s in self.skipped:
            counts[s.reason] = counts.get(s.reason, 0) + 1
        return dict(sorted(counts.items(), key=lambda kv: -kv[1]))


def event_json_object(index: int, data: str) -> dict[str, Any]:
    """The JSON object in an SSE event's data, else a StreamEventError for event `index`."""
    try:
        obj = loads_json(data)
    except InputProblem as exc:
        field = f"data.{exc.field}" if exc.field else "data"
        raise StreamEventError(index, field, f"{exc.problem}: {data[:60]!r}") from None
    if not isinstance(obj, dict):
        raise StreamEventError(index, "data", f"expected a JSON object, got {type(obj).__name__}")
    return obj


def wanted(index: int, options: ImportOptions) -> bool:
    """Whether request `index` should be imported under `--select` (limit is separate)."""
    return options.select is None or index in options.select


def limit_reached(options: ImportOptions, n_done: int) -> bool:
    return options.limit is not None and n_done >= options.limit


def selected(
    items: Iterable[T], options: ImportOptions, result: ImportResult
) -> Iterator[tuple[int, T]]:
    """`(request index, item)` for the items `--select` wants, until `--limit` is reached.

    Indices count every item from 0 (selected or not), as `source.origin` does. The limit
    is checked against `result.recordings` just before each wanted item is handed out.
    """
    for index, item in enumerate(items):
        if not wanted(index, options):
            continue
        if limit_reached(options, len(result.recordings)):
            return
        yield index, item


def map_located(
    mapping: Callable[..., Recording],
    events: Sequence[SseEvent],
    header: Header,
    path: Path,
    where: Callable[[int], str],
    *,
    strict: bool = True,
    hint: str = "",
) -> Recording:
    """`mapping(events, header, strict=strict)`; an event it cannot read is an
    ImportFormatError at `where(the event's index)`, its problem followed by `hint`."""
    try:
        return mapping(events, header, strict=strict)
    except StreamEventError as exc:
        raise ImportFormatError(path, where(exc.index), exc.field, exc.problem + hint) from None


def event_mapping(api: str) -> Callable[..., Recording]:
    """`STREAM_MAPPINGS[api]` (looked up when called: that table imports every importer)."""
    from uxlab.streams.importers import STREAM_MAPPINGS

    return STREAM_MAPPINGS[api]


class TimedItems:
    """A stream log's items, read one by one: all `{"t_ms": MS, "data": ...}` with times
    that never go back, or all bare (untimed). `what` names an item in the error for a
    log that mixes both (e.g. "line")."""

    def __init__(self, path: Path, what: str) -> None:
        self.path, self.what = path, what
        self.timed: bool | None = None
        """Whether the items carry times (None until the first item)."""
        self._last = -1.0

    def read(self, where: str, item: dict[str, Any]) -> tuple[float | None, Any]:
        """(the item's time or None, its data)."""
        wrapped = "t_ms" in item and "data" in item
        if self.timed is None:
            self.timed = wrapped
        elif wrapped != self.timed:
            raise ImportFormatError(self.path, where, "t_ms", f"time every {self.what} or none")
        if not wrapped:
            return None, item
        t_ms = item["t_ms"]
        if isinstance(t_ms, bool) or not isinstance(t_ms, int | float) or not t_ms >= self._last:
            raise ImportFormatError(
                self.path, where, "t_ms", f"expected ms not before the previous, got {t_ms!r:.40}"
            )
        self._last = float(t_ms)
        return t_ms, item["data"]


class Requests(Generic[T]):
    """`selected` over the items that are requests (`is_request`), counting the others.

    A file may hold items that are not requests (spans of other kinds, entries that are
    not streams): they take no request index, and `n_others` counts those read (up to
    where `--limit` stopped the reading), for the importer's warning.
    """

    def __init__(
        self,
        items: Iterable[T],
        is_request: Callable[[T], bool],
        options: ImportOptions,
        result: ImportResult,
    ) -> None:
        self.items, self.is_request = items, is_request
        self.options, self.result = options, result
        self.n_others = 0

    def __iter__(self) -> Iterator[tuple[int, T]]:
        return selected(self._requests(), self.options, self.result)

    def _requests(self) -> Iterator[T]:
        for item in self.items:
            if self.is_request(item):
                yield item
            else:
                self.n_others += 1


def id_base(path: Path, options: ImportOptions) -> str:
    """The first part of the ids of recordings from `path`: the prefix, or the file stem."""
    return safe_filename(options.id_prefix or path.stem)


def origin_of(path: Path, **where: Any) -> str:
    """`name#key=value&...`: the source file's name and the request's place in it."""
    keys = "&".join(f"{k}={v}" for k, v in where.items())
    return f"{path.name}#{keys}" if keys else path.name


def import_header(
    rid: str,
    *,
    importer: str,
    origin: str,
    api: str | None = None,
    vendor: str | None = None,
    model: str | None = None,
    request: dict[str, Any] | None = None,
    text_source: str = "recorded",
    **source_extra: Any,
) -> Header:
    """A header for an imported recording (`source.kind` = import)."""
    source: dict[str, Any] = {
        "kind": "import",
        "api": api,
        "vendor": vendor,
        "model": model,
        "importer": importer,
        "origin": origin,
    }
    source.update({k: v for k, v in source_extra.items() if v is not None})
    return Header(id=rid, source=source, request=request or {}, text_source=text_source)


def _read_utf8(path: Path) -> str:
    """The file's text (UTF-8, within the size limit), else an ImportFormatError."""
    try:
        return read_bounded_text(path, MAX_JSON_FILE_BYTES, "source file")
    except InputProblem as exc:
        raise ImportFormatError(path, None, exc.field, exc.problem) from None


def read_text_checked(path: Path) -> str:
    """A source file's text under the reading rules (UTF-8, size), else an ImportFormatError."""
    return _read_utf8(path)


def loads_checked(text: str, path: Path, where: str | None) -> Any:
    """JSON `text` under the reading rules (`uxlab.reading`), else an ImportFormatError."""
    try:
        return loads_json(text)
    except InputProblem as exc:
        raise ImportFormatError(path, where, exc.field, exc.problem) from None


def read_json(path: Path) -> Any:
    """A whole JSON file, with errors naming the file, line and column (or the field)."""
    return loads_checked(_read_utf8(path), path, None)


def iter_jsonl(path: Path) -> Iterator[tuple[int, dict[str, Any]]]:
    """`(line number, object)` for each non-blank line of a JSON Lines file."""
    text = _read_utf8(path)
    for lineno, raw in enumerate(text.splitlines(), start=1):
        if not raw.strip():
            continue
        obj = loads_checked(raw, path, f"{lineno}")
        if not isinstance(obj, dict):
            raise ImportFormatError(
                path,
                f"{lineno}",
                None,
                f"each line must be a JSON object, got {type(obj).__name__}",
            )
        yield lineno, obj


def chunks_from_gaps(
    ttft_ms: float,
    gaps_ms: Sequence[float],
    texts: Sequence[str],
    channels: Sequence[str] | None = None,
    n_tokens: int | None = None,
) -> list[Chunk]:
    """Chunks at `ttft_ms`, then one per gap (cumulative), carrying `texts` in order."""
    if len(texts) != len(gaps_ms) + 1:
        raise ValueError(f"{len(texts)} texts for {len(gaps_ms) + 1} chunks")
    chunks: list[Chunk] = []
    t_ms = float(ttft_ms)
    for i, text in enumerate(texts):
        if i > 0:
            t_ms += float(gaps_ms[i - 1])
        channel = channels[i] if channels is not None else "content"
        chunks.append(Chunk(t_ms=t_ms, text=text, channel=channel, n_tokens=n_tokens))
    return chunks


def check_result(result: ImportResult, path: str | Path) -> ImportResult:
    """Every recording of `result` read back through the replay reader (the same rules as
    reading a replay file: finite, plausible times and counts, bounded nesting), so an
    import fails as a whole, naming the request, before any file is written."""
    for rec in result.recordings:
        origin = str(rec.header.source.get("origin") or rec.id)
        where = origin.partition("#")[2] or None
        events = [*rec.events, *([rec.end] if rec.end is not None else [])]
        for i, event in enumerate(events):
            if event.t_ms is not None:
                try:
                    check_range(event.t_ms, "t_ms", "t_ms")
                except InputProblem as exc:
                    raise ImportFormatError(
                        path, f"{where or rec.id} (event {i})", exc.field, exc.problem
                    ) from None
        try:
            text = dumps_recording(rec)
        except (ValueError, TypeError, RecursionError) as exc:
            problem = f"cannot be stored ({str(exc)[:80]})"
            raise ImportFormatError(path, where, None, problem) from None
        try:
            parse_replay(text, rec.id, allow_truncated=True)
        except ReplayFormatError as exc:
            at = "" if exc.line is None or exc.line < 2 else f" (event {exc.line - 2})"
            raise ImportFormatError(path, (where or rec.id) + at, exc.field, exc.problem) from None
    return result
