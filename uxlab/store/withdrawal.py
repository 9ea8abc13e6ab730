"""Declined consent and withdrawal: a participant's rows deleted, the audit keeps counts.

What stays after the rows are deleted (`clear_remains` says, after doing what it can):

- SQLite: the file's deleted pages are overwritten at once (`secure_delete`), but the
  write-ahead log (`<file>-wal`) still holds copies of the pages as they were. They are
  checkpointed into the file and the log emptied (`wal_checkpoint(TRUNCATE)`) when no other
  connection reads the database; while one does (a running host, a session), the log keeps
  them until the last connection closes (SQLite empties it then) or the checkpoint is run
  again.
- PostgreSQL: a DELETE leaves the old rows in the table files as dead tuples until VACUUM
  (run here on the participant tables: their space is reused, not wiped at once), and in the
  server's write-ahead log and base backups until those are recycled; `VACUUM FULL`
  rewrites the tables without them (it locks them while it runs: not during a study).
- Everywhere: exports, reports and backups made before.
"""

from __future__ import annotations

import sqlite3
from typing import Any

from uxlab.store import lease
from uxlab.store.base import Database
from uxlab.store.dialect import is_postgres
from uxlab.store.digests import sha256_json
from uxlab.store.records import SessionRecord
from uxlab.store.schema import StoreError
from uxlab.store.withdraw_check import stale_after_min

PARTICIPANT_TABLES = (
    "participants", "sessions", "session_runs", "trials", "requeued", "responses", "events",
    "browser_paints", "session_leases", "invitations",
)  # fmt: skip
"""Tables a withdrawal deletes from: vacuumed after it on PostgreSQL."""
CHECKPOINT_WAIT_MS = 2000
"""How long the checkpoint after a withdrawal waits for other connections' transactions."""


