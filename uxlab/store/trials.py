"""Trials: begun (in flight), committed with their answers and events in one transaction."""

from __future__ import annotations

import json
from typing import Any

from uxlab.outcomes import Outcome
from uxlab.store.answers import answer_matches, normalise_responses
from uxlab.store.base import Database
from uxlab.store.digests import sha256_json
from uxlab.store.records import OUTCOMES, TIMING_COLUMNS, SessionRecord
from uxlab.store.schema import StoreError
from uxlab.store.trial_digest import (
    EventRow,
    TrialRows,
    real,
    stored_timings,
    trial_digest,
)
from uxlab.study.adaptive import CommittedTrial
from uxlab.study.design import Trial


class Trials:
    """`store.trials`: begin, release and commit a session's trials; read them back."""

    def __init__(self, db: Database):
        self.db = db
        self.conn = db.conn

    def begin(
        self,
        session: SessionRecord,
        trial_index: int,
        planned: Trial | None = None,
        schedule_sha256: str | None = None,
    ) -> None:
        """Record the trial as in flight (committed), before its stream starts.

        `planned` is the trial as played (an adaptive level resolved); `schedule_sha256`
        the SHA-256 of the schedule it plays (`uxlab.study.reproduce.schedule_sha256`).
        """
        if trial_index != session.next_index:
            raise StoreError(
                f"session {session.id}: trial {trial_index} begun out of order "
                f"(the next trial is {session.next_index})"
            )
        if not 0 <= trial_index < len(session.trials):
            raise StoreError(f"session {session.id}: no trial {trial_index} in the trial list")
        t = planned or session.trials[trial_index]
        now = self.db.now_iso()
        with self.db.write_transaction():
            self.conn.execute(
                "INSERT INTO trials (session_id, trial_index, block, practice, kind, "
                "condition_id, levels, replay_id, seed, attention, outcome, started_at, "
                "schedule_sha256) VALUES (?,?,?,?,?,?,?,?,?,?, 'running', ?, ?)",
                (
                    session.id,
                    trial_index,
                    t.block,
                    int(t.practice),
                    t.kind,
                    t.condition_id,
                    json.dumps(t.levels, sort_keys=True),
                    t.replay_id,
                    t.seed,
                    int(t.attention is not None),
                    now,
                    schedule_sha256,
                ),
            )
            self.conn.execute(
                "UPDATE sessions SET updated_at = ?, last_seen_s = ? WHERE session_id = ?",
                (now, self.db.clock(), session.id),
            )
        session.next_index = trial_index + 1

    def release(self, session: SessionRecord, trial_index: int) -> bool:
        """Take back a trial begun but never sent (the participant quit before Enter).

        Its in-flight row is deleted, so a resume offers the same trial again instead of
        storing it as `interrupted`. Only the last trial begun, only while still in flight
        and with nothing stored for it; returns False (and changes nothing) otherwise.
        """
        if trial_index != session.next_index - 1:
            return False
        with self.db.write_transaction():
            stored = self.conn.execute(
                "SELECT (SELECT COUNT(*) FROM events WHERE session_id = ? AND trial_index = ?)"
                " + (SELECT COUNT(*) FROM responses WHERE session_id = ? AND trial_index = ?)",
                (session.id, trial_index, session.id, trial_index),
            ).fetchone()[0]
            if stored:
                return False
            cur = self.conn.execute(
                "DELETE FROM trials WHERE session_id = ? AND trial_index = ? "
                "AND outcome = 'running'",
                (session.id, trial_index),
            )
            if cur.rowcount != 1:
                return False
            self.db.append_audit("release", session.id, sha256_json(trial_index),
                        {"trial_index": trial_index})  # fmt: skip
        session.next_index = trial_index
        return True

    def commit(
        self,
        session: SessionRecord,
        trial_index: int,
        outcome: str,
        timings: dict[str, float | None] | None = None,
        responses: dict[str, Any] | None = None,
        events: list[dict[str, Any]] | None = None,
    ) -> str:
        """Store a trial's outcome, timings, responses and events in ONE transaction.

        `responses` maps question id to `(value, rt_ms)` or `{"value": ..., "rt_ms": ...}`;
        `events` are dicts with `kind` and `t_ms` (the rest is kept as data). Returns the
        SHA-256 of what was stored (also written to the audit log).
        """
        timings = _checked_timings(trial_index, outcome, timings)
        trial = session.trials[trial_index]
        answers = {
            q: (value, real(rt))
            for q, (value, rt) in normalise_responses(
                session.study.trial_response_questions, responses or {}, f"trial {trial_index}"
            ).items()
        }
        attention_ok = _attention_ok(session, trial, answers)
        event_rows = _event_rows(session.id, trial_index, events)
        extra = {k: v for k, v in timings.items() if k not in TIMING_COLUMNS}
        extra_json = json.dumps(extra, sort_keys=True) if extra else None
        stored = TrialRows(
            session.id, trial_index, outcome, stored_timings(timings, extra_json), answers,
            event_rows,
        )  # fmt: skip
        digest = trial_digest(stored)  # what verify recomputes from the stored rows
        now = self.db.now_iso()
        with self.db.write_transaction():
            cur = self.conn.execute(
                "UPDATE trials SET outcome = ?, attention_ok = ?, t_abandon_ms = ?, "
                "shown_first_ms = ?, shown_last_ms = ?, scheduled_end_ms = ?, timings = ?, "
                "committed_at = ? WHERE session_id = ? AND trial_index = ? "
                "AND outcome = 'running'",
                (
                    outcome,
                    attention_ok,
                    *(stored.timings[k] for k in TIMING_COLUMNS),
                    extra_json,
                    now,
                    session.id,
                    trial_index,
                ),
            )
            if cur.rowcount != 1:
                raise StoreError(
                    f"session {session.id}: trial {trial_index} is not in flight (call "
                    "store.trials.begin first; a trial is committed once)"
                )
            self.conn.executemany(
                "INSERT INTO responses VALUES (?,?,?,?,?)",
                [(session.id, trial_index, q, v, rt) for q, (v, rt) in answers.items()],
            )
            self.conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?)", event_rows)
            self.conn.execute(
                "UPDATE sessions SET updated_at = ?, last_seen_s = ? WHERE session_id = ?",
                (now, self.db.clock(), session.id),
            )
            self.db.append_audit(
                "trial",
                session.id,
                digest.sha256,
                {"trial_index": trial_index, "parts": digest.parts},
            )
        return digest.sha256

    def committed(self, session: SessionRecord) -> list[CommittedTrial]:
        """The session's committed trials in order: levels, outcome and answers."""
        answers: dict[int, dict[str, str | None]] = {}
        for idx, qid, value in self.conn.execute(
            "SELECT trial_index, question_id, value FROM responses WHERE session_id = ?",
            (session.id,),
        ):
            answers.setdefault(idx, {})[qid] = value
        return [
            CommittedTrial(
                idx, bool(practice), bool(att), json.loads(levels), outcome, answers.get(idx, {})
            )
            for idx, practice, att, levels, outcome in self.conn.execute(
                "SELECT trial_index, practice, attention, levels, outcome FROM trials "
                "WHERE session_id = ? AND committed_at IS NOT NULL AND outcome != 'interrupted' "
                "ORDER BY trial_index",
                (session.id,),
            )
        ]


