"""Reading, validating and writing replay files (`*.jsonl`, format `uxlab.replay/1`).

The format is DESIGN.md contract 1. Writing is canonical: the same Recording always gives
the same bytes, so write -> read -> write is stable byte for byte. Every validation error
names the file, the line number and the field.
"""

from __future__ import annotations

import gc
import json
import math
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from uxlab.errors import UxlabError
from uxlab.streams.recording import (
    CHANNELS,
    FORMAT,
    SOURCE_KINDS,
    TEXT_SOURCES,
    Chunk,
    End,
    ErrorEvent,
    Event,
    Header,
    Meta,
    Recording,
)


class ReplayFormatError(UxlabError, ValueError):
    """A replay file that does not follow the format; says where and what."""

    def __init__(self, path: str | Path, line: int | None, field: str | None, problem: str):
        self.path = str(path)
        self.line = line
        self.field = field
        self.problem = problem
        where = self.path if line is None else f"{self.path}:{line}"
        what = f"{field}: {problem}" if field else problem
        super().__init__(f"{where}: {what}")


_HEADER_KEYS = ("type", "format", "id", "source", "request", "clock", "text_source", "retime")
_CHUNK_KEYS = ("type", "t_ms", "channel", "text", "n_tokens")
_ERROR_KEYS = ("type", "t_ms", "error")
_END_KEYS = ("type", "t_ms", "finish_reason", "usage")


# --- writing ----------------------------------------------------------------------------


def _clean_time(t: float | None) -> float | None:
    if t is None:
        return None
    # Round to a microsecond: enough for any clock we have, and keeps files short.
    return round(float(t), 3)


def header_to_dict(h: Header) -> dict[str, Any]:
    d: dict[str, Any] = {
        "type": "header",
        "format": h.format,
        "id": h.id,
        "source": h.source,
        "request": h.request,
        "clock": h.clock,
        "text_source": h.text_source,
        "retime": h.retime,
    }
    d.update(h.extra)
    return d


def event_to_dict(e: Event | End) -> dict[str, Any]:
    if isinstance(e, Chunk):
        d: dict[str, Any] = {
            "type": "chunk",
            "t_ms": _clean_time(e.t_ms),
            "channel": e.channel,
            "text": e.text,
            "n_tokens": e.n_tokens,
        }
        d.update(e.extra)
        return d
    if isinstance(e, Meta):
        d = {"type": "meta", "t_ms": _clean_time(e.t_ms)}
        d.update(e.data)
        return d
    if isinstance(e, ErrorEvent):
        d = {"type": "error", "t_ms": _clean_time(e.t_ms), "error": e.error}
        d.update(e.extra)
        return d
    d = {
        "type": "end",
        "t_ms": _clean_time(e.t_ms),
        "finish_reason": e.finish_reason,
        "usage": e.usage,
    }
    d.update(e.extra)
    return d


def _dumps(obj: dict[str, Any]) -> str:
    return json.dumps(obj, ensure_ascii=False, allow_nan=False)


def dumps_recording(rec: Recording) -> str:
    """The canonical text of a replay file."""
    lines = [_dumps(header_to_dict(rec.header))]
    lines.extend(_dumps(event_to_dict(e)) for e in rec.events)
    if rec.end is not None:
        lines.append(_dumps(event_to_dict(rec.end)))
    return "\n".join(lines) + "\n"


def write_replay(rec: Recording, path: str | Path) -> Path:
    """Write `rec` to `path` (a file, or a folder where `<id>.jsonl` is created)."""
    path = Path(path)
    if path.is_dir():
        path = path / f"{safe_filename(rec.id)}.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(dumps_recording(rec), encoding="utf-8")
    tmp.replace(path)
    return path


def safe_filename(name: str) -> str:
    """A file-system-safe version of a recording id."""
    out = "".join(ch if ch.isalnum() or ch in "-_.+" else "_" for ch in name)
    return out.strip(".") or "recording"


# --- reading ----------------------------------------------------------------------------


