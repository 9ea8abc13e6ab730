"""What `uxlab verify` found (`VerifyReport`, each `Mismatch`) and the summary it prints."""

from __future__ import annotations

import textwrap
from dataclasses import dataclass, field
from pathlib import Path

from uxlab.store.verify_audit import (
    AuditLedger,
)

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

    db: str | Path
    """The SQLite file, or the PostgreSQL URL without its password."""
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
    """Trials stored without the SHA-256 of their schedule (`trials.begin` was given none)."""
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