def _checked_timings(
    trial_index: int, outcome: str, timings: dict[str, float | None] | None
) -> dict[str, float | None]:
    """A copy of `timings`, refused (StoreError) for an unknown outcome, a timing that is
    not a number, or an abandoned trial without t_abandon_ms."""
    if outcome not in OUTCOMES:
        raise StoreError(
            f"trial {trial_index}: outcome {outcome!r} is not one of {', '.join(OUTCOMES)}"
        )
    timings = dict(timings or {})
    for key, value in timings.items():
        if value is not None and not isinstance(value, (int, float)):
            raise StoreError(f"trial {trial_index}: timing {key}={value!r} is not a number")
    if outcome == Outcome.ABANDONED and timings.get("t_abandon_ms") is None:
        raise StoreError(f"trial {trial_index}: an abandoned trial needs t_abandon_ms")
    return timings


def _attention_ok(session: SessionRecord, trial: Trial, answers: dict[str, Any]) -> int | None:
    """1 / 0 whether an attention check's answer is the expected one; None for a trial
    that is not a check, or a check left unanswered (a quit)."""
    attention_ok = None
    check = trial.attention
    given = None if check is None else answers.get(check.question, (None, None))[0]
    if check is not None and given is not None:  # unanswered (a quit): stays empty
        question = session.study.question(check.question)
        attention_ok = int(answer_matches(question, given, check.answer))
    return attention_ok


def _event_rows(
    session_id: str, trial_index: int, events: list[dict[str, Any]] | None
) -> list[EventRow]:
    """The events table's rows for a trial's events (`kind` and `t_ms` as columns, the
    rest as JSON data); refuses (StoreError) an event without a kind."""
    events = list(events or [])
    event_rows = []
    for seq, ev in enumerate(events):
        ev = dict(ev)
        kind = ev.pop("kind", None)
        if not isinstance(kind, str):
            raise StoreError(f"trial {trial_index}: event {seq} has no 'kind'")
        t_ms = ev.pop("t_ms", None)
        if t_ms is not None and not isinstance(t_ms, (int, float)):
            raise StoreError(f"trial {trial_index}: event {seq} t_ms={t_ms!r} is not a number")
        t_ms = real(t_ms)  # as the REAL column keeps it (the digest's value)
        data = json.dumps(ev, sort_keys=True, separators=(",", ":"))
        event_rows.append((session_id, trial_index, seq, t_ms, kind, data))
    return event_rows
