"""Check a trial's stored events and timings against the schedule rebuilt for it.

`uxlab verify` rebuilds each trial's schedule and compares its SHA-256 with the one stored
when the trial began; once they agree, `event_problems` checks what was stored *as played*
against that schedule (`uxlab.session.trial_run.TrialRun.record` wrote it):

- chunk events: each claims a chunk of the schedule by its number (`index`; the stored
  order follows the shown times, which a frame painted late can swap): chunks 0, 1, 2, ...
  each once, none missing, none beyond the schedule; its `scheduled_ms`, `n_chars` and
  `channel` are that chunk's. A chain held for mid-chain questions shifts
  every later step by its hold (the stored `hold` events' `offset_ms`).
- how many: a completed, timed-out or error trial shows every chunk due before its end
  (the study's timeout, the schedule's error); an abandoned or interrupted one may stop
  early, never diverge.
- timings: `shown_first_ms`/`shown_last_ms` are the first/last visible chunk event's shown
  time, `scheduled_end_ms` the schedule's end (moved by the holds), `t_abandon_ms` the
  `abandon` event's time, `n_chunks` the visible chunk events; the `outcome` event names
  the trial's outcome and the schedule's id.
- live trials: the text and its chunking came from the model, so only what uxlab drew is
  rebuilt: each chunk was shown at max(due, arrival, the previous chunk), and without a
  re-chunking profile each chunk's due time is the rebuilt one. Their scheduled end is when
  the model's answer ended and is not rebuilt.

Times agree within `TOLERANCE_MS` (hold offsets and live times are stored to 0.001 ms).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Any

from uxlab.kinds.chain import chain_steps, split_at_steps
from uxlab.live.live_schedule import TEMPLATE_UNITS, LiveSchedule, unit_times
from uxlab.outcomes import Outcome
from uxlab.streams.recording import Chunk, ErrorEvent, Meta, Recording

TOLERANCE_MS = 0.002
"""Stored and rebuilt times agree within this (stored rounding is to 0.001 ms)."""
EVENT_KINDS = ("chunk", "hold", "abandon", "outcome")
"""The stored event kinds `event_problems` reads."""
LIVE_TIMES = ("due_ms", "arrival_ms", "scheduled_ms")
"""What a live trial's chunk event stores of its timing (`LiveRun.add_to_record`)."""
PLAYS_TO_ITS_END = (Outcome.COMPLETED, Outcome.TIMED_OUT, Outcome.ERROR)
"""Outcomes of a trial that showed every chunk due before it ended."""


@dataclass
class StoredTrial:
    """What the database holds of one trial's playback."""

    outcome: str
    attention: bool
    timings: dict[str, float | None]
    """The timing columns and the extra timings (JSON) as stored."""
    events: list[tuple[str, float | None, dict[str, Any]]] = field(default_factory=list)
    """(kind, t_ms, data) of its events of `EVENT_KINDS`, in stored order."""

    def of_kind(self, kind: str) -> list[tuple[float | None, dict[str, Any]]]:
        return [(t, d) for k, t, d in self.events if k == kind]


def _show(value: Any) -> str:
    if isinstance(value, float):
        return repr(round(value, 3))
    return "none" if value is None else repr(value)


def _number(value: Any) -> float | None:
    """`value` as a float; None when it is none or not a number (an edited value)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    return float(value)


def _differ(stored: Any, rebuilt: float | None) -> bool:
    """The stored value is not the rebuilt one (a value that is not a number never is)."""
    if stored is None or rebuilt is None:
        return stored is not rebuilt
    value = _number(stored)
    return value is None or abs(value - rebuilt) > TOLERANCE_MS


def event_problems(
    schedule: Recording | LiveSchedule, stored: StoredTrial, timeout_ms: float | None
) -> list[str]:
    """Every way `stored` disagrees with `schedule` (the one the trial played), as
    `field: stored X, rebuilt Y` lines; [] when it agrees. `timeout_ms` is the study's."""
    problems: list[str] = []
    chunks = _by_index(problems, stored.of_kind("chunk"))
    if stored.attention:  # a check shows its text and question; nothing streams
        if chunks:
            problems.append(f"chunks: stored {len(chunks)}, rebuilt 0 (an attention check)")
        _check_timing(problems, stored, "scheduled_end_ms", None, "rebuilt")
    elif isinstance(schedule, LiveSchedule):
        _check_live_chunks(problems, schedule, chunks)
    else:
        _check_recorded_chunks(problems, schedule, stored, chunks, timeout_ms)
    _check_shown_span(problems, stored, chunks)
    _check_outcome(problems, schedule, stored)
    return problems


