"""Reading, validating and writing replay files (`*.jsonl`, format `uxlab.replay/1`).

The format is DESIGN.md contract 1. Writing is canonical: the same Recording always gives
the same bytes, so write -> read -> write is stable byte for byte. Every validation error
names the file, the line number and the field.

Reading has three paths with one outcome. A file of canonical chunks and an end (what the
writer makes) has its chunks decoded and validated in one pass into a typed model
(`replay_models`); any other file is decoded in one call and its chunks checked over whole
columns (`parse_events`); whenever that is unsure, the precise path decodes and checks line
by line and names the first problem. Tests hold the paths to the same results on thousands
of broken files. The reading paths live in `replay_decode`; this module writes, reads
files and names the whole format's API.
"""

from __future__ import annotations

import gc
import json
import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from uxlab.reading import (
    MAX_JSON_FILE_BYTES,
    InputProblem,
    read_bounded_bytes,
    utf8_text,
)
from uxlab.streams.recording import (
    Chunk,
    End,
    ErrorEvent,
    Event,
    Header,
    Meta,
    Recording,
)
from uxlab.streams.replay_decode import (
    ReplayFormatError,
    ReplayReader,
    ValidEvents,
    one_pass_events,
    parse_events,
)

__all__ = [
    "ReplayFormatError",
    "ReplayReader",
    "ValidEvents",
    "dumps_recording",
    "event_to_dict",
    "header_to_dict",
    "iter_replay_paths",
    "one_pass_events",
    "parse_events",
    "parse_replay",
    "paused_gc",
    "read_bytes",
    "read_replay",
    "read_text",
    "safe_filename",
    "text_of",
    "write_replay",
]

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


def parse_replay(
    text: str, path: str | Path = "<string>", allow_truncated: bool = False
) -> Recording:
    """Parse the text of a replay file; raise ReplayFormatError naming line and field."""
    header, parsed = parse_events(text, path, allow_truncated=allow_truncated)
    if isinstance(parsed, Recording):
        return parsed
    return Recording(header=header, events=parsed.events(), end=parsed.end)


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


def read_bytes(path: str | Path) -> bytes:
    """The bytes of a replay file (at most `MAX_JSON_FILE_BYTES`), or ReplayFormatError
    naming the file."""
    try:
        return read_bounded_bytes(path, MAX_JSON_FILE_BYTES, "replay file")
    except InputProblem as exc:
        raise ReplayFormatError(path, None, exc.field, exc.problem) from None
    except OSError as exc:
        raise ReplayFormatError(path, None, None, f"cannot be read ({exc.strerror})") from None


def text_of(data: bytes, path: str | Path) -> str:
    """The text of a replay file's bytes (UTF-8), or ReplayFormatError naming the file."""
    try:
        return utf8_text(data)
    except InputProblem as exc:
        raise ReplayFormatError(path, None, exc.field, exc.problem) from None


def read_text(path: str | Path) -> str:
    """The text of a replay file (UTF-8, at most `MAX_JSON_FILE_BYTES`), or
    ReplayFormatError naming the file."""
    return text_of(read_bytes(path), path)


def read_replay(path: str | Path, allow_truncated: bool = False) -> Recording:
    """Read one replay file."""
    path = Path(path)
    return parse_replay(read_text(path), path, allow_truncated=allow_truncated)


def iter_replay_paths(path: str | Path) -> Iterable[Path]:
    """The replay files at `path`: the file itself, or every `*.jsonl` below a folder, sorted."""
    path = Path(path)
    if path.is_dir():
        yield from sorted(_jsonl_files(path), key=lambda p: p.parts)  # = sorted(Paths)
    else:
        yield path


def _jsonl_files(root: Path) -> list[Path]:
    """The files (or links to files) named `*.jsonl` below `root`, as `root.rglob("*.jsonl")`
    then `is_file()` find them (links to folders not followed, unreadable folders left
    out), but from the folders' own listings: `rglob` and `is_file` cost a `stat` a file,
    three times this for 6,000 files."""
    found: list[Path] = []
    folders = [root]
    while folders:
        folder = folders.pop()
        try:
            with os.scandir(folder) as listing:
                entries = list(listing)
        except PermissionError:
            continue
        for entry in entries:
            if entry.name.endswith(".jsonl") and entry.is_file():
                found.append(folder / entry.name)
            if entry.is_dir(follow_symlinks=False):
                folders.append(folder / entry.name)
    return found
