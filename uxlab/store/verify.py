"""Prove a study database reproducible: rebuild every trial list and stimulus and compare.

`verify_db(db, study_file=None)` reads the database read-only and, for every study it holds:

1. The study text: the one stored in the database. With `study_file`, that file's SHA-256
   is checked against the stored ones first ("changed since the study ran" when it is none
   of them); the stored text is then placed at the file's location, so its corpus is found
   relative to it. Without it, the text is placed where the study was run from (its
   `location`, relative to the current folder).
2. The stimulus files: each file's SHA-256 against the one kept at registration, so a
   changed recording is named as such rather than as a vague schedule mismatch.
3. Every session: the trial list re-derived from (study, participant, participant number,
   seed, group) by `design_trials`, compared with the stored plan (its SHA-256, then row by
   row), and every trial row begun compared with it (an adaptive level is re-chosen from
   the trials committed before it, as the session did).
4. Every trial's schedule: rebuilt from the corpus (`rebuild_schedule`) and its SHA-256
   compared with the one stored when the trial began (for live trials, the profile, seed
   and source id only: the text came from the model).
5. Every trial's stored events and timings, once its schedule is the one played: each chunk
   event against the schedule's chunk it claims, the timings against the events
   (`uxlab.store.verify_events`; live trials only as far as uxlab drew their timing).
6. The audit log's hash chain (`read_audit_chain`): the first entry that does not follow
   from the ones before it is named (changed, removed or inserted before it); its head (the
   last entry's chain value) is printed, to anchor elsewhere and check with `expect_head`.
7. The stored data against the audit log (`uxlab.store.verify_audit`): every committed
   trial's digest recomputed from its stored row, answers and events, naming the field that
   changed; trials and sessions deleted or inserted; each session's finish and end-of-study
   answers; every answer against its question; the audit table's append-only triggers.

The result is a `VerifyReport`; `format_report` prints it at 80 columns.
"""

from __future__ import annotations

import dataclasses
import difflib
import hashlib
import json
import textwrap
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from uxlab.errors import UxlabError
from uxlab.player import Schedule
from uxlab.store.audit import AuditChain, read_audit_chain
from uxlab.store.backend import Connection
from uxlab.store.dialect import db_name, is_postgres
from uxlab.store.open_checks import open_read_only, reading
from uxlab.store.records import TIMING_COLUMNS
from uxlab.store.store import sha256_json
from uxlab.store.verify_audit import (
    AuditLedger,
    SessionRow,
    check_audit_triggers,
    check_missing_sessions,
    check_session,
)
from uxlab.store.verify_events import EVENT_KINDS, StoredTrial, event_problems
from uxlab.study.adaptive import AdaptivePlan, CommittedTrial
from uxlab.study.design import Trial, design_trials
from uxlab.study.loading import parse_study
from uxlab.study.reproduce import (
    file_sha256,
    rebuild_schedule,
    schedule_sha256,
    stimulus_files,
)
from uxlab.study.spec import Study, condition_id
from uxlab.study.stimulus import trial_kind

ROW_FIELDS = ("block", "practice", "kind", "condition_id", "levels", "replay_id", "seed")
"""Trial-row fields compared with the re-derived trial (plus whether it is an attention check)."""
MAX_LISTED = 25
"""Mismatch lines printed in full; the rest are counted."""


@dataclass
class Mismatch:
    """One thing that could not be reproduced: where (participant, trial) and what differs."""

    what: str
    participant: str | None = None
    trial_index: int | None = None
    session_id: str | None = None

    def line(self) -> str:
        where = []
        if self.participant is not None:
            where.append(self.participant)
        if self.trial_index is not None:
            where.append(f"trial {self.trial_index}")
        return (" ".join(where) + ": " if where else "") + self.what