class Withdrawal:
    """`store.withdrawal`: a declined consent and a withdrawal, and what the database still
    keeps of the deleted rows."""

    def __init__(self, db: Database):
        self.db = db
        self.conn = db.conn

    # --- what a withdrawal would delete (asked before it) --------------------------------------

    def participants(self) -> list[str]:
        """Every participant the database knows: those with data, and those only invited."""
        ids = [
            r[0] for r in self.conn.execute("SELECT participant FROM participants ORDER BY number")
        ]
        ids += [r[0] for r in self.conn.execute("SELECT participant FROM invitations ORDER BY 1")]
        return list(dict.fromkeys(ids))

    def is_invited(self, who: str) -> bool:
        """Whether `who` holds an invitation."""
        row = self.conn.execute(
            "SELECT 1 FROM invitations WHERE participant = ?", (who,)
        ).fetchone()
        return row is not None

    def row_counts(self, who: str) -> dict[str, int]:
        """How many rows of each kind the participant has (counts only, never content)."""
        counts: dict[str, int] = {}
        for table in ("trials", "responses", "events", "session_runs"):
            counts[table] = self.conn.execute(
                f"SELECT count(*) FROM {table} t JOIN sessions s ON s.session_id = t.session_id "
                "WHERE s.participant = ?",
                (who,),
            ).fetchone()[0]
        counts["sessions"] = self.conn.execute(
            "SELECT count(*) FROM sessions WHERE participant = ?", (who,)
        ).fetchone()[0]
        counts["runs"] = counts.pop("session_runs")
        return counts

    def live_session(self, who: str) -> str | None:
        """What says a live process still runs one of `who`'s sessions, or None: the same rule
        as resuming (`uxlab.store.lease.live_holder`). On this host its process must be alive;
        on another host (a shared PostgreSQL store) the session counts as live until it was
        idle for its study's `stale_after_min`. (Deleting under it would fail its next commit.)"""
        rows = self.conn.execute(
            "SELECT s.session_id, st.text FROM sessions s "
            "JOIN studies st ON st.sha256 = s.study_sha256 WHERE s.participant = ?",
            (who,),
        ).fetchall()
        for session_id, study_text in rows:
            stale_s = stale_after_min(study_text) * 60.0
            held = lease.holders(self.conn, [session_id], self.db.clock(), stale_s).get(session_id)
            if held is None:
                continue
            if not held.other_host:
                return (
                    f"session {session_id} is running now (process {held.pid} on {held.host}); "
                    "withdraw after it ends or is stopped"
                )
            return (
                f"session {session_id} is live on another host ({held.host}, process "
                f"{held.pid}, last active {held.idle_s / 60.0:.0f} min ago; it counts as ended "
                f"after {held.stale_after_s / 60.0:.0f} min without activity); withdraw after "
                "it ends or is stopped there"
            )
        return None

    # --- deleting ------------------------------------------------------------------------------

    def record_refusal(self, session: SessionRecord) -> None:
        """The participant declined consent: keep only a count, delete the session."""
        if session.state not in ("created", "interrupted"):
            raise StoreError(f"session {session.id}: consent was already given")
        with self.db.write_transaction():
            self.conn.execute(
                "INSERT INTO refusals VALUES (?, ?)", (session.study.sha256, self.db.now_iso())
            )
            self._delete_participant(session.participant, "refuse")
        session.state = "withdrawn"

    def withdraw(self, participant: str) -> dict[str, int]:
        """Delete everything stored about a participant; the audit keeps counts, not content.
        Then `clear_remains` (what it could not clear is left for the caller to say)."""
        with self.db.write_transaction():
            counts = self._delete_participant(participant, "delete")
        return counts

    def clear_remains(self) -> list[str]:
        """Clear the copies of deleted rows the database still keeps (module docstring);
        returns what still holds them, one sentence each (empty: nothing in the database)."""
        if is_postgres(self.db.path):
            return self._vacuum()
        return self._checkpoint()

    def _checkpoint(self) -> list[str]:
        (timeout_ms,) = self.conn.execute("PRAGMA busy_timeout").fetchone()
        try:
            self.conn.execute(f"PRAGMA busy_timeout = {CHECKPOINT_WAIT_MS}")
            busy, log, done = self.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)").fetchone()
        except sqlite3.OperationalError:
            busy, log, done = 1, -1, -1
        finally:
            self.conn.execute(f"PRAGMA busy_timeout = {int(timeout_ms)}")
        if not busy and log <= 0 and done <= 0:
            return []
        return [
            f"another process has {self.db.path} open (a host, a participant's session), so its "
            f"write-ahead log ({self.db.path}-wal) still holds copies of the deleted rows; SQLite "
            "empties it when the last process closes the database, or run sqlite3 "
            f'{self.db.path} "PRAGMA wal_checkpoint(TRUNCATE)" once they have stopped'
        ]

    def _vacuum(self) -> list[str]:
        for table in PARTICIPANT_TABLES:
            self.conn.execute(f"VACUUM {table}")  # outside a transaction: autocommit
        return [
            "PostgreSQL keeps the deleted rows' old versions in the table files until they "
            "are overwritten (the tables were vacuumed: their space is reused), and in the "
            "server's write-ahead log and base backups until those are recycled; for the "
            "table files now, the database owner can run VACUUM FULL "
            f"{', '.join(PARTICIPANT_TABLES)} (it locks those tables while it runs: not "
            "during a study)"
        ]

    def _delete_participant(self, participant: str, action: str) -> dict[str, int]:
        sessions = [
            r[0]
            for r in self.conn.execute(
                "SELECT session_id FROM sessions WHERE participant = ? ORDER BY session_id",
                (participant,),
            )
        ]
        dump: dict[str, Any] = {"participant": participant, "sessions": []}
        counts = {"sessions": len(sessions), "trials": 0, "responses": 0, "events": 0}
        for sid in sessions:
            part = {"session_id": sid}
            for table in ("trials", "responses", "events"):
                rows = self.conn.execute(
                    f"SELECT * FROM {table} WHERE session_id = ? ORDER BY 2, 3", (sid,)
                ).fetchall()
                counts[table] += len(rows)
                part[table] = rows
            dump["sessions"].append(part)
        self.conn.execute("DELETE FROM sessions WHERE participant = ?", (participant,))
        self.conn.execute("DELETE FROM participants WHERE participant = ?", (participant,))
        # the session ids (pseudonymous, already in the log's own entries) let `uxlab
        # verify` tell a withdrawn session from a deleted one; no content, no participant id
        self.db.append_audit(action, None, sha256_json(dump), {**counts, "session_ids": sessions})
        return counts
