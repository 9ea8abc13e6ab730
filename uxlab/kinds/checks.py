"""What a stored trial holds of its playback (`StoredTrial`), and the comparisons every
kind's verification shares (`uxlab.store.verify_events` runs them).

Stored and rebuilt times agree within `TOLERANCE_MS`; a stored value that is not a number
(an edited database) never agrees. Problems are `field: stored X, rebuilt Y` lines.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from uxlab.outcomes import EventKind, Outcome
from uxlab.streams.recording import Chunk, ErrorEvent, Meta, Recording

TOLERANCE_MS = 0.002
"""Stored and rebuilt times agree within this (stored rounding is to 0.001 ms)."""
PLAYS_TO_ITS_END = (Outcome.COMPLETED, Outcome.TIMED_OUT, Outcome.ERROR)
"""Outcomes of a trial that showed every chunk due before it ended."""

ChunkEvents = list[tuple[float | None, dict[str, Any]]]
"""(t_ms, data) of a trial's stored chunk events."""


@dataclass
class StoredTrial:
    """What the database holds of one trial's playback."""

    outcome: str
    attention: bool
    timings: dict[str, float | None]
    """The timing columns and the extra timings (JSON) as stored."""
    events: list[tuple[str, float | None, dict[str, Any]]] = field(default_factory=list)
    """(kind, t_ms, data) of its events of `EVENT_KINDS`, in stored order."""

    def of_kind(self, kind: EventKind) -> list[tuple[float | None, dict[str, Any]]]:
        """(t_ms, data) of its events of `kind`, in stored order."""
        return [(t, d) for k, t, d in self.events if k == kind]


def show(value: Any) -> str:
    """A stored or rebuilt value as a problem line shows it."""
    if isinstance(value, float):
        return repr(round(value, 3))
    return "none" if value is None else repr(value)


def number(value: Any) -> float | None:
    """`value` as a float; None when it is none or not a number (an edited value)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def differ(stored: Any, rebuilt: float | None) -> bool:
    """The stored value is not the rebuilt one (a value that is not a number never is)."""
    if stored is None or rebuilt is None:
        return stored is not rebuilt
    value = number(stored)
    return value is None or abs(value - rebuilt) > TOLERANCE_MS


def check_timing(
    problems: list[str], stored: StoredTrial, name: str, want: float | None, source: str
) -> None:
    """The stored timing `name` is `want` (`source` says where `want` comes from)."""
    got = stored.timings.get(name)
    if differ(got, want):
        problems.append(f"{name}: stored {show(got)}, {source} {show(want)}")


def check_indexes(
    problems: list[str], chunks: ChunkEvents, n_max: int | None
) -> dict[int, tuple[float | None, dict[str, Any]]]:
    """Chunks 0, 1, ... each claimed once, none beyond `n_max`: names the first shown
    twice, missing or beyond; returns the chunk events by index (the first of twins)."""
    counts = Counter(d["index"] for _, d in chunks)
    twice = [i for i, n in counts.items() if n > 1]
    if twice:
        problems.append(f"chunk {twice[0]} shown twice ({counts[twice[0]]} chunk events claim it)")
    top = max(counts, default=-1)
    missing = [i for i in range(top) if i not in counts]
    if missing:
        more = f" and {len(missing) - 1} more" if len(missing) > 1 else ""
        problems.append(
            f"chunk {missing[0]}{more} missing (no chunk event claims it; chunk {top} is stored)"
        )
    if n_max is not None and top >= n_max:
        problems.append(f"chunk {top}: stored, but the schedule shows {n_max} chunk(s)")
    by_index: dict[int, tuple[float | None, dict[str, Any]]] = {}
    for event in chunks:
        by_index.setdefault(event[1]["index"], event)
    return by_index


def played_chunks(schedule: Recording, timeout_ms: float | None) -> list[Chunk]:
    """The chunks a `Player` hands out in order: up to an error event, or to the first event
    due after the timeout (a trial held after steps compares it with schedule time too)."""
    out: list[Chunk] = []
    for event in schedule.events:
        if event.t_ms is None:
            continue
        if timeout_ms is not None and event.t_ms > timeout_ms:
            break
        if isinstance(event, Meta):
            continue
        if isinstance(event, ErrorEvent):
            break
        out.append(event)
    return out


def check_played_chunks(
    problems: list[str],
    schedule: Recording,
    stored: StoredTrial,
    chunks: ChunkEvents,
    timeout_ms: float | None,
    offsets: list[float | None] | None = None,
    end_offset: float = 0.0,
) -> None:
    """The chunk events of a schedule known in advance: each chunk's `scheduled_ms`
    (moved by `offsets[k]`; None: never shown), `n_chars` and `channel`; every chunk due
    shown when the trial played to its end; and the scheduled end (moved by `end_offset`)."""
    played = played_chunks(schedule, timeout_ms)
    if offsets is None:
        offsets = [0.0] * len(schedule.chunks)
    by_index = check_indexes(problems, chunks, len(played))
    for k, (_t, data) in sorted(by_index.items()):
        if k >= len(played):
            break  # named by `check_indexes`
        chunk, offset = played[k], offsets[k]
        if offset is None:
            problems.append(f"chunk {k}: stored, but it comes after a hold given up")
            break
        want = None if chunk.t_ms is None else chunk.t_ms + offset
        if differ(data.get("scheduled_ms"), want):
            problems.append(
                f"chunk {k} scheduled_ms: stored {show(data.get('scheduled_ms'))}, "
                f"rebuilt {show(want)}"
            )
        if data.get("n_chars") != len(chunk.text):
            problems.append(
                f"chunk {k} n_chars: stored {show(data.get('n_chars'))}, rebuilt {len(chunk.text)}"
            )
        if data.get("channel", "content") != chunk.channel:
            problems.append(
                f"chunk {k} channel: stored {show(data.get('channel'))}, rebuilt {chunk.channel!r}"
            )
    n_shown = len([k for k in by_index if k < len(played)])
    if stored.outcome in PLAYS_TO_ITS_END and n_shown < len(played):
        problems.append(
            f"chunks: stored {n_shown}, rebuilt {len(played)} (a {stored.outcome} trial "
            "shows every chunk due before it ended)"
        )
    if stored.outcome != Outcome.INTERRUPTED:
        end = schedule.end.t_ms if schedule.end is not None else None
        check_timing(problems, stored, "scheduled_end_ms",
                     None if end is None else end + end_offset, "rebuilt")  # fmt: skip