@dataclass
class VerifyReport:
    """What `verify_db` checked and every mismatch it found."""

    db: Path
    study_file: Path | None = None
    studies: list[str] = field(default_factory=list)
    """One line per stored study: id, version, SHA-256 and where its corpus was read."""
    n_files: int = 0
    n_sessions: int = 0
    n_trials: int = 0
    n_schedules: int = 0
    n_live: int = 0
    """Live trials among `n_schedules`: only their profile, seed and source were compared."""
    n_unchecked: int = 0
    """Trials stored without the SHA-256 of their schedule (`begin_trial` was not given one)."""
    n_event_trials: int = 0
    """Trials over (not in flight) whose stored events and timings were compared with the
    schedule rebuilt for them (`uxlab.store.verify_events`)."""
    n_event_live: int = 0
    """Live trials among `n_event_trials`: checked only as far as uxlab drew their timing."""
    n_chunk_events: int = 0
    """Stored chunk events among them."""
    n_in_flight: int = 0
    """Trials begun and not over (a session cut off): no events stored yet to compare."""
    n_event_skipped: int = 0
    """Trials whose events were not compared: their rebuilt schedule is not the one played."""
    n_audit: int = 0
    """Audit log entries whose hash chain was checked."""
    audit_head: str = ""
    """The last audit entry's chain value (empty: no entries)."""
    expect_head: str | None = None
    """The head the caller expects the log to lead to (`--expect-head`), or None."""
    n_digests: int = 0
    """Committed trials whose digest was recomputed from their stored rows."""
    ledger: AuditLedger = field(default_factory=AuditLedger, repr=False)
    mismatches: list[Mismatch] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.mismatches


def _text_sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _file_text_sha(path: Path) -> str | None:
    try:
        return _text_sha256(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError):
        return None


def verify_db(
    db: str | Path,
    study_file: str | Path | None = None,
    cwd: str | Path | None = None,
    expect_head: str | None = None,
) -> VerifyReport:
    """Rebuild every trial list and schedule of `db` and compare (see the module docstring).

    `cwd` is the folder a stored study `location` is relative to (default: the current one).
    `expect_head`: an audit chain head printed by an earlier verify (all 64 hex digits, or
    at least the first 12); the log must still lead to it. Raises UxlabError when the
    database or the study file cannot be read at all.
    """
    report = VerifyReport(db_name(db), None if study_file is None else Path(study_file))
    report.expect_head = None if expect_head is None else _checked_head(expect_head)
    conn = open_read_only(db)
    try:
        with reading(db_name(db)):  # a damaged stored value: one line, not a traceback
            conn.execute("BEGIN")
            _verify(conn, report, Path.cwd() if cwd is None else Path(cwd))
            conn.execute("COMMIT")
    finally:
        conn.close()
    return report


def _checked_head(text: str) -> str:
    head = text.strip().lower()
    if not 12 <= len(head) <= 64 or any(c not in "0123456789abcdef" for c in head):
        raise UxlabError(
            f"--expect-head {text!r}: give the audit chain head `uxlab verify` printed "
            "(64 hex digits, or at least the first 12)"
        )
    return head


def _verify(conn: Connection, report: VerifyReport, cwd: Path) -> None:
    _check_audit(conn, report)
    _verify_studies(conn, report, cwd)
    present = {r[0] for r in conn.execute("SELECT session_id FROM sessions")}
    check_missing_sessions(report.ledger, present, lambda what: report.mismatches.append(
        Mismatch(what)
    ))  # fmt: skip


def _check_audit(conn: Connection, report: VerifyReport) -> None:
    """Recompute the audit log's hash chain; name its first entry that does not follow;
    check its head against the expected one and that the table still refuses changes."""
    chain = read_audit_chain(conn)
    report.n_audit, report.audit_head = len(chain.entries), chain.head
    report.ledger = AuditLedger.of(chain)
    bad = chain.broken
    if bad is not None:
        report.mismatches.append(Mismatch(
            f"audit log entry {bad['seq']} ({bad['action']!r} at {bad['at']}) breaks the hash "
            "chain: it was changed, or an entry before it was removed or inserted"
        ))  # fmt: skip
    missing = check_audit_triggers(conn, is_postgres(report.db))
    if missing:
        report.mismatches.append(Mismatch(
            f"the audit table no longer refuses changes (trigger {', '.join(missing)} removed): "
            "its entries may have been edited or removed unseen; check the head against an "
            "anchored copy (--expect-head)"
        ))  # fmt: skip
    if report.expect_head is not None:
        _check_head(chain, report, report.expect_head)


