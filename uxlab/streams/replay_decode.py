"""Decoding and validating a replay file's text (format `uxlab.replay/1`, DESIGN.md
contract 1): the three reading paths `uxlab.streams.replay_file` describes, and the
error that names the file, line and field."""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterable, Sequence
from contextlib import suppress
from dataclasses import dataclass
from functools import partial
from operator import itemgetter
from pathlib import Path
from typing import Any, cast

import numpy as np
import orjson  # twice as fast as the stdlib decoder on whole files

from uxlab.reading import (
    MAX_TIME_MS,
    MAX_TOKENS,
    LocatedError,
    convert,
    tree_problem,
)
from uxlab.streams.recording import (
    CHANNELS,
    Chunk,
    End,
    ErrorEvent,
    Event,
    Header,
    Meta,
    Recording,
)
from uxlab.streams.replay_models import (
    HEADER_WORDING,
    CanonicalChunk,
    HeaderLine,
    ReplayHeader,
    decode_chunks,
)


class ReplayFormatError(LocatedError):
    """A replay file that does not follow the format; says where (file, line, field) and what."""

    line: int | None


_HEADER_KEYS = ("type", "format", "id", "source", "request", "clock", "text_source", "retime")
_CHUNK_KEYS = ("type", "t_ms", "channel", "text", "n_tokens")
_ERROR_KEYS = ("type", "t_ms", "error")
_END_KEYS = ("type", "t_ms", "finish_reason", "usage")


class ReplayReader:
    """Errors and times read from one replay file, each naming its line and field."""

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
        if t > MAX_TIME_MS:
            raise self.err(
                line, "t_ms", f"{t:g} is not plausible (at most {MAX_TIME_MS:g} ms, one day)"
            )
        return float(t)

    def tree(
        self, obj: dict[str, Any], line: int, skip: tuple[str, ...] = (), checked: bool = False
    ) -> None:
        """Nesting, finite numbers and integer size of every value of `obj` but `skip`
        (`checked`: the caller has walked it already, `_has_huge_float`)."""
        if checked or tree_problem(obj) is None:  # the common case: nothing to name
            return
        for key, value in obj.items():
            if key in skip or type(value) not in (dict, list, float, int):
                continue
            found = tree_problem({key: value})
            if found is not None:
                raise self.err(line, found[0], found[1])

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

    def header(self, obj: dict[str, Any], line: int, tree_checked: bool = False) -> Header:
        h: HeaderLine = convert(obj, HeaderLine, HEADER_WORDING, error=partial(self.err, line))
        if not isinstance(h, ReplayHeader):  # "type": "\u0000", the placeholder's tag
            raise self.err(line, "type", HEADER_WORDING["type"](obj["type"]))
        self.tree(obj, line, checked=tree_checked)
        extra = {k: v for k, v in obj.items() if k not in _HEADER_KEYS}
        return Header(
            id=h.id,
            source=obj["source"],  # as written: its other keys are the source's own
            request=h.request or {},
            clock=h.clock if h.clock is not None else {"t0": "request_sent", "unit": "ms"},
            text_source=h.text_source or "recorded",
            retime=h.retime,
            format=h.format,
            extra=extra,
        )

    def event(self, obj: dict[str, Any], line: int, tree_checked: bool = False) -> Event | End:
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
            if n_tokens is not None and n_tokens > MAX_TOKENS:
                raise self.err(
                    line, "n_tokens", f"{n_tokens:g} is not plausible (at most {MAX_TOKENS:,})"
                )
            self.tree(obj, line, skip=("t_ms", "n_tokens"), checked=tree_checked)
            extra = {k: v for k, v in obj.items() if k not in _CHUNK_KEYS}
            return Chunk(t_ms=t, text=text, channel=channel, n_tokens=n_tokens, extra=extra)
        if kind == "meta":
            t = self.time(obj, line, required=False)
            self.tree(obj, line, skip=("t_ms",), checked=tree_checked)
            data = {k: v for k, v in obj.items() if k not in ("type", "t_ms")}
            return Meta(t_ms=t, data=data)
        if kind == "error":
            t = self.time(obj, line)
            error = self.typed(obj, "error", (dict,), line, "an object")
            self.tree(obj, line, skip=("t_ms",), checked=tree_checked)
            extra = {k: v for k, v in obj.items() if k not in _ERROR_KEYS}
            return ErrorEvent(t_ms=t, error=error, extra=extra)
        if kind == "end":
            t = self.time(obj, line)
            fr = self.typed(obj, "finish_reason", (str,), line, "null or a string", optional=True)
            usage = self.typed(obj, "usage", (dict,), line, "null or an object", optional=True)
            self.tree(obj, line, skip=("t_ms",), checked=tree_checked)
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
_CHANNEL_SET = frozenset(CHANNELS)
_TIME_TYPES = frozenset({float, int, type(None)})
_TOKEN_TYPES = frozenset({int, type(None)})
_GET_TYPE = itemgetter("type")
_GET_CHUNK_FIELDS = tuple(itemgetter(k) for k in ("t_ms", "channel", "text", "n_tokens"))
# Two objects on one line, `}, {` outside the newlines that join the lines (see _decode_joined).
_TWO_OBJECTS_ON_A_LINE = re.compile(r"\}[ \t\r]*,[ \t\r]*\{")
# orjson turns integers beyond 64 bits into floats where the stdlib keeps them exact.
_HUGE = float(2**63)