class _Reader:
    def __init__(self, path: str | Path):
        self.path = path

    def err(self, line: int, field: str | None, problem: str) -> ReplayFormatError:
        return ReplayFormatError(self.path, line, field, problem)

    def time(self, obj: dict[str, Any], line: int, required: bool = True) -> float | None:
        if "t_ms" not in obj:
            if required:
                raise self.err(line, "t_ms", "missing (use null when the time is unknown)")
            return None
        t = obj["t_ms"]
        if t is None:
            return None
        if isinstance(t, bool) or not isinstance(t, int | float):
            raise self.err(line, "t_ms", f"must be a number of milliseconds, got {t!r}")
        if not math.isfinite(t):
            raise self.err(line, "t_ms", f"must be finite, got {t!r}")
        if t < 0:
            raise self.err(line, "t_ms", f"{t} is negative (times count from the request)")
        return float(t)

    def typed(
        self,
        obj: dict[str, Any],
        key: str,
        types: tuple[type, ...],
        line: int,
        what: str,
        optional: bool = False,
    ) -> Any:
        if key not in obj:
            if optional:
                return None
            raise self.err(line, key, f"missing (expected {what})")
        v = obj[key]
        if v is None and optional:
            return None
        if isinstance(v, bool) and bool not in types:
            raise self.err(line, key, f"expected {what}, got {v!r}")
        if not isinstance(v, types):
            raise self.err(line, key, f"expected {what}, got {type(v).__name__} {v!r}")
        return v

    def header(self, obj: dict[str, Any], line: int) -> Header:
        if obj.get("type") != "header":
            raise self.err(
                line, "type", f"the first line must be the header, got type {obj.get('type')!r}"
            )
        if "format" not in obj:
            raise self.err(line, "format", f"missing (expected {FORMAT!r})")
        fmt = obj.get("format")
        if fmt != FORMAT:
            raise self.err(
                line, "format", f"unknown format version {fmt!r} (this uxlab reads {FORMAT!r})"
            )
        rid = self.typed(obj, "id", (str,), line, "a string id")
        if not rid:
            raise self.err(line, "id", "must not be empty")
        source = self.typed(obj, "source", (dict,), line, "an object")
        kind = source.get("kind")
        if "kind" not in source:
            raise self.err(line, "source.kind", f"missing (one of {', '.join(SOURCE_KINDS)})")
        if kind not in SOURCE_KINDS:
            raise self.err(line, "source.kind", f"{kind!r} is not one of {', '.join(SOURCE_KINDS)}")
        request = self.typed(obj, "request", (dict,), line, "an object", optional=True) or {}
        clock = self.typed(obj, "clock", (dict,), line, "an object", optional=True)
        text_source = self.typed(obj, "text_source", (str,), line, "a string", optional=True)
        if text_source is None:
            text_source = "recorded"
        if text_source not in TEXT_SOURCES:
            raise self.err(
                line, "text_source", f"{text_source!r} is not one of {', '.join(TEXT_SOURCES)}"
            )
        retime = self.typed(obj, "retime", (dict,), line, "null or an object", optional=True)
        extra = {k: v for k, v in obj.items() if k not in _HEADER_KEYS}
        return Header(
            id=rid,
            source=source,
            request=request,
            clock=clock if clock is not None else {"t0": "request_sent", "unit": "ms"},
            text_source=text_source,
            retime=retime,
            format=fmt,
            extra=extra,
        )

    def event(self, obj: dict[str, Any], line: int) -> Event | End:
        kind = obj.get("type")
        if kind == "chunk":
            t = self.time(obj, line)
            text = self.typed(obj, "text", (str,), line, "a string")
            channel = obj.get("channel", "content")
            if channel not in CHANNELS:
                raise self.err(line, "channel", f"{channel!r} is not one of {', '.join(CHANNELS)}")
            n_tokens = self.typed(
                obj, "n_tokens", (int,), line, "null or a whole number", optional=True
            )
            if n_tokens is not None and n_tokens < 0:
                raise self.err(line, "n_tokens", f"{n_tokens} is negative")
            extra = {k: v for k, v in obj.items() if k not in _CHUNK_KEYS}
            return Chunk(t_ms=t, text=text, channel=channel, n_tokens=n_tokens, extra=extra)
        if kind == "meta":
            t = self.time(obj, line, required=False)
            data = {k: v for k, v in obj.items() if k not in ("type", "t_ms")}
            return Meta(t_ms=t, data=data)
        if kind == "error":
            t = self.time(obj, line)
            error = self.typed(obj, "error", (dict,), line, "an object")
            extra = {k: v for k, v in obj.items() if k not in _ERROR_KEYS}
            return ErrorEvent(t_ms=t, error=error, extra=extra)
        if kind == "end":
            t = self.time(obj, line)
            fr = self.typed(obj, "finish_reason", (str,), line, "null or a string", optional=True)
            usage = self.typed(obj, "usage", (dict,), line, "null or an object", optional=True)
            extra = {k: v for k, v in obj.items() if k not in _END_KEYS}
            return End(t_ms=t, finish_reason=fr, usage=usage, extra=extra)
        if kind == "header":
            raise self.err(line, "type", "a second header; a replay file holds one stream")
        raise self.err(line, "type", f"unknown event type {kind!r} (chunk, meta, error, end)")