def _check_head(chain: AuditChain, report: VerifyReport, expected: str) -> None:
    """The log must lead to `expected`: be it, or have it as an earlier entry's chain value
    (entries added since), with every entry up to it following from the ones before."""
    at = next(
        (n for n, e in enumerate(chain.entries) if str(e["chain"]).startswith(expected)), None
    )
    broken_at = None if chain.broken is None else chain.entries.index(chain.broken)
    if at is None or (broken_at is not None and broken_at <= at):
        report.mismatches.append(Mismatch(
            f"the audit log does not lead to the expected head {expected[:16]}…: it was "
            "rewritten, or cut before that entry"
        ))  # fmt: skip
    elif at == len(chain.entries) - 1:
        report.notes.append(f"the audit log's head is the expected one ({expected[:16]}…)")
    else:
        added = len(chain.entries) - 1 - at
        report.notes.append(
            f"the expected head {expected[:16]}… is audit entry {chain.entries[at]['seq']}: the "
            f"log leads to it unchanged, and {added} "
            + ("entry was" if added == 1 else "entries were")
            + " added since"
        )


def _verify_studies(conn: Connection, report: VerifyReport, cwd: Path) -> None:
    studies = conn.execute(
        "SELECT sha256, study_id, version, path, text, stimuli, location FROM studies "
        "ORDER BY registered_at, rowid"
    ).fetchall()
    if not studies:
        raise UxlabError(f"{report.db}: no study registered yet (nothing to verify)")
    if report.study_file is not None:
        _check_study_file(report, report.study_file, studies)
    for sha, sid, version, name, text, stimuli, location in studies:
        if report.study_file is not None:
            where: Path | None = report.study_file
        elif location is not None:
            where = cwd / location
        else:
            where = None
        label = f"study {sid} v{version} ({sha[:12]})"
        if where is None:
            report.mismatches.append(Mismatch(
                f"{label}: cannot tell where it was run from (its corpus is relative to the "
                f"study file {name}); pass --study FILE"
            ))  # fmt: skip
            continue
        shown = report.study_file if report.study_file is not None else location
        report.studies.append(f"{label}: the text stored in the database, placed at {shown}")
        if report.study_file is None and where.is_file() and _file_text_sha(where) != sha:
            report.notes.append(
                f"{location} has changed since the study ran (the stored text was checked; "
                "pass --study FILE to check a file)"
            )
        changed = _check_files(report, where, None if stimuli is None else json.loads(stimuli))
        try:
            study = parse_study(text, where)
        except UxlabError as exc:
            report.mismatches.append(Mismatch(f"{label} does not load here: {exc}"))
            continue
        if stimuli is not None:
            _check_added_files(report, study, json.loads(stimuli))
        for row in conn.execute(
            "SELECT s.session_id, s.participant, p.number, s.group_id, s.seed, s.plan, "
            "s.plan_sha256, s.state, s.pilot, s.simulated "
            "FROM sessions s JOIN participants p ON p.participant = s.participant "
            "WHERE s.study_sha256 = ? ORDER BY s.created_at, s.session_id",
            (sha,),
        ).fetchall():
            _check_session(conn, report, study, row, changed)


def _check_study_file(report: VerifyReport, path: Path, studies: list[tuple[Any, ...]]) -> None:
    if not path.is_file():
        raise UxlabError(f"{path}: no such study file")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise UxlabError(f"{path}: not UTF-8 ({exc.reason})") from None
    sha = _text_sha256(text)
    if any(s[0] == sha for s in studies):
        report.notes.append(f"{path} is the study file the database holds ({sha[:12]})")
        return
    stored_sha, sid, _v, _name, stored_text = studies[-1][:5]
    old, new = stored_text.splitlines(), text.splitlines()
    first = next(
        (i for i, (a, b) in enumerate(zip(old, new, strict=False)) if a != b),
        min(len(old), len(new)),
    )
    n_changed = sum(
        max(i2 - i1, j2 - j1)
        for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, old, new).get_opcodes()
        if tag != "equal"
    )
    report.mismatches.append(Mismatch(
        f"{path} changed since the study ran: its SHA-256 is {sha[:12]}, the database ran "
        f"study {sid} with {stored_sha[:12]} ({n_changed} line(s) differ, the first at line "
        f"{first + 1}); what follows checks the stored text, with the corpus found from "
        f"{path.name}'s folder"
    ))  # fmt: skip