def _decode_line(raw: str, lineno: int, reader: ReplayReader) -> Any:
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
    except RecursionError:
        raise reader.err(lineno, None, "nested too deeply to be a replay event") from None
    except ValueError as exc:  # an integer past Python's digit limit
        raise reader.err(lineno, None, f"not a usable number ({str(exc)[:60]})") from None
    return obj


def _nonblank_lines(text: str) -> tuple[list[str], list[int]]:
    """The non-blank lines of a file and their 1-based line numbers.

    Split on "\\n" only: str.splitlines() also breaks at U+2028, U+0085 and other characters
    that JSON writes unescaped inside strings (ensure_ascii=False), which would cut a line.
    """
    kept = [(i, ln) for i, ln in enumerate(text.split("\n"), start=1) if ln and not ln.isspace()]
    return [line for _, line in kept], [i for i, _ in kept]


def _decode_joined(body: str) -> list[Any] | None:
    """Every line of `body` decoded by one C-level call, or None (then decode line by line).

    The lines are joined into one JSON array with ",\\n": a string cannot run across the
    newline (JSON forbids raw control characters in strings), so a separator comma that is not
    ours would have to sit between `}` and `{` on one line, which the regex rules out. With
    as many items as lines, each line then holds exactly one item, as line-by-line decoding
    would find, once every item is known to be an object (`_check_in_bulk`). A blank line
    makes two commas meet, so it takes the precise path too. Any doubt returns None.
    orjson decodes and gives what the stdlib would, except that it makes
    integers beyond 64 bits floats: `_check_in_bulk` sends events holding such numbers to the
    precise path.
    """
    if not body:
        return []
    if _TWO_OBJECTS_ON_A_LINE.search(body):
        return None
    joined = "[" + body.replace("\n", ",\n") + "]"
    objs: list[Any] | None = None
    # On an error the stdlib decides: it keeps lone surrogates and reads 1e999 as inf.
    with suppress(orjson.JSONDecodeError):
        objs = orjson.loads(joined)
    if objs is None:
        try:
            objs = _DECODER.decode(joined)
        except (ValueError, RecursionError):  # JSONDecodeError and _NonStandardNumber
            return None
    if len(objs) != body.count("\n") + 1:
        return None
    return objs


