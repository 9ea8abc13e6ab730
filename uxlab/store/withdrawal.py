"""Declined consent and withdrawal: a participant's rows deleted, the audit keeps counts."""

from __future__ import annotations

from typing import Any

from uxlab.store.base import StoreBase
from uxlab.store.digests import sha256_json
from uxlab.store.records import Session
from uxlab.store.schema import StoreError


class Withdrawal(StoreBase):
    """`record_refusal` and `withdraw`."""

    def record_refusal(self, session: Session) -> None:
        """The participant declined consent: keep only a count, delete the session."""
        if session.state not in ("created", "interrupted"):
            raise StoreError(f"session {session.id}: consent was already given")
        with self._write():
            self.conn.execute(
                "INSERT INTO refusals VALUES (?, ?)", (session.study.sha256, self._now_iso())
            )
            self._delete_participant(session.participant, "refuse")
        session.state = "withdrawn"

    def _withdraw(self, participant: str) -> dict[str, int]:
        return self.withdraw(participant)

    def withdraw(self, participant: str) -> dict[str, int]:
        """Delete everything stored about a participant; the audit keeps counts, not content."""
        with self._write():
            counts = self._delete_participant(participant, "delete")
        return counts

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
