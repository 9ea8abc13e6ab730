"""Check the stored data against the audit log: what `uxlab verify` trusts the answers by.

The audit log (`uxlab.store.audit`) is hash-chained; what its entries say of the data is
checked here against the rows:

- every committed trial: its digest recomputed from the stored trial row, answers and events
  (`uxlab.store.trial_digest`) against its `trial` entry; a difference names the field (the
  trial table's column: `q_<id>`, `rt_<id>_ms`, a timing, the outcome, the events);
- every trial row has its entry (committed: a `trial` entry; interrupted: a `resume` entry
  naming it), and every `trial` entry its row (a deleted trial is named);
- every session: its `create` entry (trial list SHA-256, seed, pilot and simulated flags),
  a `finish` entry exactly when it is completed, and then its rows as they were when it
  finished; its end-of-study answers against their `answers` entry; every answer against
  its question (a yes/no answer replaced by other text is named);
- every session the log created is in the database, unless a withdrawal names it;
- the audit table still refuses changes (its append-only triggers are in place).

What cannot be seen from the database alone is an audit log cut at its end together with
the rows it recorded: for that, anchor the chain head elsewhere and check it with
`uxlab verify --expect-head`.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from uxlab.store.audit import AuditChain
from uxlab.store.backend import Connection
from uxlab.store.dialect import audit_triggers_sql
from uxlab.store.records import END_INDEX, TIMING_COLUMNS
from uxlab.store.trial_digest import (
    TrialRows,
    changed_parts,
    end_answers_sha256,
    real,
    session_digest,
    stored_timings,
    trial_digest,
)
from uxlab.study.questions import question_type
from uxlab.study.spec import Question, Study

AUDIT_TRIGGERS = ("audit_no_delete", "audit_no_update")
"""The triggers that make the audit table append-only."""

Say = Callable[[str, int | None], None]
"""Reports one mismatch of a session: what, and the trial it is about (or None)."""


@dataclass
class SessionEntries:
    """What the audit log says of one session."""

    create: dict[str, Any] | None = None
    trials: dict[int, dict[str, Any]] = field(default_factory=dict)
    """trial_index -> its (last) `trial` entry."""
    interrupted: set[int] = field(default_factory=set)
    """Trials a `resume` entry found in flight and stored as interrupted."""
    finish: list[dict[str, Any]] = field(default_factory=list)
    answers: dict[str, Any] | None = None
    """The last `answers` entry (end-of-study answers)."""


@dataclass
class AuditLedger:
    """The audit log's entries by session, and the sessions withdrawals deleted."""

    sessions: dict[str, SessionEntries] = field(default_factory=dict)
    withdrawn: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, chain: AuditChain) -> AuditLedger:
        ledger = cls()
        for entry in chain.entries:
            action, subject = entry["action"], entry["subject"]
            detail = _detail(entry)
            if action in ("delete", "refuse"):
                ids = detail.get("session_ids")
                if isinstance(ids, list):
                    ledger.withdrawn.update(str(i) for i in ids)
                continue
            if not isinstance(subject, str) or action not in _SESSION_ACTIONS:
                continue
            mine = ledger.sessions.setdefault(subject, SessionEntries())
            if action == "create":
                mine.create = entry
            elif action == "trial" and isinstance(detail.get("trial_index"), int):
                mine.trials[detail["trial_index"]] = entry
            elif action == "resume":
                mine.interrupted.update(i for i in detail.get("interrupted", []) if type(i) is int)
            elif action == "finish":
                mine.finish.append(entry)
            elif action == "answers":
                mine.answers = entry
        return ledger


_SESSION_ACTIONS = ("create", "trial", "resume", "finish", "answers")


def _detail(entry: dict[str, Any]) -> dict[str, Any]:
    try:
        detail = json.loads(entry["detail"])
    except (TypeError, ValueError):
        return {}
    return detail if isinstance(detail, dict) else {}


def _seq(entry: dict[str, Any]) -> str:
    return f"audit entry {entry['seq']}"


@dataclass
class SessionRow:
    """The sessions row's fields the audit log speaks of."""

    session_id: str
    state: str
    seed: int
    plan_sha256: str
    pilot: bool
    simulated: bool


