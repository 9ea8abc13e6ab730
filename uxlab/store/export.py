"""Export a study database to the trial table (README contract 2) and its companions.

`export_db(db, out_dir, fmt="csv")` writes, into `out_dir`:

- `trials.csv`   one row per trial begun, tidy (no JSON in cells): the contract's columns in
                 order, one column per factor and one `q_<id>`/`rt_<id>_ms` pair per
                 per-trial question, and the playback-fidelity columns
                 (`FIDELITY_COLUMNS`). yes/no answers are 1 (yes) / 0 (no); a trial still in
                 flight (its process died and it was never resumed) is exported as
                 `interrupted`. A trial queued again at the end adds `RERUN_COLUMNS`.
- `events.csv`   `session_id, trial_index, t_ms, kind, data` (data: the event's other fields
                 as compact JSON), in stored order. A trial's events have `t_ms` from its
                 send; session events have `trial_index` -1 and `t_ms` from the start or
                 resume they happened in: `terminal` (the size at each start and resume,
                 `{"cols", "rows", "resumed"}`) and `resize` (`{"cols", "rows"}`, also among
                 a trial's events when the terminal was resized during it).
                 An attention check shown on its own screen has no stream: its trial row has
                 empty factor columns and `condition_id` `attention-check`.
- `sessions.csv` one row per session: state, pilot/simulated flags, resumed count, trial
                 counts, end-of-study answers (`q_<id>`) and the environment flattened into
                 `env_<key>` columns.
                 With an adaptive factor, also the procedure's final estimate per session
                 and track (`ADAPTIVE_FIELDS`: `adaptive_<factor>_estimate`, `_ci_low`,
                 `_ci_high`, `_target`, `_procedure`, `_n_trials`, `_reversals`; a track
                 other than "all" adds `_at_<levels>` after the factor).
- `runs.csv`     one row per start or resume of a session (`RUN_COLUMNS`): when, the trial
                 it began with, and that run's environment and timing warnings as `env_<key>`
                 columns (`sessions.csv` keeps the first run's).
- `adaptive_posteriors.json` (adaptive studies only) every session's stored procedure state,
                 arrays included: the QUEST+ posterior, the staircases' reversal levels.
- `study.json`   the study's factors, conditions, questions (type, scale, labels,
                 `acceptable_at`, `yes_means`), design and base profile, and every study
                 version found.

CSV cells are spreadsheet-safe: text starting with `= + - @`, a tab or a carriage return
(a formula to Excel, LibreOffice, Google Sheets) gets a leading `'`; numbers never do; a
cell holding a bare carriage return is quoted (`analysis.spreadsheet_cells`; `raw_cells`
writes the values unchanged). With `fmt="parquet"` the four tables are written as
`.parquet` (needs pyarrow). The export reads one consistent snapshot through a read-only
connection; the only write it makes is one `export` entry in the audit log (with the
SHA-256 of every file written), so it can be rerun at any time, also while a study runs.
"""

from __future__ import annotations

import hashlib
import json
import sqlite3
from pathlib import Path
from typing import Any

from analysis.spreadsheet_cells import write_safe_csv
from uxlab.fidelity import FIDELITY_COLUMNS as _FIDELITY_COLUMNS
from uxlab.fidelity import trial_fidelity
from uxlab.outcomes import Outcome
from uxlab.store.backend import Connection
from uxlab.store.dialect import db_name
from uxlab.store.open_checks import open_read_only, reading
from uxlab.store.schema import StoreError

BASE_COLUMNS = [
    "study_id",
    "study_sha256",
    "session_id",
    "participant",
    "trial_index",
    "block",
    "practice",
    "condition_id",
]
AFTER_FACTOR_COLUMNS = [
    "replay_id",
    "seed",
    "schedule_sha256",
    "outcome",
    "t_abandon_ms",
    "shown_first_ms",
    "shown_last_ms",
    "scheduled_end_ms",
]
TAIL_COLUMNS = ["attention_check", "attention_ok", "pilot", "simulated"]
ATTENTION_CONDITION = "attention-check"
"""`condition_id` of an attention check shown on its own screen: no stream, so no latency
and empty factor columns (a check that streamed, as before, keeps its levels)."""


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


