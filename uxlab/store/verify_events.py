"""Check a trial's stored events and timings against the schedule rebuilt for it.

`uxlab verify` rebuilds each trial's schedule and compares its SHA-256 with the one stored
when the trial began; once they agree, `event_problems` checks what was stored *as played*
against that schedule (`uxlab.session.trial_run.TrialRun.record` wrote it). The chunk
events are the trial kind's to check (`TrialKind.check_chunks`, `uxlab.kinds`); the rest
is every kind's:

- chunk events: each claims a chunk of the schedule by its number (`index`; the stored
  order follows the shown times, which a frame painted late can swap): chunks 0, 1, 2, ...
  each once, none missing, none beyond the schedule; its `scheduled_ms`, `n_chars` and
  `channel` are that chunk's. A trial held for questions after a step shifts
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

Times agree within `uxlab.kinds.checks.TOLERANCE_MS` (hold offsets and live times are
stored to 0.001 ms).
"""

from __future__ import annotations

from typing import Any

from uxlab.kinds import ChunkEvents, StoredTrial, TrialKind, check_timing, number, show
from uxlab.outcomes import EventKind, Outcome
from uxlab.player import Schedule

EVENT_KINDS = (EventKind.CHUNK, EventKind.HOLD, EventKind.ABANDON, EventKind.OUTCOME)
"""The stored event kinds `event_problems` reads."""

__all__ = ["EVENT_KINDS", "StoredTrial", "event_problems"]


def event_problems(
    kind: TrialKind, schedule: Schedule, stored: StoredTrial, timeout_ms: float | None
) -> list[str]:
    """Every way `stored` disagrees with `schedule` (the one the trial played, as its `kind`
    made it), as `field: stored X, rebuilt Y` lines; [] when it agrees. `timeout_ms` is the
    study's."""
    problems: list[str] = []
    chunks = _by_index(problems, stored.of_kind(EventKind.CHUNK))
    if stored.attention:  # a check shows its text and question; nothing streams
        if chunks:
            problems.append(f"chunks: stored {len(chunks)}, rebuilt 0 (an attention check)")
        check_timing(problems, stored, "scheduled_end_ms", None, "rebuilt")
    else:
        kind.check_chunks(problems, schedule, stored, chunks, timeout_ms)
    _check_shown_span(problems, stored, chunks)
    _check_outcome(problems, schedule, stored)
    return problems


def _by_index(problems: list[str], events: ChunkEvents) -> ChunkEvents:
    """The chunk events in chunk order (`index`; stored order follows the shown times,
    which a frame painted late can swap); names an index that is not a chunk number."""
    numbered = []
    for t_ms, data in events:
        index = data.get("index")
        if not isinstance(index, int) or isinstance(index, bool) or index < 0:
            problems.append(f"chunk event index: stored {show(index)}, not a chunk number")
            continue
        numbered.append((t_ms, data))
    return sorted(numbered, key=lambda e: e[1]["index"])


def _check_shown_span(problems: list[str], stored: StoredTrial, chunks: ChunkEvents) -> None:
    """shown_first_ms/shown_last_ms/n_chunks against the visible chunk events."""
    visible = [number(t) for t, d in chunks if (number(d.get("n_chars")) or 0) > 0]
    first, last = (visible[0], visible[-1]) if visible else (None, None)
    check_timing(problems, stored, "shown_first_ms", first, "from the chunk events")
    check_timing(problems, stored, "shown_last_ms", last, "from the chunk events")
    n_chunks = stored.timings.get("n_chunks")
    if n_chunks is not None and n_chunks != len(visible):
        problems.append(f"n_chunks: stored {n_chunks}, visible chunk events {len(visible)}")


def _check_outcome(problems: list[str], schedule: Schedule, stored: StoredTrial) -> None:
    abandons = stored.of_kind(EventKind.ABANDON)
    t_abandon = number(abandons[0][0]) if len(abandons) == 1 else None
    if len(abandons) > 1:
        problems.append(f"abandon events: stored {len(abandons)}, at most 1")
    elif stored.outcome != Outcome.INTERRUPTED:
        check_timing(problems, stored, "t_abandon_ms", t_abandon, "abandon event at")
    outcomes = stored.of_kind(EventKind.OUTCOME)
    if not outcomes:
        return  # interrupted (never committed), or stored before the outcome event
    data: dict[str, Any] = outcomes[-1][1]
    if data.get("outcome") != stored.outcome:
        problems.append(
            f"outcome: stored {stored.outcome!r}, "
            f"the outcome event says {show(data.get('outcome'))}"
        )
    if "schedule_id" in data and data["schedule_id"] != schedule.id:
        problems.append(
            f"outcome event schedule_id: stored {show(data['schedule_id'])}, "
            f"rebuilt {schedule.id!r}"
        )