def check_session(
    conn: Connection, ledger: AuditLedger, study: Study, row: SessionRow, say: Say
) -> int:
    """Check one session's rows against the audit log (module docstring); returns the
    number of committed trials whose digest was recomputed."""
    mine = ledger.sessions.get(row.session_id, SessionEntries())
    found: list[str] = []

    def tell(what: str, trial_index: int | None = None) -> None:
        found.append(what)
        say(what, trial_index)

    _check_create(mine, row, tell)
    answers = _answers(conn, row.session_id)
    n_digests = _check_trials(conn, mine, study, row.session_id, answers, tell)
    _check_answers_fit(study, answers, tell)
    _check_end_answers(mine, row.session_id, answers.get(END_INDEX, {}), tell)
    if row.state == "completed" and not mine.finish:
        tell("stored as completed, but the audit log has no `finish` entry for it")
    elif row.state != "completed" and mine.finish:
        tell(f"state {row.state!r}, but it finished ({_seq(mine.finish[-1])}): state changed")
    elif (
        mine.finish
        and not found
        and session_digest(conn, row.session_id) != mine.finish[-1]["sha256"]
    ):
        tell(
            "its trials or answers as stored differ from when it finished "
            f"({_seq(mine.finish[-1])})"
        )
    return n_digests


def _check_create(mine: SessionEntries, row: SessionRow, tell: Say) -> None:
    create = mine.create
    if create is None:
        tell(
            f"session {row.session_id} has no `create` entry in the audit log (inserted "
            "afterwards, or the log's end removed)",
            None,
        )
        return
    detail = _detail(create)
    if create["sha256"] != row.plan_sha256:
        tell(f"its trial list is not the one recorded when it was created ({_seq(create)})", None)
    if "seed" in detail and detail["seed"] != row.seed:
        tell(f"seed: stored {row.seed}, created with {detail['seed']} ({_seq(create)})", None)
    for flag in ("pilot", "simulated"):
        if flag in detail and bool(detail[flag]) != getattr(row, flag):
            was = bool(detail[flag])
            tell(
                f"{flag}: stored {getattr(row, flag)}, created as {was} ({_seq(create)})",
                None,
            )


Answers = dict[int, dict[str, tuple[str | None, float | None]]]


def _answers(conn: Connection, session_id: str) -> Answers:
    out: Answers = defaultdict(dict)
    for idx, qid, value, rt in conn.execute(
        "SELECT trial_index, question_id, value, rt_ms FROM responses WHERE session_id = ?",
        (session_id,),
    ):
        out[idx][qid] = (value, rt)
    return out


def _check_trials(
    conn: Connection,
    mine: SessionEntries,
    study: Study,
    session_id: str,
    answers: Answers,
    tell: Say,
) -> int:
    """Each trial row against its entry, each entry against its row; returns how many
    digests were recomputed."""
    events: dict[int, list[Any]] = defaultdict(list)
    for row in conn.execute(
        "SELECT session_id, trial_index, seq, t_ms, kind, data FROM events "
        "WHERE session_id = ? AND trial_index >= 0 ORDER BY trial_index, seq",
        (session_id,),
    ):
        events[row[1]].append(tuple(row))
    rows = conn.execute(
        "SELECT trial_index, outcome, attention, attention_ok, "
        + ", ".join(TIMING_COLUMNS)
        + ", timings FROM trials WHERE session_id = ? AND trial_index >= 0 ORDER BY trial_index",
        (session_id,),
    ).fetchall()
    n_digests = 0
    seen: set[int] = set()
    for idx, outcome, attention, attention_ok, *rest in rows:
        *timing_values, extra_json = rest
        seen.add(idx)
        entry = mine.trials.get(idx)
        if entry is None:
            if outcome == "interrupted" and idx not in mine.interrupted:
                tell(
                    "stored as interrupted, but no resume in the audit log found it in flight", idx
                )
            elif outcome not in ("running", "interrupted"):
                tell(
                    f"committed ({outcome}), but the audit log has no entry for it (the log's "
                    "end removed, or the trial inserted)",
                    idx,
                )
            continue
        n_digests += 1
        timings = stored_timings(dict(zip(TIMING_COLUMNS, timing_values, strict=True)), extra_json)
        stored = TrialRows(
            session_id,
            idx,
            outcome,
            timings,
            {q: (v, real(rt)) for q, (v, rt) in answers.get(idx, {}).items()},
            events.get(idx, []),
        )
        digest = trial_digest(stored)
        if digest.sha256 != entry["sha256"]:
            committed = _detail(entry).get("parts")
            what = changed_parts(committed, digest.parts) if isinstance(committed, dict) else []
            fields = ", ".join(what) or "its outcome, timings, answers or events"
            tell(f"changed since it was committed ({_seq(entry)}): {fields}", idx)
        if attention:
            _check_attention(study, idx, answers.get(idx, {}), attention_ok, tell)
    for idx, entry in sorted(mine.trials.items()):
        if idx not in seen:
            tell(
                f"committed ({_seq(entry)}), but not in the database: the trial, its answers "
                "and its events were deleted",
                idx,
            )
    return n_digests