def _played_chunks(schedule: Recording, timeout_ms: float | None) -> list[Chunk]:
    """The chunks a `Player` hands out in order: up to an error event, or to the first event
    due after the timeout (held chains compare the timeout with schedule time too)."""
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


def _hold_offsets(
    problems: list[str], schedule: Recording, stored: StoredTrial
) -> tuple[list[float | None], float]:
    """Per chunk of `schedule`, the shift of its scheduled time by the holds before it
    (None: after a hold given up, so never shown); and the scheduled end's shift."""
    holds = [d for _, d in stored.of_kind("hold")]
    n = len(schedule.chunks)
    if not holds:
        return [0.0] * n, 0.0
    if chain_steps(schedule) is None:
        problems.append(f"hold events: stored {len(holds)}, rebuilt 0 (not a chain)")
        return [0.0] * n, 0.0
    steps = [h.get("step") for h in holds]
    segments = split_at_steps(schedule, [s if isinstance(s, int) else -1 for s in steps])
    offsets: list[float | None] = []
    offset: float | None = 0.0
    for k, segment in enumerate(segments):
        if k > 0:
            hold = holds[k - 1]
            offset, resumed = _number(hold.get("offset_ms")), _number(hold.get("resumed_ms"))
            if offset is not None and resumed is not None:
                want = resumed - segment.start_ms  # the next step starts at the last answer
                if _differ(offset, want):
                    problems.append(
                        f"hold after step {hold.get('step')} offset_ms: stored "
                        f"{_show(offset)}, rebuilt {_show(want)} (resumed at {_show(resumed)})"
                    )
        offsets.extend([offset] * len(segment.schedule.chunks))
    resumed_offsets = [_number(h.get("offset_ms")) for h in holds
                       if _number(h.get("resumed_ms")) is not None]  # fmt: skip
    return offsets, next((o for o in reversed(resumed_offsets) if o is not None), 0.0)


def _check_recorded_chunks(
    problems: list[str],
    schedule: Recording,
    stored: StoredTrial,
    chunks: list[tuple[float | None, dict[str, Any]]],
    timeout_ms: float | None,
) -> None:
    played = _played_chunks(schedule, timeout_ms)
    offsets, end_offset = _hold_offsets(problems, schedule, stored)
    by_index = _check_indexes(problems, chunks, len(played))
    for k, (_t, data) in sorted(by_index.items()):
        if k >= len(played):
            break  # named by `_check_indexes`
        chunk, offset = played[k], offsets[k]
        if offset is None:
            problems.append(f"chunk {k}: stored, but it comes after a hold given up")
            break
        want = None if chunk.t_ms is None else chunk.t_ms + offset
        if _differ(data.get("scheduled_ms"), want):
            problems.append(
                f"chunk {k} scheduled_ms: stored {_show(data.get('scheduled_ms'))}, "
                f"rebuilt {_show(want)}"
            )
        if data.get("n_chars") != len(chunk.text):
            problems.append(
                f"chunk {k} n_chars: stored {_show(data.get('n_chars'))}, rebuilt {len(chunk.text)}"
            )
        if data.get("channel", "content") != chunk.channel:
            problems.append(
                f"chunk {k} channel: stored {_show(data.get('channel'))}, rebuilt {chunk.channel!r}"
            )
    n_shown = len([k for k in by_index if k < len(played)])
    if stored.outcome in PLAYS_TO_ITS_END and n_shown < len(played):
        problems.append(
            f"chunks: stored {n_shown}, rebuilt {len(played)} (a {stored.outcome} trial "
            "shows every chunk due before it ended)"
        )
    if stored.outcome != Outcome.INTERRUPTED:
        end = schedule.end.t_ms if schedule.end is not None else None
        _check_timing(problems, stored, "scheduled_end_ms",
                      None if end is None else end + end_offset, "rebuilt")  # fmt: skip