def _check_files(
    report: VerifyReport, where: Path, stored: list[dict[str, Any]] | None
) -> set[str]:
    """Compare the stimulus files with their SHA-256 at registration; returns the ids of
    the trials' stimuli (`replay_id`s) whose files changed or are missing."""
    if stored is None:
        report.notes.append(
            "no stimulus-file SHA-256 stored with the study: recordings are checked "
            "through the rebuilt schedules only"
        )
        return set()
    changed: set[str] = set()
    base = where.parent
    for entry in stored:
        report.n_files += 1
        path = base / entry["path"]
        names = ", ".join(entry["ids"]) or entry["path"]
        if not path.is_file():
            report.mismatches.append(Mismatch(f"recording {names} is missing: {path} not found"))
        elif file_sha256(path) != entry["sha256"]:
            report.mismatches.append(
                Mismatch(f"recording {names} changed since the study ran ({entry['path']})")
            )
        else:
            continue
        changed.update(entry["ids"])
    return changed


def _check_added_files(report: VerifyReport, study: Study, stored: list[dict[str, Any]]) -> None:
    known = {e["path"] for e in stored}
    for entry in stimulus_files(study):
        if entry["path"] not in known:
            names = ", ".join(entry["ids"])
            report.mismatches.append(
                Mismatch(f"recording {names} was added since the study ran ({entry['path']})")
            )


def _check_session(
    conn: Connection,
    report: VerifyReport,
    study: Study,
    row: tuple[Any, ...],
    changed: set[str],
) -> None:
    """The session rebuilt from the study (`_check_plan_and_events`), then its rows against
    the audit log (`uxlab.store.verify_audit`); one line per trial."""
    session_id, participant, _n, _g, seed, _plan, plan_sha, state, pilot, simulated = row
    start = len(report.mismatches)
    report.n_sessions += 1
    _check_plan_and_events(conn, report, study, row[:7], changed)

    def mismatch(what: str, trial_index: int | None = None) -> None:
        report.mismatches.append(Mismatch(what, participant, trial_index, session_id))

    facts = SessionRow(session_id, state, seed, plan_sha, bool(pilot), bool(simulated))
    report.n_digests += check_session(conn, report.ledger, study, facts, mismatch)
    report.mismatches[start:] = _one_line_per_trial(report.mismatches[start:])


def _one_line_per_trial(found: list[Mismatch]) -> list[Mismatch]:
    """A trial's findings (its events against the schedule, against the audit log, its
    answers) joined into one line, in the order found."""
    out: list[Mismatch] = []
    by_trial: dict[int, Mismatch] = {}
    for m in found:
        first = None if m.trial_index is None else by_trial.get(m.trial_index)
        if first is None:
            out.append(dataclasses.replace(m))
            if m.trial_index is not None:
                by_trial[m.trial_index] = out[-1]
        else:
            first.what += "; " + m.what
    return out