def _check_attention(
    study: Study,
    idx: int,
    answers: dict[str, tuple[str | None, float | None]],
    attention_ok: int | None,
    tell: Say,
) -> None:
    """An attention check's stored result against its stored answer."""
    check = study.attention
    if check is None:
        return
    given = answers.get(check.question, (None, None))[0]
    if given is None:
        expected = None
    else:
        try:
            q = study.question(check.question)
            expected = int(question_type(q.type).matches(q, given, check.answer))
        except (KeyError, ValueError):
            return  # the answer itself is named by `_check_answers_fit`
    if attention_ok != expected:
        tell(f"attention_ok: stored {attention_ok}, its answer gives {expected}", idx)


def _check_answers_fit(study: Study, answers: Answers, tell: Say) -> None:
    """Every stored answer is one its question takes (as the store would have stored it)."""
    questions: dict[str, Question] = {q.id: q for q in study.trial_response_questions}
    ends: dict[str, Question] = {q.id: q for q in study.end_questions}
    for idx in sorted(answers):
        asked = ends if idx == END_INDEX else questions
        where = None if idx == END_INDEX else idx
        for qid, (value, rt) in sorted(answers[idx].items()):
            q = asked.get(qid)
            label = f"end-of-study answer {qid}" if idx == END_INDEX else f"q_{qid}"
            if q is None:
                tell(f"{label}: not a question asked there", where)
                continue
            if rt is not None and not isinstance(rt, (int, float)):
                tell(f"{label}: response time {rt!r} is not a number", where)
            if value is None:
                continue
            try:
                ok = question_type(q.type).normalise(q, value) == value
            except ValueError:
                ok = False
            if not ok:
                tell(
                    f"{label}: stored {_short(value)} is not an answer its {q.type} question takes",
                    where,
                )


def _check_end_answers(
    mine: SessionEntries,
    session_id: str,
    stored: dict[str, tuple[str | None, float | None]],
    tell: Say,
) -> None:
    entry = mine.answers
    if entry is None:
        if stored:
            tell(
                "end-of-study answers stored, but the audit log has no `answers` entry for "
                f"them ({', '.join(sorted(stored))})",
                None,
            )
        return
    detail = _detail(entry)
    rows = [(q, v, real(rt)) for q, (v, rt) in sorted(stored.items())]
    if end_answers_sha256(session_id, rows) == entry["sha256"]:
        return
    then, now = set(detail.get("questions", [])), set(stored)
    parts = [f"{q} (removed)" for q in sorted(then - now)]
    parts += [f"{q} (added)" for q in sorted(now - then)]
    same = sorted(then & now)
    if len(same) == 1:
        parts.append(same[0])
    elif same:
        parts.append(f"one or more of {', '.join(same)}")
    tell(f"end-of-study answers changed since stored ({_seq(entry)}): {'; '.join(parts)}", None)


def check_missing_sessions(
    ledger: AuditLedger, present: set[str], say: Callable[[str], None]
) -> None:
    """Sessions the audit log created that are not in the database and no withdrawal names."""
    missing = [
        (sid, mine)
        for sid, mine in ledger.sessions.items()
        if mine.create is not None and sid not in present and sid not in ledger.withdrawn
    ]
    for sid, mine in missing:
        assert mine.create is not None
        n = len(mine.trials)
        say(
            f"session {sid}: created ({_seq(mine.create)}) with {n} committed trial(s) in the "
            "audit log, but it is not in the database and no withdrawal names it: deleted"
        )


def check_audit_triggers(conn: Connection, postgres: bool) -> list[str]:
    """The append-only triggers missing from the audit table (none: it refuses changes)."""
    present = {str(r[0]) for r in conn.execute(audit_triggers_sql(postgres))}
    return [t for t in AUDIT_TRIGGERS if t not in present]


def _short(value: str, limit: int = 30) -> str:
    text = repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"
