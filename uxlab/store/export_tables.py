"""The export's tables read from a study database: one reader per table, on rows read by
name (`sqlite3.Row`, or its PostgreSQL counterpart).

`read_tables(db)` opens one read-only snapshot and returns, per table, its columns and rows
(dicts), plus the study summary for `study.json` and the adaptive posteriors;
`uxlab.store.export` writes them to files. The trial table's columns are contract 2
(`trial_table_spec`); the columns of each table and how cells are made are described in
`uxlab.store.export`.
"""

from __future__ import annotations

import json
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trial_table_spec as spec
from uxlab import kinds
from uxlab.fidelity import trial_fidelity
from uxlab.outcomes import Outcome
from uxlab.store.backend import Connection, NamedRow
from uxlab.store.browser_paints import add_painted
from uxlab.store.dialect import db_name
from uxlab.store.open_checks import open_read_only, reading
from uxlab.store.records import END_INDEX
from uxlab.store.schema import StoreError
from uxlab.study.questions import REGISTRY

BASE_COLUMNS = spec.names(spec.LEADING)
AFTER_FACTOR_COLUMNS = spec.names(spec.AFTER_FACTORS)
TAIL_COLUMNS = spec.names(spec.TRAILING)
ATTENTION_CONDITION = "attention-check"
"""`condition_id` of an attention check shown on its own screen: no stream, so no latency
and empty factor columns (a check that streamed, as before, keeps its levels)."""
RERUN_COLUMNS = spec.names(spec.RERUN)
"""Only when a session queued a trial again (`requeued`) at the end: on a
re-run, the trial_index of the attempt it replaces and why (`interrupted`, ...); on the
replaced attempt, the trial_index of its re-run (and the same reason)."""
FIDELITY_COLUMNS = spec.names(spec.FIDELITY)
"""Every trial: how faithfully its stream was shown (`uxlab.fidelity`), from the trial's
`timings`; for a trial stored before these were kept, computed from its `chunk` events
(then `load_1m` and `fidelity_flag` stay empty)."""
UNMEASURED_WHEN_SIMULATED = [
    c for c in FIDELITY_COLUMNS if c.startswith("late_") or c in ("drift_ms", "fidelity_flag")
]
"""Left empty for a session simulated on the virtual clock (not `through_ui`): it hands
chunks out exactly on schedule, so its lateness was not measured (databases from before
this was stored empty hold zeros there)."""
EVENT_COLUMNS = ["session_id", "trial_index", "t_ms", "kind", "data"]
SESSION_COLUMNS = [
    "session_id",
    "participant",
    "participant_number",
    "group_id",
    "study_id",
    "study_sha256",
    "seed",
    "state",
    "pilot",
    "simulated",
    "resumed_count",
    "created_at",
    "updated_at",
    "n_trials_planned",
    "n_trials_done",
]
STORED_SESSION_COLUMNS = SESSION_COLUMNS[:13]
"""The sessions.csv columns read as stored (the trial counts are computed)."""
RUN_COLUMNS = ["session_id", "participant", "run", "kind", "started_at", "next_index"]
"""runs.csv: `run` 0 is the start, k the k-th resume; `next_index` the trial it began with."""

ADAPTIVE_FIELDS = {
    "estimate": "threshold_ms",
    "ci_low": "ci_low_ms",
    "ci_high": "ci_high_ms",
    "target": "target_p_too_slow",
    "procedure": "procedure",
    "n_trials": "n_trials",
}
"""sessions.csv column suffix -> key of a track's stored state; `_reversals` is counted."""

Answers = dict[tuple[str, int], dict[str, tuple[str | None, float | None]]]
"""(session_id, trial_index) -> question id -> (value as stored, rt_ms); end-of-study
answers have trial_index -1."""
Table = tuple[list[str], list[dict[str, Any]]]
"""A table's columns and its rows."""


