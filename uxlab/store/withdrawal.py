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

from uxlab.store.base import StoreBase
from uxlab.store.dialect import is_postgres
from uxlab.store.digests import sha256_json
from uxlab.store.records import Session
from uxlab.store.schema import StoreError

PARTICIPANT_TABLES = (
    "participants", "sessions", "session_runs", "trials", "requeued", "responses", "events",
    "browser_paints", "session_leases", "invitations",
)  # fmt: skip
"""Tables a withdrawal deletes from: vacuumed after it on PostgreSQL."""
CHECKPOINT_WAIT_MS = 2000
"""How long the checkpoint after a withdrawal waits for other connections' transactions."""


class Withdrawal(StoreBase):
    """`record_refusal` and `withdraw`."""

    def record_refusal(self, session: Session) -> None:
        """The participant declined consent: keep only a count, delete the session."""
        if session.state not in ("created", "interrupted"):
            raise StoreError(f"session {session.id}: consent was already given")
        with self.write_transaction():
            self.conn.execute(
                "INSERT INTO refusals VALUES (?, ?)", (session.study.sha256, self._now_iso())
            )
            self._delete_participant(session.participant, "refuse")
        session.state = "withdrawn"

    def _withdraw(self, participant: str) -> dict[str, int]:
        return self.withdraw(participant)

    def withdraw(self, participant: str) -> dict[str, int]:
        """Delete everything stored about a participant; the audit keeps counts, not content.
        Then `clear_remains` (what it could not clear is left for the caller to say)."""
        with self.write_transaction():
            counts = self._delete_participant(participant, "delete")
        return counts

    def clear_remains(self) -> list[str]:
        """Clear the copies of deleted rows the database still keeps (module docstring);
        returns what still holds them, one sentence each (empty: nothing in the database)."""
        if is_postgres(self.path):
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
            f"another process has {self.path} open (a host, a participant's session), so its "
            f"write-ahead log ({self.path}-wal) still holds copies of the deleted rows; SQLite "
            "empties it when the last process closes the database, or run sqlite3 "
            f'{self.path} "PRAGMA wal_checkpoint(TRUNCATE)" once they have stopped'
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
        self._audit(action, None, sha256_json(dump), {**counts, "session_ids": sessions})
        return counts