def _by_index(
    problems: list[str], events: list[tuple[float | None, dict[str, Any]]]
) -> list[tuple[float | None, dict[str, Any]]]:
    """The chunk events in chunk order (`index`; stored order follows the shown times,
    which a frame painted late can swap); names an index that is not a chunk number."""
    numbered = []
    for t_ms, data in events:
        index = data.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            problems.append(f"chunk event index: stored {_show(index)}, not a chunk number")
            continue
        numbered.append((t_ms, data))
    return sorted(numbered, key=lambda e: e[1]["index"])


def _check_indexes(
    problems: list[str], chunks: list[tuple[float | None, dict[str, Any]]], n_max: int | None
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


def _check_live_chunks(
    problems: list[str],
    schedule: LiveSchedule,
    chunks: list[tuple[float | None, dict[str, Any]]],
) -> None:
    by_index = _check_indexes(problems, chunks, None)
    due_ms = None
    if by_index and schedule.profile.chunk is None:  # one live chunk, one unit
        n_units = max(max(by_index) + 1, TEMPLATE_UNITS)
        due_ms = unit_times(schedule.profile, schedule.seed, n_units).due_ms
    for k, (_t, data) in sorted(by_index.items()):
        due, arrival, shown = (_number(data.get(name)) for name in LIVE_TIMES)
        if due is None or arrival is None or shown is None:
            problems.append(f"chunk {k}: no due_ms, arrival_ms or scheduled_ms stored (live)")
            continue
        before = _number(by_index.get(k - 1, (None, {}))[1].get("scheduled_ms"))
        want = max(due, arrival, before or 0.0)
        if _differ(shown, want):
            problems.append(
                f"chunk {k} scheduled_ms: stored {_show(shown)}, rebuilt {_show(want)} "
                "(the latest of its due and arrival times and the chunk before)"
            )
        if due_ms is not None:
            rebuilt = round(max(float(due_ms[k]), 0.0), 3)
            if _differ(due, rebuilt):
                problems.append(f"chunk {k} due_ms: stored {_show(due)}, rebuilt {_show(rebuilt)}")


def _check_shown_span(
    problems: list[str], stored: StoredTrial, chunks: list[tuple[float | None, dict[str, Any]]]
) -> None:
    """shown_first_ms/shown_last_ms/n_chunks against the visible chunk events."""
    visible = [_number(t) for t, d in chunks if (_number(d.get("n_chars")) or 0) > 0]
    first, last = (visible[0], visible[-1]) if visible else (None, None)
    _check_timing(problems, stored, "shown_first_ms", first, "from the chunk events")
    _check_timing(problems, stored, "shown_last_ms", last, "from the chunk events")
    n_chunks = stored.timings.get("n_chunks")
    if n_chunks is not None and n_chunks != len(visible):
        problems.append(f"n_chunks: stored {n_chunks}, visible chunk events {len(visible)}")


def _check_outcome(
    problems: list[str], schedule: Recording | LiveSchedule, stored: StoredTrial
) -> None:
    abandons = stored.of_kind("abandon")
    t_abandon = _number(abandons[0][0]) if len(abandons) == 1 else None
    if len(abandons) > 1:
        problems.append(f"abandon events: stored {len(abandons)}, at most 1")
    elif stored.outcome != Outcome.INTERRUPTED:
        _check_timing(problems, stored, "t_abandon_ms", t_abandon, "abandon event at")
    outcomes = stored.of_kind("outcome")
    if not outcomes:
        return  # interrupted (never committed), or stored before the outcome event
    data = outcomes[-1][1]
    if data.get("outcome") != stored.outcome:
        problems.append(
            f"outcome: stored {stored.outcome!r}, "
            f"the outcome event says {_show(data.get('outcome'))}"
        )
    if "schedule_id" in data and data["schedule_id"] != schedule.id:
        problems.append(
            f"outcome event schedule_id: stored {_show(data['schedule_id'])}, "
            f"rebuilt {schedule.id!r}"
        )


def _check_timing(
    problems: list[str], stored: StoredTrial, name: str, want: float | None, source: str
) -> None:
    got = stored.timings.get(name)
    if _differ(got, want):
        problems.append(f"{name}: stored {_show(got)}, {source} {_show(want)}")