class _NonStandardNumber(ValueError):
    """NaN / Infinity in a line: Python's json accepts them, JSON (and our writer) does not."""


def _reject_constant(name: str) -> Any:
    raise _NonStandardNumber(name)


# One decoder for every line (json.loads with options would build a new one per call).
_DECODER = json.JSONDecoder(parse_constant=_reject_constant)
_CHUNK_KEY_SET = frozenset(_CHUNK_KEYS)
_CHANNEL_SET = frozenset(CHANNELS)


def _decode_line(raw: str, lineno: int, reader: _Reader) -> Any:
    line = raw.strip()
    try:
        obj, stop = _DECODER.raw_decode(line)
        if stop != len(line):
            raise json.JSONDecodeError("Extra data", line, stop)
    except json.JSONDecodeError as exc:
        column = exc.colno + len(raw) - len(raw.lstrip())
        raise reader.err(lineno, None, f"not JSON ({exc.msg} at column {column})") from None
    except _NonStandardNumber as exc:
        raise reader.err(
            lineno, None, f"not JSON ({exc.args[0]} is not a JSON number; use null)"
        ) from None
    return obj


def _fast_chunk(obj: dict[str, Any], last_t: float) -> Chunk | None:
    """A canonical chunk line that is certainly valid, or None (then the full checks run).

    Replay files are mostly chunks; this keeps reading 10,000 x 500 chunks affordable.
    """
    if obj.keys() != _CHUNK_KEY_SET or obj["type"] != "chunk":
        return None
    t, text, channel, n = obj["t_ms"], obj["text"], obj["channel"], obj["n_tokens"]
    if type(t) is not float or not (last_t <= t < math.inf) or t < 0:
        return None
    if type(text) is not str or type(channel) is not str or channel not in _CHANNEL_SET:
        return None
    if n is not None and (type(n) is not int or n < 0):
        return None
    return Chunk(t_ms=t, text=text, channel=channel, n_tokens=n)


def parse_replay(
    text: str, path: str | Path = "<string>", allow_truncated: bool = False
) -> Recording:
    """Parse the text of a replay file; raise ReplayFormatError naming line and field."""
    reader = _Reader(path)
    header: Header | None = None
    events: list[Event] = []
    end: End | None = None
    last_t = -math.inf
    last_line = 0
    # Split on "\n" only: str.splitlines() also breaks at U+2028, U+0085 and other characters
    # that JSON writes unescaped inside strings (ensure_ascii=False), which would cut a line.
    for lineno, raw in enumerate(text.split("\n"), start=1):
        if not raw or raw.isspace():
            continue
        last_line = lineno
        obj = _decode_line(raw, lineno, reader)
        if type(obj) is not dict:
            raise reader.err(
                lineno, None, f"each line must be a JSON object, got {type(obj).__name__}"
            )
        if header is None:
            header = reader.header(obj, lineno)
            continue
        if end is not None:
            raise reader.err(lineno, "type", "event after the end event")
        chunk = _fast_chunk(obj, last_t)
        if chunk is not None:
            last_t = chunk.t_ms  # type: ignore[assignment]
            events.append(chunk)
            continue
        ev = reader.event(obj, lineno)
        t = ev.t_ms
        if t is not None:
            if t < last_t:
                raise reader.err(
                    lineno,
                    "t_ms",
                    f"{t} is earlier than the previous event ({last_t}); times never decrease",
                )
            last_t = t
        if isinstance(ev, End):
            end = ev
        else:
            events.append(ev)
    if header is None:
        raise ReplayFormatError(path, 1, None, "missing header (the file is empty)")
    if end is None and not allow_truncated:
        raise ReplayFormatError(
            path,
            last_line + 1,
            "end",
            "missing end event; the stream is truncated "
            "(load with allow_truncated=True / --truncated to accept it)",
        )
    return Recording(header=header, events=events, end=end)


@contextmanager
def paused_gc() -> Iterator[None]:
    """Pause Python's cyclic garbage collector while many recordings are read.

    Parsing creates millions of small objects and no reference cycles; the collector would
    scan them again and again (it doubles the time to read 10,000 x 500 chunks).
    """
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def read_replay(path: str | Path, allow_truncated: bool = False) -> Recording:
    """Read one replay file."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ReplayFormatError(path, None, None, f"not UTF-8 ({exc.reason})") from None
    return parse_replay(text, path, allow_truncated=allow_truncated)


def iter_replay_paths(path: str | Path) -> Iterable[Path]:
    """The replay files at `path`: the file itself, or every `*.jsonl` below a folder, sorted."""
    path = Path(path)
    if path.is_dir():
        yield from sorted(p for p in path.rglob("*.jsonl") if p.is_file())
    else:
        yield path