CHAIN_COLUMNS = ["e2e_ms", "abandon_step", "paused_ms"]
"""Agent-chain trials only (from the trial's `timings`): measured end of the answer, the
step (0-based) running when the participant gave up, and the time mid-chain questions held
the chain (studies with `[chain] ask_after_steps`)."""
LIVE_COLUMNS = ["violations_n", "violation_max_ms", "violation_sum_ms"]
"""Live-study trials only (from `timings`): chunks shown late because the live model was
slower than the schedule, and the largest and summed lateness (ms)."""
OPTIONAL_COLUMNS = (CHAIN_COLUMNS, LIVE_COLUMNS)
RERUN_COLUMNS = ["rerun_of", "rerun_reason", "rerun_as"]
"""Only when a session queued a trial again (`requeued`, schema version 5), at the end: on a
re-run, the trial_index of the attempt it replaces and why (`interrupted`, ...); on the
replaced attempt, the trial_index of its re-run (and the same reason)."""
FIDELITY_COLUMNS = list(_FIDELITY_COLUMNS)
"""Every trial: how faithfully its stream was shown (`uxlab.fidelity`), from the trial's
`timings`; for a trial stored before these were kept, computed from its `chunk` events
(then `load_1m` and `fidelity_flag` stay empty)."""
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


def _read_reruns(conn: Connection) -> dict[tuple[str, int], dict[str, Any]]:
    """(session_id, trial_index) -> its `RERUN_COLUMNS` cells; empty before schema 5."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "requeued" not in tables:
        return {}
    out: dict[tuple[str, int], dict[str, Any]] = {}
    for sid, idx, of, reason in conn.execute(
        "SELECT session_id, trial_index, of_index, reason FROM requeued ORDER BY 1, 2"
    ):  # a re-run's own reason wins over its replacement's (should it be replaced too)
        out.setdefault((sid, idx), {}).update(rerun_of=of, rerun_reason=reason)
        replaced = out.setdefault((sid, of), {})
        replaced["rerun_as"] = idx
        replaced.setdefault("rerun_reason", reason)
    return out


def read_tables(db: str | Path) -> dict[str, Any]:
    """The export's content from one snapshot: rows of each table and the study summary."""
    with reading(db_name(db)):  # a damaged stored value: one line, not a traceback
        return _read_tables(db)


