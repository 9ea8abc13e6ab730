"""What a trial's audit entry holds of it, computed alike at commit and by `uxlab verify`.

`store.trials.commit` writes, and `uxlab verify` recomputes from the stored rows:

- the entry's `sha256`: SHA-256 of the canonical JSON (`sha256_json`) of
  `{session_id, trial_index, outcome, timings, responses, events}`, with `timings` every
  timing column plus the extra timings, `responses` `{question id: [answer, rt_ms]}` and
  `events` the events table's rows. Numbers are taken as the database keeps them (a REAL
  column: a float; NaN: NULL), so the stored rows give back the same digest;
- the entry's `detail.parts`: a short digest of each part, so a changed trial is named with
  the field that changed: `events` (SHA-256 of the event rows, and their count), then
  `outcome`, each timing, each answer and each response time.

The per-field digests are HMACs keyed by the rest of the event rows' SHA-256 (its first 64
bits are the `events` part; the key is never stored). While the trial is stored the key is
at hand to anyone who reads it, so nothing is hidden from the study's owner; once the
participant withdraws (their events deleted), a yes/no answer cannot be recovered from the
audit log by trying both values.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import math
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from uxlab.store.backend import Connection
from uxlab.store.digests import sha256_json
from uxlab.store.records import TIMING_COLUMNS

PART_HEX = 16
"""Hex digits kept of each part's digest (64 bits: enough to tell a change, kept short)."""
EventRow = tuple[str, int, int, float | None, str, str]
"""An events table row: session_id, trial_index, seq, t_ms, kind, data (JSON text)."""


def real(value: Any) -> float | None:
    """A number as a REAL column gives it back: a float, or None for NULL and NaN."""
    if value is None:
        return None
    number = float(value)
    return None if math.isnan(number) else number


@dataclass(frozen=True)
class TrialRows:
    """One trial as stored: the trials row's outcome and timings, its answers and events."""

    session_id: str
    trial_index: int
    outcome: str
    timings: dict[str, Any]
    """Every timing column (None when empty) and the extra timings."""
    answers: dict[str, tuple[str | None, float | None]]
    events: list[EventRow]


@dataclass(frozen=True)
class TrialDigest:
    """A trial's SHA-256 and its parts' digests (the audit entry's `detail.parts`)."""

    sha256: str
    parts: dict[str, Any]


def trial_digest(rows: TrialRows) -> TrialDigest:
    """The digest of what is stored of a trial (module docstring). The events are encoded
    a few hundred rows at a time, once for both digests: a commit in a worker thread of a
    trial of 100,000 events leaves the UI loop free to run meanwhile."""
    whole, events = hashlib.sha256(), hashlib.sha256()
    whole.update(b'{"events":')
    for piece in _rows_json(rows.events):
        data = piece.encode()
        whole.update(data)
        events.update(data)
    rest = {
        "outcome": rows.outcome,
        "responses": {q: list(a) for q, a in rows.answers.items()},
        "session_id": rows.session_id,
        "timings": rows.timings,
        "trial_index": rows.trial_index,
    }
    whole.update(("," + _canonical(rest)[1:]).encode())  # "events" sorts first
    key = hashlib.sha256(b"uxlab.trial-parts\x1f" + events.digest()).digest()

    def part(name: str, value: Any) -> str:
        text = _canonical([name, value]).encode()
        return hmac.new(key, text, hashlib.sha256).hexdigest()[:PART_HEX]

    parts = {
        "events": events.hexdigest()[:PART_HEX],
        "n_events": len(rows.events),
        "outcome": part("outcome", rows.outcome),
        "timings": {k: part("timing:" + k, v) for k, v in sorted(rows.timings.items())},
        "answers": {q: part("answer:" + q, v) for q, (v, _rt) in sorted(rows.answers.items())},
        "rts": {q: part("rt:" + q, rt) for q, (_v, rt) in sorted(rows.answers.items())},
    }
    return TrialDigest(whole.hexdigest(), parts)


def end_answers_sha256(session_id: str, rows: list[tuple[str, str | None, float | None]]) -> str:
    """SHA-256 of a session's stored end-of-study answers, `(question id, answer, rt_ms)`
    in question order (an `answers` audit entry's `sha256`)."""
    text = _canonical({"session_id": session_id, "end_answers": sorted(rows)})
    return hashlib.sha256(text.encode()).hexdigest()


def session_digest(conn: Connection, session_id: str) -> str:
    """SHA-256 of a session's trials (outcome and timing columns) and answers as stored now
    (a `run` or `finish` audit entry's `sha256`: after a finish, nothing of it changes)."""
    rows = conn.execute(
        "SELECT trial_index, outcome, t_abandon_ms, shown_first_ms, shown_last_ms, "
        "scheduled_end_ms FROM trials WHERE session_id = ? ORDER BY trial_index",
        (session_id,),
    ).fetchall()
    answers = conn.execute(
        "SELECT trial_index, question_id, value, rt_ms FROM responses WHERE session_id = ? "
        "ORDER BY 1, 2",
        (session_id,),
    ).fetchall()
    return sha256_json({"trials": rows, "responses": answers})


ROWS_PER_PIECE = 500
"""Event rows encoded per call: fast (C), and short enough to leave a UI loop free."""


def _rows_json(rows: list[EventRow]) -> Iterator[str]:
    """The canonical JSON of a list of rows (`_canonical(rows)`), in pieces of a few hundred
    rows: the same text, encoded by the C encoder, never in one long call."""
    yield "["
    for start in range(0, len(rows), ROWS_PER_PIECE):
        batch = _canonical(rows[start : start + ROWS_PER_PIECE])[1:-1]
        yield ("," if start else "") + batch
    yield "]"


def _canonical(obj: Any) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def stored_timings(values: dict[str, Any], extra_json: str | None) -> dict[str, Any]:
    """The `timings` of a trial's digest from its timing columns and extra timings (JSON)."""
    extra = json.loads(extra_json) if extra_json else {}
    timings: dict[str, Any] = {k: real(values.get(k)) for k in TIMING_COLUMNS}
    if isinstance(extra, dict):
        timings.update(extra)
    return timings


def changed_parts(committed: dict[str, Any], now: dict[str, Any]) -> list[str]:
    """What differs between a trial's committed parts and its stored rows' parts, in the
    trial table's column names (`q_<id>`, `rt_<id>_ms`); the events first (when they
    changed, the keyed fields cannot be told apart, so only the events are named)."""
    if committed.get("events") != now["events"] or committed.get("n_events") != now["n_events"]:
        n_then, n_now = committed.get("n_events"), now["n_events"]
        if n_then != n_now:
            return [f"events ({n_then} committed, {n_now} stored now)"]
        return [f"events (the {n_now} stored differ from those committed)"]
    out: list[str] = []
    if committed.get("outcome") != now["outcome"]:
        out.append("outcome")
    out += _differing(committed.get("timings", {}), now["timings"], "{}")
    out += _differing(committed.get("answers", {}), now["answers"], "q_{}")
    out += _differing(committed.get("rts", {}), now["rts"], "rt_{}_ms")
    return out


def _differing(then: dict[str, str], now: dict[str, str], column: str) -> list[str]:
    out = []
    for name in sorted(set(then) | set(now)):
        shown = column.format(name)
        if name not in now:
            out.append(f"{shown} (removed)")
        elif name not in then:
            out.append(f"{shown} (added)")
        elif then[name] != now[name]:
            out.append(shown)
    return out