@dataclass
class ValidEvents:
    """The events of a replay file after validation, with the chunks held as columns.

    `chunk_at` is the position of each chunk among the events (None: every event is a chunk);
    `others` maps the positions of the meta and error events to their parsed events.
    """

    t_ms: np.ndarray
    """float64, one per chunk: the arrival time (NaN when unknown)."""
    times: list[float | None]
    """The same times as Python floats (None when unknown), for Chunk objects."""
    channels: list[str]
    texts: list[str]
    n_tokens: list[int | None]
    tokens: np.ndarray
    """float64, one per chunk: `n_tokens` (NaN when unknown)."""
    chunk_at: list[int] | None
    others: dict[int, Event]
    end: End | None
    first_event_ms: float
    """The first known time of any event before the end (NaN when none)."""

    def events(self) -> list[Event]:
        """The events as objects (what a Recording holds)."""
        chunks: list[Event] = list(map(Chunk, self.times, self.texts, self.channels, self.n_tokens))
        if self.chunk_at is None:
            return chunks
        events: list[Event | None] = [None] * (len(chunks) + len(self.others))
        for pos, chunk in zip(self.chunk_at, chunks, strict=True):
            events[pos] = chunk
        for pos, ev in self.others.items():
            events[pos] = ev
        return cast(list[Event], events)  # every position is filled: chunks and the others


def _has_huge_float(value: Any) -> bool:
    """A float of 2**63 or more inside `value` (maybe an integer orjson could not keep), or
    anything else the reading rules refuse: the precise checker then names it. One walk,
    iterative, so any depth is safe; a value without either has met the rules (the readers
    need not walk it again: `tree_checked`)."""
    return tree_problem(value, float_limit=_HUGE) is not None


def _check_in_bulk(
    objs: list[dict[str, Any]], linenos: Sequence[int], reader: ReplayReader, allow_truncated: bool
) -> ValidEvents | None:
    """Validate the event objects over whole columns; None when anything is off.

    None does not mean the file is bad: the precise line-by-line checker then runs, and it
    either raises the error (naming line and field) or accepts what this check was unsure of.
    Only canonical chunks (exactly the five keys) are checked here; the few other events go
    through the precise checker one by one.
    """
    try:
        types = list(map(_GET_TYPE, objs))
    except (KeyError, TypeError):  # an event without a type, an item that is not an object
        return None
    has_end = bool(types) and types[-1] == "end"
    if types.count("end") != has_end or (not has_end and not allow_truncated):
        return None
    n_chunks = types.count("chunk")
    n_events = len(objs) - has_end
    if n_chunks == n_events:
        chunk_at = None
        chunk_objs = objs[:n_events]
    else:
        chunk_at = [i for i, kind in enumerate(types) if kind == "chunk"]
        chunk_objs = [objs[i] for i in chunk_at]
    try:
        if chunk_objs and set(map(len, chunk_objs)) != {5}:
            return None  # extra or missing keys: the precise checker keeps or names them
        times, channels, texts, n_tokens = (list(map(get, chunk_objs)) for get in _GET_CHUNK_FIELDS)
        time_types = set(map(type, times))
        if not time_types <= _TIME_TYPES or not set(channels) <= _CHANNEL_SET:
            return None
        if set(map(type, texts)) - {str} or not set(map(type, n_tokens)) <= _TOKEN_TYPES:
            return None
        others = (
            {} if chunk_at is None else _other_events(objs, linenos, reader, chunk_at, n_events)
        )
        end = _last_end(objs, linenos, reader) if has_end else None
        t_ms = np.array(times, dtype=float)  # None -> NaN
        tokens = np.array(n_tokens, dtype=float)
    # A missing key, an unhashable channel, an integer beyond float range, an event the
    # precise checker rejects, or one this check is unsure of.
    except (KeyError, TypeError, OverflowError, ReplayFormatError, _Unsure):
        return None
    if (t_ms < 0.0).any() or (t_ms > MAX_TIME_MS).any() or (tokens < 0.0).any():
        return None
    if (tokens > MAX_TOKENS).any():
        return None
    if int in time_types:
        times = [None if t is None else float(t) for t in times]
    # Times never decrease, over every event with a known time (the end included).
    if others:
        all_t = np.full(n_events, np.nan)
        all_t[chunk_at] = t_ms
        for i, ev in others.items():
            if ev.t_ms is not None:
                all_t[i] = ev.t_ms
    else:
        all_t = t_ms
    known = all_t[~np.isnan(all_t)] if type(None) in time_types or others else all_t
    first_event_ms = float(known[0]) if len(known) else math.nan
    if not never_decrease(known, end):
        return None
    return ValidEvents(
        t_ms=t_ms,
        times=times,
        channels=channels,
        texts=texts,
        n_tokens=n_tokens,
        tokens=tokens,
        chunk_at=chunk_at,
        others=others,
        end=end,
        first_event_ms=first_event_ms,
    )