def kind_columns() -> tuple[list[str], ...]:
    """Each trial kind's own columns (`TrialKind.columns`, a group of contract 2), from the
    trial's `timings`; a group is written after `scheduled_end_ms` only when some trial of
    the table has it."""
    return tuple(spec.names(k.columns) for k in kinds.REGISTRY.values() if k.columns)


@dataclass(frozen=True)
class StudyColumns:
    """What every registered version of the study adds to the tables' columns."""

    factors: list[str]
    trial_questions: list[str]
    """Per-trial questions, then each question after steps once per step (`<id>_s<step>`)."""
    end_questions: list[str]
    types: dict[str, str]
    """Question id (or step response id) -> its type."""


def read_tables(db: str | Path) -> dict[str, Any]:
    """The export's content from one snapshot: rows of each table and the study summary."""
    with reading(db_name(db)):  # a damaged stored value: one line, not a traceback
        return _read_tables(db)


def _read_tables(db: str | Path) -> dict[str, Any]:
    conn = open_read_only(db)
    conn.row_factory = sqlite3.Row
    try:
        conn.execute("BEGIN")  # one read snapshot for every query below
        studies = read_studies(conn, db)
        summaries = {r["sha256"]: json.loads(r["summary"]) for r in studies}
        columns = study_columns(list(summaries.values()))
        answers = read_answers(conn)
        trials, unmeasured = read_trials(conn, columns, answers)
        events = read_events(conn)
        _fidelity_from_events(unmeasured, events[1])
        trials = (add_painted(conn, *trials, events[1]), trials[1])  # browser sessions
        sessions, posteriors = read_sessions(conn, columns, answers)
        runs = read_runs(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()
    return {
        "trials": trials,
        "events": events,
        "sessions": sessions,
        "runs": runs,
        "study": study_json(studies, summaries[studies[-1]["sha256"]]),
        "adaptive": posteriors,
    }


def read_studies(conn: Connection, db: str | Path) -> list[NamedRow]:
    """Every registered study version, oldest first; StoreError when there is none."""
    studies = conn.execute(
        "SELECT sha256, study_id, version, summary FROM studies ORDER BY registered_at, rowid"
    ).fetchall()
    if not studies:
        raise StoreError(f"{db}: no study registered yet (nothing to export)")
    return studies


def study_columns(summaries: list[dict[str, Any]]) -> StudyColumns:
    """The factors and questions of every study version, each once, in first-seen order."""
    questions = [q for s in summaries for q in s["questions"]]
    step_qs = {  # questions after steps: one column per question and step, `<id>_s<step>`
        f"{q['id']}_s{step}": q["type"]
        for q in questions
        if q["when"] == "step"
        for step in q.get("after_steps", [])
    }
    trial_qs = _union([q["id"] for q in questions if q["when"] == "trial"])
    types = {q["id"]: q["type"] for q in questions}
    types.update(step_qs)
    return StudyColumns(
        factors=_union([f["name"] for s in summaries for f in s["factors"]]),
        trial_questions=_union(trial_qs + list(step_qs)),
        end_questions=_union([q["id"] for q in questions if q["when"] == "end"]),
        types=types,
    )


def study_json(studies: list[NamedRow], latest: dict[str, Any]) -> dict[str, Any]:
    """`study.json`: the latest version's summary, every version, and the cells' encoding."""
    out = dict(latest)
    out["versions"] = [
        {"sha256": r["sha256"], "study_id": r["study_id"], "version": r["version"]} for r in studies
    ]
    out["encoding"] = {
        **{name: t.export_encoding for name, t in REGISTRY.items() if t.export_encoding},
        "outcome": [o.value for o in Outcome],
    }
    out["answer_kinds"] = {name: t.answer_kind for name, t in REGISTRY.items()}
    return out


def read_answers(conn: Connection) -> Answers:
    """Every stored answer by session and trial."""
    answers: Answers = {}
    for r in conn.execute(
        "SELECT session_id, trial_index, question_id, value, rt_ms FROM responses"
    ):
        key = (r["session_id"], r["trial_index"])
        answers.setdefault(key, {})[r["question_id"]] = (r["value"], r["rt_ms"])
    return answers


def _answer_cells(
    given: dict[str, tuple[str | None, float | None]],
    ids: list[str],
    types: dict[str, str],
    where: tuple[str, int],
) -> dict[str, Any]:
    """`q_<id>` and `rt_<id>_ms` of each question in `ids` (empty when not answered); an
    answer its type cannot export (a Likert rating of 3.5) is refused naming its row."""
    cells: dict[str, Any] = {}
    for qid in ids:
        value, rt = given.get(qid, (None, None))
        answer, rt_column = spec.question_columns(qid)
        try:
            cells[answer] = _export_value(types[qid], value)
        except ValueError:
            session_id, trial_index = where
            trial = "end-of-study" if trial_index == END_INDEX else f"trial {trial_index}"
            raise StoreError(
                f"responses row (session {session_id}, {trial}, question {qid}): stored "
                f"{value!r} is not a {types[qid]} answer ({answer}); nothing was exported. "
                "The store never writes such a value: the row was edited (uxlab verify names "
                "every such answer and what else changed)"
            ) from None
        cells[rt_column] = rt
    return cells


def read_trials(
    conn: Connection, study: StudyColumns, answers: Answers
) -> tuple[Table, dict[tuple[str, int], dict[str, Any]]]:
    """trials.csv, and the rows of trials stored before the fidelity columns were kept (to
    be filled from their chunk events)."""
    columns = (
        BASE_COLUMNS
        + study.factors
        + AFTER_FACTOR_COLUMNS
        + FIDELITY_COLUMNS
        + [c for q in study.trial_questions for c in spec.question_columns(q)]
        + TAIL_COLUMNS
    )
    rows = []
    optional = kind_columns()
    unmeasured: dict[tuple[str, int], dict[str, Any]] = {}  # stored before fidelity
    for r in conn.execute(
        """
        SELECT st.study_id, s.study_sha256, t.session_id, s.participant, t.trial_index,
               t.block, t.practice, t.condition_id, t.levels, t.replay_id, t.seed,
               t.outcome, t.t_abandon_ms, t.shown_first_ms, t.shown_last_ms,
               t.scheduled_end_ms, t.attention, t.attention_ok, s.pilot, s.simulated,
               t.timings, t.schedule_sha256, s.environment
        FROM trials t JOIN sessions s ON s.session_id = t.session_id
             JOIN studies st ON st.sha256 = s.study_sha256
        ORDER BY s.created_at, s.session_id, t.trial_index
        """
    ):
        levels = json.loads(r["levels"])
        row: dict[str, Any] = {c: r[c] for c in BASE_COLUMNS}
        if _shown_without_stream(
            r["attention"], r["outcome"], r["shown_first_ms"], r["scheduled_end_ms"]
        ):
            levels, row["condition_id"] = {}, ATTENTION_CONDITION  # no latency was shown
        row.update({f: levels.get(f) for f in study.factors})
        row.update({c: r[c] for c in AFTER_FACTOR_COLUMNS})
        if r["outcome"] == "running":
            row["outcome"] = "interrupted"
        key = (r["session_id"], r["trial_index"])
        row.update(_answer_cells(answers.get(key, {}), study.trial_questions, study.types, key))
        row["attention_check"] = r["attention"]
        row["attention_ok"] = r["attention_ok"] if r["attention"] else None
        row["pilot"], row["simulated"] = r["pilot"], r["simulated"]
        extra = json.loads(r["timings"]) if r["timings"] else {}
        for group in optional:
            if any(c in extra for c in group):
                row.update({c: extra.get(c) for c in group})
        row.update({c: extra.get(c) for c in FIDELITY_COLUMNS})
        if r["simulated"] and not _through_ui(r["environment"]):
            row.update(dict.fromkeys(UNMEASURED_WHEN_SIMULATED))  # stored as 0 before
        if "n_chunks" not in extra and r["outcome"] != "running":
            unmeasured[key] = row
        rows.append(row)
    columns = _with_optional_groups(columns, rows)
    reruns = read_reruns(conn)
    if reruns:
        columns = [*columns, *RERUN_COLUMNS]
        for row in rows:
            row.update(reruns.get((row["session_id"], row["trial_index"]), {}))
            for c in RERUN_COLUMNS:
                row.setdefault(c, None)
    return (columns, rows), unmeasured


def _through_ui(environment: Any) -> bool:
    """The session's stored environment says it ran through the real app (real clock)."""
    try:
        env = json.loads(environment) if isinstance(environment, str) else environment
    except ValueError:
        return False
    return isinstance(env, dict) and bool(env.get("through_ui"))


def _with_optional_groups(columns: list[str], rows: list[dict[str, Any]]) -> list[str]:
    """`columns` with each optional group some row has, after `scheduled_end_ms` (the
    other rows get the group's cells empty)."""
    at = columns.index("scheduled_end_ms") + 1
    for group in kind_columns():
        if any(group[0] in row for row in rows):
            columns = [*columns[:at], *group, *columns[at:]]
            at += len(group)
            for row in rows:
                for c in group:
                    row.setdefault(c, None)
    return columns


def _shown_without_stream(
    attention: Any, outcome: str, shown_first_ms: Any, scheduled_end_ms: Any
) -> bool:
    """An attention check shown on its own screen (nothing scheduled, nothing streamed)."""
    return (
        bool(attention)
        and outcome == "completed"
        and shown_first_ms is None
        and (scheduled_end_ms is None)
    )


def read_reruns(conn: Connection) -> dict[tuple[str, int], dict[str, Any]]:
    """(session_id, trial_index) -> its `RERUN_COLUMNS` cells."""
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for r in conn.execute(
        "SELECT session_id, trial_index, of_index, reason FROM requeued ORDER BY 1, 2"
    ):  # a re-run's own reason wins over its replacement's (should it be replaced too)
        sid, of = r["session_id"], r["of_index"]
        out.setdefault((sid, r["trial_index"]), {}).update(rerun_of=of, rerun_reason=r["reason"])
        replaced = out.setdefault((sid, of), {})
        replaced["rerun_as"] = r["trial_index"]
        replaced.setdefault("rerun_reason", r["reason"])
    return out


def read_events(conn: Connection) -> Table:
    """events.csv: every event in stored order."""
    rows = [
        {c: r[c] for c in EVENT_COLUMNS}
        for r in conn.execute(
            "SELECT e.session_id, e.trial_index, e.t_ms, e.kind, e.data FROM events e "
            "JOIN sessions s ON s.session_id = e.session_id "
            "ORDER BY s.created_at, e.session_id, e.trial_index, e.seq"
        )
    ]
    return EVENT_COLUMNS, rows


def _fidelity_from_events(
    rows: dict[tuple[str, int], dict[str, Any]], events: list[dict[str, Any]]
) -> None:
    """Fill the fidelity columns of trials stored without them from their `chunk` events
    (only events that say how many characters they showed count)."""
    if not rows:
        return
    chunks: dict[tuple[str, int], list[dict[str, Any]]] = {}
    for e in events:
        key = (e["session_id"], e["trial_index"])
        if e["kind"] == "chunk" and key in rows:
            data = json.loads(e["data"]) if e["data"] else {}
            if "n_chars" in data:
                chunks.setdefault(key, []).append(data)
    for key, records in chunks.items():
        fidelity = trial_fidelity(records)
        rows[key].update({c: v for c, v in fidelity.items() if v is not None})


def read_sessions(
    conn: Connection, study: StudyColumns, answers: Answers
) -> tuple[Table, dict[str, Any]]:
    """sessions.csv, and each adaptive session's stored procedure state (by session id)."""
    rows = []
    env_keys: list[str] = []
    adaptive_keys: list[str] = []
    posteriors: dict[str, Any] = {}
    for r in conn.execute(
        """
        SELECT s.session_id, s.participant, p.number AS participant_number, s.group_id,
               st.study_id, s.study_sha256, s.seed, s.state, s.pilot, s.simulated,
               s.resumed_count, s.created_at, s.updated_at, s.plan, s.environment,
               (SELECT COUNT(*) FROM trials t WHERE t.session_id = s.session_id)
                   AS n_trials_done,
               s.adaptive
        FROM sessions s JOIN participants p ON p.participant = s.participant
             JOIN studies st ON st.sha256 = s.study_sha256
        ORDER BY s.created_at, s.session_id
        """
    ):
        row = {c: r[c] for c in STORED_SESSION_COLUMNS}
        row["n_trials_planned"] = len(json.loads(r["plan"]))
        row["n_trials_done"] = r["n_trials_done"]
        given = answers.get((r["session_id"], END_INDEX), {})
        row.update(
            _answer_cells(given, study.end_questions, study.types, (r["session_id"], END_INDEX))
        )
        if r["adaptive"]:
            state = json.loads(r["adaptive"])
            posteriors[r["session_id"]] = {"participant": r["participant"], **state}
            cells = adaptive_columns(state)
            adaptive_keys = _union(adaptive_keys + list(cells))
            row.update(cells)
        env = _flatten(json.loads(r["environment"]), "env")
        env_keys = _union(env_keys + list(env))
        row.update(env)
        rows.append(row)
    session_columns = (
        SESSION_COLUMNS
        + [c for q in study.end_questions for c in spec.question_columns(q)]
        + adaptive_keys
        + env_keys
    )
    return (session_columns, rows), posteriors


def adaptive_columns(state: dict[str, Any]) -> dict[str, Any]:
    """The flat sessions.csv cells of one session's stored adaptive state (no arrays)."""
    out: dict[str, Any] = {}
    factor = state.get("factor", "factor")
    for track, t in state.get("tracks", {}).items():
        where = "" if track == "all" else "_at_" + _slug(track)
        for suffix, key in ADAPTIVE_FIELDS.items():
            out[f"adaptive_{factor}{where}_{suffix}"] = t.get(key)
        if "reversals_ms" in t:
            n_rev: int | None = len(t["reversals_ms"])
        elif "staircases" in t:
            n_rev = sum(len(st.get("reversals_ms", [])) for st in t["staircases"])
        else:
            n_rev = None  # QUEST+ has no reversals
        out[f"adaptive_{factor}{where}_reversals"] = n_rev
    return out


def _slug(track: str) -> str:
    return "".join(ch if ch.isalnum() or ch == "_" else "_" for ch in track.replace("&", "_"))


def read_runs(conn: Connection) -> Table:
    """runs.csv: every start and resume with its environment (inside the read snapshot)."""
    query = (
        "SELECT r.session_id, s.participant, r.run, r.kind, r.started_at, r.next_index, "
        "r.environment FROM session_runs r JOIN sessions s ON s.session_id = r.session_id "
        "ORDER BY s.created_at, r.session_id, r.run"
    )
    rows: list[dict[str, Any]] = []
    env_keys: list[str] = []
    for r in conn.execute(query):
        row = {c: r[c] for c in RUN_COLUMNS}
        env = _flatten(json.loads(r["environment"]), "env")
        env_keys = _union(env_keys + list(env))
        row.update(env)
        rows.append(row)
    return RUN_COLUMNS + env_keys, rows


def _union(names: list[str]) -> list[str]:
    return list(dict.fromkeys(names))


def _flatten(d: dict[str, Any], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in d.items():
        name = f"{prefix}_{key}"
        if isinstance(value, dict):
            out.update(_flatten(value, name))
        elif isinstance(value, (list, tuple)):  # e.g. timing warnings: sentences, kept apart
            out[name] = " | ".join(str(v) for v in value)
        else:
            out[name] = value
    return out


def _export_value(qtype: str, value: str | None) -> Any:
    """A stored answer as its `q_<id>` cell (its type's `export_value`; as stored when the
    type is not known)."""
    if value is None or qtype not in REGISTRY:
        return value
    return REGISTRY[qtype].export_value(value)