def _check_plan_and_events(
    conn: Connection,
    report: VerifyReport,
    study: Study,
    row: tuple[Any, ...],
    changed: set[str],
) -> None:
    session_id, participant, number, group_id, seed, plan_json, plan_sha = row

    def mismatch(what: str, trial_index: int | None = None) -> None:
        report.mismatches.append(Mismatch(what, participant, trial_index, session_id))

    derived = _derive_plan(
        study, participant, number, group_id, seed, plan_json, plan_sha, mismatch
    )
    if derived is None:
        return
    answers = _answers_by_trial(conn, session_id)
    adaptive = AdaptivePlan.for_study(study, seed)
    committed: list[CommittedTrial] = []
    bad_schedules: dict[str, list[int]] = defaultdict(list)
    rows = conn.execute(
        "SELECT trial_index, block, practice, kind, condition_id, levels, replay_id, seed, "
        "attention, outcome, schedule_sha256, "
        + ", ".join(TIMING_COLUMNS)
        + ", timings FROM trials "
        "WHERE session_id = ? ORDER BY trial_index",
        (session_id,),
    ).fetchall()
    reruns = _rerun_roots(conn, session_id)  # re-runs queued at the end play a planned trial
    timeout_s = study.abandon.timeout_s
    timeout_ms = None if timeout_s is None else timeout_s * 1000.0
    events = _events_by_trial(conn, session_id)
    for idx, block, practice, kind, cond, levels_json, replay_id, t_seed, attention, *rest in rows:
        outcome, sha, *timing_values, extra_json = rest
        report.n_trials += 1
        levels = json.loads(levels_json)
        root = reruns.get(idx, idx)
        if not 0 <= root < len(derived):
            mismatch("is not in the re-derived trial list", idx)
            continue
        expected = dataclasses.replace(derived[root], index=idx, break_before=False)
        if adaptive is not None and not expected.practice and expected.attention is None:
            level = adaptive.level_for(expected.levels, committed)
            resolved = {**expected.levels, adaptive.factor: level}
            within = {f.name: resolved[f.name] for f in study.within_factors}
            expected = dataclasses.replace(
                expected, levels=resolved, condition_id=condition_id(within)
            )
        stored = {
            "block": block, "practice": bool(practice), "kind": kind, "condition_id": cond,
            "levels": levels, "replay_id": replay_id, "seed": t_seed,
        }  # fmt: skip
        for name in ROW_FIELDS:
            want = getattr(expected, name)
            if stored[name] != want:
                mismatch(f"{name}: stored {_show(stored[name])}, rebuilt {_show(want)}", idx)
        if bool(attention) != (expected.attention is not None):
            rebuilt = expected.attention is not None
            mismatch(f"attention check: stored {bool(attention)}, rebuilt {rebuilt}", idx)
        if outcome not in ("running", "interrupted"):
            committed.append(
                CommittedTrial(idx, bool(practice), bool(attention), levels, outcome, answers[idx])
            )
        if sha is None:
            report.n_unchecked += 1
            continue
        schedule, reason = _schedule_problem(study, expected, sha, changed, report)
        if reason is not None:
            bad_schedules[reason].append(idx)
            report.n_event_skipped += 1  # played from another schedule: nothing to compare
            continue
        if outcome == "running":
            report.n_in_flight += 1  # nothing stored of it yet
            continue
        timings = dict(zip(TIMING_COLUMNS, timing_values, strict=True))
        extra = json.loads(extra_json) if extra_json else {}
        timings.update(extra if isinstance(extra, dict) else {})
        stored_trial = StoredTrial(outcome, bool(attention), timings, events.get(idx, []))
        kind = trial_kind(study, expected)
        problems = event_problems(kind, schedule, stored_trial, timeout_ms)
        report.n_event_trials += 1
        report.n_event_live += kind.learnt and not stored_trial.attention
        report.n_chunk_events += len(stored_trial.of_kind("chunk"))
        if problems:
            more = f" (and {len(problems) - 1} more)" if len(problems) > 1 else ""
            mismatch(f"events: {problems[0]}{more}", idx)
    for reason, indexes in bad_schedules.items():
        which = ", ".join(str(i) for i in indexes[:8]) + (" ..." if len(indexes) > 8 else "")
        n = len(indexes)
        mismatch(f"{n} schedule(s) differ ({'trial' if n == 1 else 'trials'} {which}): {reason}")