def _read_tables(db: str | Path) -> dict[str, Any]:
    conn = open_read_only(db)
    try:
        conn.execute("BEGIN")  # one read snapshot for every query below
        studies = conn.execute(
            "SELECT sha256, study_id, version, summary FROM studies ORDER BY registered_at, rowid"
        ).fetchall()
        if not studies:
            raise StoreError(f"{db}: no study registered yet (nothing to export)")
        summaries = {sha: json.loads(s) for sha, _, _, s in studies}
        latest = summaries[studies[-1][0]]
        factors = _union([f["name"] for s in summaries.values() for f in s["factors"]])
        trial_qs = _union(
            [q["id"] for s in summaries.values() for q in s["questions"] if q["when"] == "trial"]
        )
        step_qs = {  # mid-chain questions: one column per question and step, `<id>_s<step>`
            f"{q['id']}_s{step}": q["type"]
            for s in summaries.values()
            for q in s["questions"]
            if q["when"] == "step"
            for step in q.get("after_steps", [])
        }
        trial_qs = _union(trial_qs + list(step_qs))
        end_qs = _union(
            [q["id"] for s in summaries.values() for q in s["questions"] if q["when"] == "end"]
        )
        qtypes = {q["id"]: q["type"] for s in summaries.values() for q in s["questions"]}
        qtypes.update(step_qs)

        answers: dict[tuple[str, int], dict[str, tuple[str | None, float | None]]] = {}
        for sid, idx, qid, value, rt in conn.execute(
            "SELECT session_id, trial_index, question_id, value, rt_ms FROM responses"
        ):
            answers.setdefault((sid, idx), {})[qid] = (value, rt)

        trial_columns = (
            BASE_COLUMNS
            + factors
            + AFTER_FACTOR_COLUMNS
            + FIDELITY_COLUMNS
            + [c for q in trial_qs for c in (f"q_{q}", f"rt_{q}_ms")]
            + TAIL_COLUMNS
        )
        trial_rows = []
        unmeasured: dict[tuple[str, int], dict[str, Any]] = {}  # stored before fidelity
        trial_cols = {c[1] for c in conn.execute("PRAGMA table_info(trials)")}
        schedule_sha = "t.schedule_sha256" if "schedule_sha256" in trial_cols else "NULL"  # v4
        for r in conn.execute(
            f"""
            SELECT st.study_id, s.study_sha256, t.session_id, s.participant, t.trial_index,
                   t.block, t.practice, t.condition_id, t.levels, t.replay_id, t.seed,
                   t.outcome, t.t_abandon_ms, t.shown_first_ms, t.shown_last_ms,
                   t.scheduled_end_ms, t.attention, t.attention_ok, s.pilot, s.simulated,
                   t.timings, {schedule_sha}
            FROM trials t JOIN sessions s ON s.session_id = t.session_id
                 JOIN studies st ON st.sha256 = s.study_sha256
            ORDER BY s.created_at, s.session_id, t.trial_index
            """
        ):
            levels = json.loads(r[8])
            row: dict[str, Any] = dict(zip(BASE_COLUMNS, r[:8], strict=True))
            if _shown_without_stream(r[16], r[11], r[13], r[15]):
                levels, row["condition_id"] = {}, ATTENTION_CONDITION  # no latency was shown
            row.update({f: levels.get(f) for f in factors})
            outcome = "interrupted" if r[11] == "running" else r[11]
            row.update(
                dict(
                    zip(AFTER_FACTOR_COLUMNS, (r[9], r[10], r[21], outcome, *r[12:16]), strict=True)
                )
            )
            given = answers.get((r[2], r[4]), {})
            for q in trial_qs:
                value, rt = given.get(q, (None, None))
                row[f"q_{q}"] = _export_value(qtypes[q], value)
                row[f"rt_{q}_ms"] = rt
            row["attention_check"] = r[16]
            row["attention_ok"] = r[17] if r[16] else None
            row["pilot"], row["simulated"] = r[18], r[19]
            extra = json.loads(r[20]) if r[20] else {}
            for group in OPTIONAL_COLUMNS:
                if any(c in extra for c in group):
                    row.update({c: extra.get(c) for c in group})
            row.update({c: extra.get(c) for c in FIDELITY_COLUMNS})
            if "n_chunks" not in extra and r[11] != "running":
                unmeasured[(r[2], r[4])] = row
            trial_rows.append(row)
        at = trial_columns.index("scheduled_end_ms") + 1
        for group in OPTIONAL_COLUMNS:
            if any(group[0] in row for row in trial_rows):
                trial_columns = [*trial_columns[:at], *group, *trial_columns[at:]]
                at += len(group)
                for row in trial_rows:
                    for c in group:
                        row.setdefault(c, None)

        reruns = _read_reruns(conn)
        if reruns:
            trial_columns = [*trial_columns, *RERUN_COLUMNS]
            for row in trial_rows:
                row.update(reruns.get((row["session_id"], row["trial_index"]), {}))
                for c in RERUN_COLUMNS:
                    row.setdefault(c, None)

        event_rows = [
            dict(zip(EVENT_COLUMNS, r, strict=True))
            for r in conn.execute(
                "SELECT e.session_id, e.trial_index, e.t_ms, e.kind, e.data FROM events e "
                "JOIN sessions s ON s.session_id = e.session_id "
                "ORDER BY s.created_at, e.session_id, e.trial_index, e.seq"
            )
        ]
        _fidelity_from_events(unmeasured, event_rows)

        columns = {c[1] for c in conn.execute("PRAGMA table_info(sessions)")}
        adaptive = "s.adaptive" if "adaptive" in columns else "NULL"  # schema version 1
        session_rows = []
        env_keys: list[str] = []
        adaptive_keys: list[str] = []
        posteriors: dict[str, Any] = {}
        for r in conn.execute(
            f"""
            SELECT s.session_id, s.participant, p.number, s.group_id, st.study_id,
                   s.study_sha256, s.seed, s.state, s.pilot, s.simulated, s.resumed_count,
                   s.created_at, s.updated_at, s.plan, s.environment,
                   (SELECT COUNT(*) FROM trials t WHERE t.session_id = s.session_id),
                   {adaptive}
            FROM sessions s JOIN participants p ON p.participant = s.participant
                 JOIN studies st ON st.sha256 = s.study_sha256
            ORDER BY s.created_at, s.session_id
            """
        ):
            row = dict(zip(SESSION_COLUMNS[:13], r[:13], strict=True))
            row["n_trials_planned"] = len(json.loads(r[13]))
            row["n_trials_done"] = r[15]
            given = answers.get((r[0], -1), {})
            for q in end_qs:
                value, rt = given.get(q, (None, None))
                row[f"q_{q}"] = _export_value(qtypes[q], value)
                row[f"rt_{q}_ms"] = rt
            if r[16]:
                state = json.loads(r[16])
                posteriors[r[0]] = {"participant": r[1], **state}
                cells = adaptive_columns(state)
                adaptive_keys = _union(adaptive_keys + list(cells))
                row.update(cells)
            env = _flatten(json.loads(r[14]), "env")
            env_keys = _union(env_keys + list(env))
            row.update(env)
            session_rows.append(row)
        session_columns = (
            SESSION_COLUMNS
            + [c for q in end_qs for c in (f"q_{q}", f"rt_{q}_ms")]
            + adaptive_keys
            + env_keys
        )
        runs = _read_runs(conn)
        conn.execute("COMMIT")
    finally:
        conn.close()
    study_json = dict(latest)
    study_json["versions"] = [
        {"sha256": sha, "study_id": sid, "version": v} for sha, sid, v, _ in studies
    ]
    study_json["encoding"] = {
        "yesno": "1 = yes, 0 = no",
        "likert": "1..scale",
        "outcome": [o.value for o in Outcome],
    }
    return {
        "trials": (trial_columns, trial_rows),
        "events": (EVENT_COLUMNS, event_rows),
        "sessions": (session_columns, session_rows),
        "runs": runs,
        "study": study_json,
        "adaptive": posteriors,
    }


