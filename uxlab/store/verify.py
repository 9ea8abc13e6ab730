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

import difflib
import hashlib
import json
from pathlib import Path
from typing import Any

from uxlab.errors import UxlabError
from uxlab.store.audit import AuditChain, read_audit_chain
from uxlab.store.backend import Connection
from uxlab.store.dialect import db_name, is_postgres
from uxlab.store.open_checks import open_read_only, reading
from uxlab.store.verify_audit import (
    AuditLedger,
    check_audit_triggers,
    check_missing_sessions,
)
from uxlab.store.verify_report import Mismatch, VerifyReport
from uxlab.store.verify_sessions import check_session_trials
from uxlab.study.loading import parse_study
from uxlab.study.reproduce import (
    file_sha256,
    stimulus_files,
)
from uxlab.study.spec import Study


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
            check_session_trials(conn, report, study, row, changed)


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