def _derive_plan(
    study: Study,
    participant: str,
    number: int,
    group_id: str | None,
    seed: int,
    plan_json: str,
    plan_sha: str,
    mismatch: Callable[[str], None],
) -> list[Trial] | None:
    """The session's trial list re-derived from the study file and seed, with a mismatch
    for a stored list edited afterwards or not the re-derived one; None (and a mismatch)
    when the session's group is not in the study."""
    group = None
    if group_id is not None:
        group = next((g for g in study.groups if g.id == group_id), None)
        if group is None:
            mismatch(f"group {group_id!r} is not a group of the study")
            return None
    derived = design_trials(study, participant, number, seed, group)
    derived_plan = [t.to_dict() for t in derived]
    stored_plan = json.loads(plan_json)
    if sha256_json(stored_plan) != plan_sha:
        mismatch("the stored trial list does not match its own SHA-256 (edited afterwards)")
    if sha256_json(derived_plan) != sha256_json(stored_plan):
        diffs = _plan_diffs(stored_plan, derived_plan)
        more = " ..." if len(diffs) > 3 else ""
        mismatch(
            f"trial list differs from the one re-derived from the study file and seed {seed}: "
            + "; ".join(diffs[:3])
            + more
        )
    return derived


def _answers_by_trial(conn: Connection, session_id: str) -> dict[int, dict[str, str | None]]:
    """trial_index -> {question id: stored answer} of one session."""
    answers: dict[int, dict[str, str | None]] = defaultdict(dict)
    for idx, qid, value in conn.execute(
        "SELECT trial_index, question_id, value FROM responses WHERE session_id = ?",
        (session_id,),
    ):
        answers[idx][qid] = value
    return answers


def _schedule_problem(
    study: Study, expected: Trial, sha: str, changed: set[str], report: VerifyReport
) -> tuple[Schedule, str | None]:
    """The schedule rebuilt for `expected`, and why it is not the one played (SHA-256
    `sha`), or None when it is; counts the rebuilt schedule in `report`."""
    schedule = rebuild_schedule(study, expected)
    report.n_schedules += 1
    report.n_live += trial_kind(study, expected).learnt
    if schedule_sha256(study, expected, schedule) == sha:
        return schedule, None
    files = set(_ids_of(expected)) & changed
    if files:
        reason = f"recording {', '.join(sorted(files))} changed since the study ran"
    else:
        reason = "rebuilt from the study, recording, levels and seed, it is not the one played"
    return schedule, reason


def _events_by_trial(
    conn: Connection, session_id: str
) -> dict[int, list[tuple[str, float | None, dict[str, Any]]]]:
    """trial_index -> (kind, t_ms, data) of the session's events `event_problems` reads,
    in stored order."""
    marks = ", ".join("?" for _ in EVENT_KINDS)
    rows = conn.execute(
        f"SELECT trial_index, kind, t_ms, data FROM events WHERE session_id = ? "
        f"AND trial_index >= 0 AND kind IN ({marks}) ORDER BY trial_index, seq",
        (session_id, *EVENT_KINDS),
    ).fetchall()
    values = _json_values([r[3] for r in rows])
    out: dict[int, list[tuple[str, float | None, dict[str, Any]]]] = defaultdict(list)
    for (idx, kind, t_ms, _data), value in zip(rows, values, strict=True):
        out[idx].append((kind, t_ms, value if isinstance(value, dict) else {}))
    return out


def _json_values(texts: list[str]) -> list[Any]:
    """Each JSON text decoded: in one call (a third of verify's time went to one call per
    event), or one by one when the joined texts do not split back (an edited value)."""
    try:
        values = json.loads("[" + ",".join(texts) + "]")
    except json.JSONDecodeError:
        values = None
    if not isinstance(values, list) or len(values) != len(texts):
        values = [json.loads(t) for t in texts]  # a damaged value raises here, by itself
    return values


def _rerun_roots(conn: Connection, session_id: str) -> dict[int, int]:
    """A re-run's trial_index -> the planned trial it plays (`requeued`)."""
    return dict(
        conn.execute(
            "SELECT trial_index, root_index FROM requeued WHERE session_id = ?", (session_id,)
        ).fetchall()
    )


def _ids_of(trial: Trial) -> list[str]:
    return [] if trial.replay_id is None or trial.attention is not None else [trial.replay_id]