TABLES = ("trials", "events", "sessions", "runs")


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


def _read_runs(conn: Connection) -> tuple[list[str], list[dict[str, Any]]]:
    """runs.csv: every start and resume with its environment (inside the read snapshot)."""
    has_runs = conn.execute(
        "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'session_runs'"
    ).fetchone()
    query = (
        "SELECT r.session_id, s.participant, r.run, r.kind, r.started_at, r.next_index, "
        "r.environment FROM session_runs r JOIN sessions s ON s.session_id = r.session_id "
        "ORDER BY s.created_at, r.session_id, r.run"
        if has_runs  # schema version 3; before it, only the first run was kept
        else "SELECT session_id, participant, 0, 'start', created_at, 0, environment "
        "FROM sessions ORDER BY created_at, session_id"
    )
    rows: list[dict[str, Any]] = []
    env_keys: list[str] = []
    for r in conn.execute(query):
        row = dict(zip(RUN_COLUMNS, r[:6], strict=True))
        env = _flatten(json.loads(r[6]), "env")
        env_keys = _union(env_keys + list(env))
        row.update(env)
        rows.append(row)
    return RUN_COLUMNS + env_keys, rows


class Exported(dict[str, Path]):
    """The files written (`trials`, `events`, `sessions`, `runs`, `study`, and for an
    adaptive study `adaptive_posteriors` -> path), and `rows`."""

    rows: dict[str, int]


def export_db(
    db: str | Path, out_dir: str | Path, fmt: str = "csv", raw_cells: bool = False
) -> Exported:
    """Write trials, events, sessions and study.json to `out_dir`; returns the paths.

    CSV cells that a spreadsheet would run as a formula get a leading `'` unless
    `raw_cells` (see `analysis.spreadsheet_cells`; `load_trial_table` takes it off again).
    """
    if fmt not in ("csv", "parquet"):
        raise StoreError(f"format {fmt!r}: use csv or parquet")
    content = read_tables(db)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    written = Exported()
    for name in TABLES:
        columns, rows = content[name]
        path = out / f"{name}.{fmt}"
        if fmt == "csv":
            _write_csv(path, columns, rows, raw_cells)
        else:
            _write_parquet(path, columns, rows)
        written[name] = path
    study_path = out / "study.json"
    _atomic_write(study_path, json.dumps(content["study"], indent=2, ensure_ascii=False) + "\n")
    written["study"] = study_path
    if content["adaptive"]:
        posteriors_path = out / "adaptive_posteriors.json"
        _atomic_write(posteriors_path, json.dumps(content["adaptive"]) + "\n")
        written["adaptive_posteriors"] = posteriors_path
    digests = {name: hashlib.sha256(p.read_bytes()).hexdigest() for name, p in written.items()}
    counts = {name: len(content[name][1]) for name in TABLES}
    _record_export(db, digests, counts)
    written.rows = counts
    return written


def _record_export(db: str | Path, digests: dict[str, str], counts: dict[str, int]) -> None:
    from uxlab.store.store import Store, sha256_json

    try:
        store = Store.open(db)
    except (sqlite3.OperationalError, StoreError):
        return  # a read-only copy: nothing to append to
    try:
        store.record_export(sha256_json(digests), {"files": digests, "rows": counts})
    except sqlite3.OperationalError:
        pass
    finally:
        store.close()


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
    if value is None:
        return None
    if qtype == "yesno":
        return 1 if value == "yes" else 0
    if qtype == "likert":
        return int(value)
    if qtype == "slider":
        return float(value)
    return value


def _atomic_write(path: Path, text: str) -> None:
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)


def _write_csv(
    path: Path, columns: list[str], rows: list[dict[str, Any]], raw_cells: bool = False
) -> None:
    """Spreadsheet-safe cells unless `raw_cells` (`analysis.spreadsheet_cells`)."""
    tmp = path.with_suffix(path.suffix + ".tmp")
    cells = ([("" if (v := row.get(c)) is None else v) for c in columns] for row in rows)
    write_safe_csv(tmp, columns, cells, raw=raw_cells)
    tmp.replace(path)


def _write_parquet(path: Path, columns: list[str], rows: list[dict[str, Any]]) -> None:
    try:
        import pyarrow as pa  # type: ignore[import-untyped]
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise StoreError("--format parquet needs pyarrow: uv sync --extra parquet") from None
    table = pa.table({c: [row.get(c) for row in rows] for c in columns})
    tmp = path.with_suffix(path.suffix + ".tmp")
    pq.write_table(table, tmp)
    tmp.replace(path)