class _Unsure(Exception):
    """The bulk check cannot vouch for an event: the precise checker decides."""


def _other_events(
    objs: list[dict[str, Any]],
    linenos: Sequence[int],
    reader: ReplayReader,
    chunk_at: list[int],
    n_events: int,
) -> dict[int, Event]:
    """The first `n_events` events (the end excluded) that are not chunks, read one by one."""
    chunk_set = set(chunk_at)
    others: dict[int, Event] = {}
    for i in range(n_events):
        if i not in chunk_set:
            if _has_huge_float(objs[i]):
                raise _Unsure
            other = reader.event(objs[i], linenos[i], tree_checked=True)
            if isinstance(other, End):  # never: an end is last (counted by the caller)
                raise _Unsure
            others[i] = other
    return others


def _last_end(objs: list[dict[str, Any]], linenos: Sequence[int], reader: ReplayReader) -> End:
    """The end event (the last object, whose type is "end")."""
    if _has_huge_float(objs[-1]):
        raise _Unsure
    last = reader.event(objs[-1], linenos[-1], tree_checked=True)
    if not isinstance(last, End):  # never: its type is "end"
        raise _Unsure
    return last


def never_decrease(known: np.ndarray, end: End | None) -> bool:
    """Whether the known times, then the end's, never go back."""
    if end is not None and end.t_ms is not None:
        known = np.append(known, end.t_ms)
    return len(known) <= 1 or bool((np.diff(known) >= 0.0).all())


def canonical_parts(
    data: bytes, reader: ReplayReader, start: int = 0, stop: int | None = None
) -> tuple[list[CanonicalChunk], End] | None:
    """Canonical chunks then the end (UTF-8 lines: `data[start:stop]`), decoded and
    validated in one pass (`replay_models.decode_chunks`), all but the order of their times
    (the caller checks it: `never_decrease`); None when unsure (the other paths decide)."""
    stop = len(data) if stop is None else stop
    newline = data.rfind(b"\n", start, stop)
    chunks = decode_chunks(data[start:newline]) if newline > start else None
    if chunks is None:
        return None
    try:
        obj = orjson.loads(data[newline + 1 : stop])  # the end line: a few bytes
    except orjson.JSONDecodeError:
        return None
    if type(obj) is not dict or obj.get("type") != "end" or _has_huge_float(obj):
        return None
    try:
        end = reader.event(obj, len(chunks) + 2, tree_checked=True)
    except ReplayFormatError:
        return None
    return (chunks, end) if isinstance(end, End) else None


def canonical_file(
    data: bytes, path: str | Path
) -> tuple[Header, list[CanonicalChunk], End] | None:
    """A whole file (its bytes) of a header, canonical chunks and an end (`canonical_parts`:
    the order of the times is left to the caller), or None when it is not one
    (`parse_events` decides, on the text `replay_file.read_text` gives). A bad header raises
    ReplayFormatError, as `parse_events` does."""
    newline = data.find(b"\n")
    if newline <= 0:
        return None
    try:
        first_line = data[:newline].decode("utf-8")
    except UnicodeDecodeError:
        return None
    if first_line.isspace():
        return None
    reader = ReplayReader(path)
    header = _header_of(first_line, 1, reader)
    stop = len(data) - 1 if data.endswith(b"\n") else len(data)
    parts = canonical_parts(data, reader, newline + 1, stop)
    return None if parts is None else (header, *parts)