def _plan_diffs(stored: list[dict[str, Any]], derived: list[dict[str, Any]]) -> list[str]:
    """`trial 3 seed: stored 12, rebuilt 45`-style differences between two trial lists."""
    out = []
    if len(stored) != len(derived):
        out.append(f"{len(stored)} trials stored, {len(derived)} rebuilt")
    for a, b in zip(stored, derived, strict=False):
        for key in sorted(set(a) | set(b)):
            if a.get(key) != b.get(key):
                out.append(
                    f"trial {a.get('index')} {key}: stored {_show(a.get(key))}, "
                    f"rebuilt {_show(b.get(key))}"
                )
    return out


def _show(value: Any, limit: int = 40) -> str:
    text = json.dumps(value, sort_keys=True) if isinstance(value, (dict, list)) else repr(value)
    return text if len(text) <= limit else text[: limit - 1] + "…"


def format_report(report: VerifyReport, width: int = 80) -> str:
    """The summary `uxlab verify` prints: what was checked, then every mismatch."""
    lines: list[str] = []

    def say(text: str, indent: str = "") -> None:
        lines.extend(textwrap.wrap(text, width, initial_indent=indent,
                                   subsequent_indent=indent + "    ",
                                   break_on_hyphens=False, break_long_words=False))  # fmt: skip

    say(f"Verifying {report.db}" + (f" with {report.study_file}" if report.study_file else ""))
    for s in report.studies:
        say(s, "  ")
    for note in report.notes:
        say(note, "  ")
    checked = (
        f"Checked {report.n_files} stimulus file(s), {report.n_sessions} session(s) "
        f"(trial lists re-derived), {report.n_trials} trial(s), "
        f"{report.n_schedules} schedule(s) rebuilt"
    )
    if report.n_live:
        checked += f" ({report.n_live} live: profile, seed and source only)"
    if report.n_unchecked:
        checked += f"; {report.n_unchecked} trial(s) without a stored schedule SHA-256 not "
        checked += "rebuilt, their events not checked"
    checked += (
        f"; the events and timings of {report.n_event_trials} trial(s) "
        f"({report.n_chunk_events} chunk event(s)) compared with their rebuilt schedules"
    )
    if report.n_in_flight:
        checked += f" ({report.n_in_flight} trial(s) in flight: no events stored yet)"
    if report.n_event_skipped:
        checked += (
            f" ({report.n_event_skipped} trial(s) not compared: their schedule differs, see below)"
        )
    if report.n_event_live:
        checked += (
            f" ({report.n_event_live} live: not checked are the text and chunking, which "
            "came from the model, and the scheduled end, when its answer ended; checked are "
            "each chunk's shown time against its due and arrival times, and its due time "
            "where the profile does not re-chunk)"
        )
    checked += (
        f"; {report.n_digests} committed trial(s) recomputed from their stored rows, answers "
        "and events against the digest in the audit log"
    )
    say(checked + f"; audit log: {report.n_audit} entr{'y' if report.n_audit == 1 else 'ies'}.")
    if report.audit_head:
        say(
            f"Audit chain head after {report.n_audit} entries (keep a copy elsewhere; "
            "`uxlab verify --expect-head HEAD` checks the log still leads to it):"
        )
        lines.append(f"  {report.audit_head}")
    if report.ok:
        say(
            "OK: every trial list and schedule was rebuilt from the study file, the "
            "participant ids and numbers, the groups and the seeds, and matches what ran; "
            "every stored chunk event and timing agrees with its schedule; every committed "
            "trial's outcome, timings, answers and events are as committed; the audit log's "
            "hash chain is intact."
        )
        return "\n".join(lines)
    say(f"{len(report.mismatches)} MISMATCH(ES) (trials numbered from 0, as in trials.csv):")
    for m in report.mismatches[:MAX_LISTED]:
        say("- " + m.line(), "  ")
    if len(report.mismatches) > MAX_LISTED:
        say(f"... and {len(report.mismatches) - MAX_LISTED} more", "  ")
    return "\n".join(lines)
