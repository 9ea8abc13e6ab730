"""The store's shared core: one write transaction, the audit append, counters, studies."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from uxlab.store.audit import chain_value
from uxlab.store.backend import Connection
from uxlab.store.digests import study_summary
from uxlab.store.trial_digest import session_digest
from uxlab.study.reproduce import stimulus_files
from uxlab.study.spec import Study


class StoreBase:
    """The connection, the clock and the write helpers every part of `Store` uses."""

    def __init__(self, conn: Connection, path: Path | str, clock: Callable[[], float]):
        self.conn = conn
        self.path = path
        """The SQLite file, or the PostgreSQL URL without its password (for messages)."""
        self.clock = clock
        self.new_session_id: Callable[[], str] = lambda: "S-" + uuid.uuid4().hex[:12]
        """Makes each new session's id (random; a test may make them repeatable)."""
        self.leases: set[str] = set()
        """Sessions whose lease this store holds (`uxlab.store.lease`), given back at close."""

    def _withdraw(self, participant: str) -> dict[str, int]:
        """`Withdrawal.withdraw` (the part of `Store` that deletes a participant)."""
        raise NotImplementedError

    def ping(self) -> None:
        """One round trip to the database (raises StoreUnreachable while a server is away)."""
        self.conn.execute("SELECT 1").fetchone()

    # --- helpers ----------------------------------------------------------------------------

    def _now_iso(self) -> str:
        return datetime.fromtimestamp(self.clock(), UTC).isoformat(timespec="milliseconds")

    @contextmanager
    def write_transaction(self) -> Iterator[Connection]:
        """One short write transaction, taken with BEGIN IMMEDIATE (no lock upgrades): every
        statement in it is stored, or (on any error, the COMMIT's too) none is."""
        self.conn.execute("BEGIN IMMEDIATE")
        try:
            yield self.conn
            self.conn.execute("COMMIT")
        except BaseException:
            # Also when COMMIT itself failed (busy, disk full): leave no transaction open,
            # so the same write can simply be tried again.
            if self.conn.in_transaction:
                self.conn.execute("ROLLBACK")
            raise

    def _audit(self, action: str, subject: str | None, sha256: str, detail: dict[str, Any]) -> None:
        at = self._now_iso()
        detail_json = json.dumps(detail, sort_keys=True, separators=(",", ":"))
        row = self.conn.execute("SELECT chain FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        chain = chain_value(row[0] if row else "", at, action, subject, sha256, detail_json)
        self.conn.execute(
            "INSERT INTO audit (at, action, subject, sha256, detail, chain) VALUES (?,?,?,?,?,?)",
            (at, action, subject, sha256, detail_json, chain),
        )

    def _counter(self, name: str) -> int:
        """Increment and return a persistent counter (inside a write transaction)."""
        self.conn.execute(
            "INSERT INTO counters (name, n) VALUES (?, 1) "
            "ON CONFLICT(name) DO UPDATE SET n = counters.n + 1",
            (name,),
        )
        (n,) = self.conn.execute("SELECT n FROM counters WHERE name = ?", (name,)).fetchone()
        return int(n)

    def _ensure_participant(self, participant: str) -> int:
        row = self.conn.execute(
            "SELECT number FROM participants WHERE participant = ?", (participant,)
        ).fetchone()
        if row:
            return int(row[0])
        number = self._counter("participant_number")
        self.conn.execute(
            "INSERT INTO participants (participant, number, created_at, created_s) "
            "VALUES (?,?,?,?)",
            (participant, number, self._now_iso(), self.clock()),
        )
        return number

    # --- studies ----------------------------------------------------------------------------

    def register_study(self, study: Study) -> str:
        """Store the study file once; returns its SHA-256.

        Kept with it: the full text, the SHA-256 of every stimulus file
        (`uxlab.study.reproduce.stimulus_files`) and the file's path relative to the working
        folder (`location`, NULL when outside it), so `uxlab verify` can rebuild the stimuli.
        """
        with self.write_transaction():
            self._register(study)
        return study.sha256

    def _register(self, study: Study) -> None:
        exists = self.conn.execute(
            "SELECT 1 FROM studies WHERE sha256 = ?", (study.sha256,)
        ).fetchone()
        if exists:
            return
        row = {
            "sha256": study.sha256,
            "study_id": study.id,
            "version": study.version,
            "title": study.title,
            "seed": study.seed,
            "path": study.path.name,
            "text": study.text,
            "summary": json.dumps(study_summary(study), sort_keys=True),
            "registered_at": self._now_iso(),
            "stimuli": json.dumps(stimulus_files(study), sort_keys=True),
            "location": _location(study.path),
        }
        names = list(row)
        self.conn.execute(
            f"INSERT INTO studies ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            [row[k] for k in names],
        )
        self._audit("register", study.sha256, study.sha256, {"study_id": study.id})

    def _session_digest(self, session_id: str) -> str:
        return session_digest(self.conn, session_id)


def _location(path: Path) -> str | None:
    """The study file's path relative to the working folder (POSIX), or None outside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return None