def one_pass_events(body: str, reader: ReplayReader) -> ValidEvents | None:
    """Canonical chunks then the end, the chunks decoded and validated in one pass
    (`canonical_parts`); None when unsure (the other paths decide)."""
    try:
        parts = canonical_parts(body.encode("utf-8"), reader)
    except UnicodeEncodeError:  # a lone surrogate: the other paths name it
        return None
    if parts is None:
        return None
    chunks, end = parts
    times = [c.t_ms for c in chunks]
    n_tokens = [c.n_tokens for c in chunks]
    t_ms = np.array(times, dtype=float)  # None -> NaN
    known = t_ms[~np.isnan(t_ms)]
    if not never_decrease(known, end):
        return None
    return ValidEvents(
        t_ms=t_ms,
        times=times,
        channels=[c.channel for c in chunks],
        texts=[c.text for c in chunks],
        n_tokens=n_tokens,
        tokens=np.array(n_tokens, dtype=float),
        chunk_at=None,
        others={},
        end=end,
        first_event_ms=float(known[0]) if len(known) else math.nan,
    )


def _check_line_by_line(
    items: Iterable[tuple[int, Any]], reader: ReplayReader
) -> tuple[list[Event], End | None]:
    """The precise checker: events in order, the first error raised with line and field."""
    events: list[Event] = []
    end: End | None = None
    last_t = -math.inf
    for lineno, obj in items:
        if type(obj) is not dict:
            raise reader.err(
                lineno, None, f"each line must be a JSON object, got {type(obj).__name__}"
            )
        if end is not None:
            raise reader.err(lineno, "type", "event after the end event")
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
    return events, end


def _header_of(line: str, lineno: int, reader: ReplayReader) -> Header:
    # orjson first (a third of the stdlib's time); where it refuses the line or may have
    # rounded an integer, the stdlib decoder reads it and names the problem.
    try:
        obj = orjson.loads(line)
    except orjson.JSONDecodeError:
        obj = None
    if type(obj) is dict and not _has_huge_float(obj):
        return reader.header(obj, lineno, tree_checked=True)
    obj = _decode_line(line, lineno, reader)
    if type(obj) is not dict:
        raise reader.err(lineno, None, f"each line must be a JSON object, got {type(obj).__name__}")
    return reader.header(obj, lineno)


def parse_events(
    text: str, path: str | Path = "<string>", allow_truncated: bool = False
) -> tuple[Header, ValidEvents | Recording]:
    """Parse and validate a replay file's text: its header, and its events as columns.

    The fast path decodes all lines in one call and checks the chunks over whole columns;
    when that is unsure, the precise checker runs line by line and a whole `Recording` comes
    back instead. Either way a bad file raises ReplayFormatError naming line and field.
    """
    reader = ReplayReader(path)
    newline = text.find("\n")
    first_line = text if newline < 0 else text[:newline]
    if first_line and not first_line.isspace():
        header = _header_of(first_line, 1, reader)
        body = "" if newline < 0 else text[newline + 1 :]
        body = body[:-1] if body.endswith("\n") else body
        in_one_pass = one_pass_events(body, reader)
        if in_one_pass is not None:
            return header, in_one_pass
        objs = _decode_joined(body)
        if objs is not None:
            valid = _check_in_bulk(objs, range(2, len(objs) + 2), reader, allow_truncated)
            if valid is not None:
                return header, valid
    # The precise path: every non-blank line decoded and checked on its own, in order, so the
    # first problem is named with its line and field.
    lines, linenos = _nonblank_lines(text)
    if not lines:
        raise ReplayFormatError(path, 1, None, "missing header (the file is empty)")
    header = _header_of(lines[0], linenos[0], reader)
    last_line = linenos[-1]
    numbered = zip(linenos[1:], lines[1:], strict=True)
    items = ((n, _decode_line(raw, n, reader)) for n, raw in numbered)
    events, end = _check_line_by_line(items, reader)
    if end is None and not allow_truncated:
        raise ReplayFormatError(
            path,
            last_line + 1,
            "end",
            "missing end event; the stream is truncated "
            "(load with allow_truncated=True / --truncated to accept it)",
        )
    return header, Recording(header=header, events=events, end=end)
