"""The study store: one database per study, written so that no committed answer is lost.

The database is a SQLite file (the default), or a PostgreSQL database shared by several
study hosts (`Store.open("postgresql://...")`, `uxlab.store.postgres`): the same SQL, schema
and guarantees through one storage interface (`uxlab.store.backend`).

`Store` is a facade over small parts that share one connection (`store.db`, a
`uxlab.store.base.Database`: the clock, the write transaction, the audit append):
`store.studies`, `store.groups`, `store.sessions`, `store.trials`, `store.end_answers`,
`store.withdrawal` and `store.audit`. The runner and the simulator call, in this order::

    store = Store.open("results/ttft-threshold.sqlite")     # WAL, synchronous=FULL
    group = store.groups.allocate(study, participant)       # None unless between factors
    session = store.sessions.start_or_resume(study, participant, seed=None,
                                             environment=env, pilot=False, simulated=False)
    store.sessions.set_state(session, "consented")
    store.sessions.set_state(session, "running")
    for trial in session.trials[session.next_index:]:
        store.trials.begin(session, trial.index,             # committed: the trial is in flight
                           schedule_sha256=schedule_sha256(schedule))  # `uxlab verify` rebuilds
        ...play it, ask the questions...
        store.trials.commit(session, trial.index, outcome="completed",
                            timings={"shown_first_ms": ..., "shown_last_ms": ...,
                                     "scheduled_end_ms": ..., "t_abandon_ms": None},
                            responses={"acceptable": ("yes", 1840.0)},
                            events=[{"t_ms": 412.7, "kind": "chunk", "scheduled_ms": ...}])
    store.end_answers.commit(session, {"comments": ("fine", 5300.0)})
    store.sessions.set_state(session, "completed")

Guarantees:
- Every write is one short `BEGIN IMMEDIATE` transaction; `trials.commit` writes the trial's
  outcome, responses and events together, so a killed process loses at most the trial in
  flight. On resume that trial is stored as `interrupted` and the session continues with the
  next one of the same (stored) trial list; `sessions.resumed_count` says it was resumed.
- `sessions.requeue_trial(session, i, reason)` queues a finished or interrupted trial again
  after the planned list (table `requeued`): the same planned trial under a new trial_index; the
  attempt it replaces stays stored as it was. `sessions.unfinished(study)` lists what can
  be resumed; a quit (`sessions.set_state(..., "interrupted", by=...)`) leaves a `pause`
  audit entry.
- Every start and resume keeps its own environment (table `session_runs`, exported as
  `runs.csv`); `sessions.environment` stays the first run's.
- `withdrawal.withdraw(participant)` deletes every row of the participant and leaves an audit
  entry with counts and the SHA-256 of what was deleted, but no content.
- The `audit` table is append-only (triggers refuse UPDATE and DELETE) and hash-chained: each
  row's `chain` is the SHA-256 of the previous chain value and the row (`audit.is_intact`).
- Participant ids are pseudonymous: use `new_participant_id()` (e.g. `P-7K3QX`) or your own
  code, never a name. Ids with spaces are refused.
- `Store.open` refuses a read-only, damaged (`PRAGMA integrity_check`) or foreign file before
  changing anything in it, and says what a SQLite error means (a full disk, a lock, ...):
  `uxlab.store.open_checks`.
- One live process per session: starting or resuming takes the session's lease, refused
  (naming the holder's host, pid and age) while another live process holds it; a dead
  holder's lease is taken over (`uxlab.store.lease`); `close()` gives leases back.

One `Store` per process (or thread); several processes may write one file at once (WAL and a
busy timeout serialise their short transactions; on PostgreSQL an advisory lock does).
Wall-clock times come from `clock` (injectable for tests), used only for timestamps and
stale-slot detection. `Store.open(path, durable=False)` (simulated participants) commits
without an fsync per transaction on SQLite.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Callable
from contextlib import suppress
from pathlib import Path

from uxlab.store import lease, open_checks
from uxlab.store.audit import first_broken_audit_entry
from uxlab.store.audit_log import AuditLog
from uxlab.store.backend import Connection
from uxlab.store.base import Database
from uxlab.store.dialect import is_postgres
from uxlab.store.digests import sha256_json, sha256_json_streamed, study_summary
from uxlab.store.end_answers import EndAnswers
from uxlab.store.errors import store_errors
from uxlab.store.groups import Groups
from uxlab.store.ids import check_participant_id, default_db_path, new_participant_id
from uxlab.store.records import (
    END_INDEX,
    LIVE_STATES,
    OUTCOMES,
    TIMING_COLUMNS,
    TRANSITIONS,
    SessionRecord,
    UnfinishedSession,
)
from uxlab.store.schema import StoreError, StoreUnreachable, migrate
from uxlab.store.sessions import Sessions
from uxlab.store.studies import Studies
from uxlab.store.trials import Trials
from uxlab.store.withdrawal import Withdrawal

__all__ = [
    "END_INDEX",
    "LIVE_STATES",
    "OUTCOMES",
    "TIMING_COLUMNS",
    "TRANSITIONS",
    "SessionRecord",
    "Store",
    "UnfinishedSession",
    "check_participant_id",
    "default_db_path",
    "first_broken_audit_entry",
    "new_participant_id",
    "sha256_json",
    "sha256_json_streamed",
    "study_summary",
]


class Store:
    """A study database. Open with `Store.open(path)`; see the module docstring for the flow."""

    def __init__(self, conn: Connection, path: Path | str, clock: Callable[[], float]):
        self.db = Database(conn, path, clock)
        """The connection the parts share: the store's own modules use it, and tests read
        stored rows through it; other modules use the parts (tests/test_store_seams.py)."""
        self.path = path
        """The SQLite file, or the PostgreSQL URL without its password (for messages)."""
        self.studies = Studies(self.db)
        self.audit = AuditLog(self.db)
        self.withdrawal = Withdrawal(self.db)
        self.groups = Groups(self.db, self.studies)
        self.sessions = Sessions(self.db, self.studies, self.withdrawal)
        self.trials = Trials(self.db)
        self.end_answers = EndAnswers(self.db)

    # --- opening ----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        clock: Callable[[], float] = time.time,
        busy_timeout_s: float = 30.0,
        durable: bool = True,
    ) -> Store:
        """Open or create the database at `path` and bring its schema up to date.

        A write waits up to `busy_timeout_s` for another process's transaction, then fails
        with `sqlite3.OperationalError` ("database is locked"); nothing is half-written.
        A read-only, damaged or foreign file is refused (StoreError) before anything in it
        is changed (`uxlab.store.open_checks`). The connection may be used from another
        thread (a trial committed off the UI loop), one thread at a time.

        `durable` (the default): every commit is on disk before it returns (SQLite's
        `synchronous=FULL`). Without it (simulated participants) a commit skips the fsync
        (`synchronous=NORMAL` in WAL: never corrupt, but the last commits may be lost on a
        power cut), which keeps a simulated session well under a second.

        A `postgresql://` URL opens that PostgreSQL database instead (`uxlab.store.postgres`):
        the same schema and guarantees, shared by several hosts; `busy_timeout_s` is then
        how long a write waits for a connection (a server away: restarting, failing over)
        before it fails with StoreUnreachable. Its commits are durable either way.
        """
        if is_postgres(path):
            return cls._open_postgres(str(path), clock, busy_timeout_s)
        path = Path(path)
        open_checks.check_path(path)
        conn = None
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            conn = sqlite3.connect(
                path, isolation_level=None, timeout=busy_timeout_s, check_same_thread=False
            )
            conn.execute(f"PRAGMA busy_timeout = {int(busy_timeout_s * 1000)}")
            open_checks.check_database(conn, path)  # before WAL: nothing changed yet
            mode = conn.execute("PRAGMA journal_mode = WAL").fetchone()[0]
            if mode.lower() != "wal":
                raise StoreError(f"{path}: could not switch to WAL mode (got {mode})")
            conn.execute(f"PRAGMA synchronous = {'FULL' if durable else 'NORMAL'}")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA secure_delete = ON")  # a withdrawal leaves no readable remains
            store = cls(conn, path, clock)
            migrate(conn, str(path), store.db.now_iso())
        except (sqlite3.Error, OSError, StoreError) as exc:
            if conn is not None:
                conn.close()
            if isinstance(exc, StoreError):
                raise
            if isinstance(exc, OSError):
                raise StoreError(f"{path}: cannot create its folder ({exc.strerror})") from None
            if conn is not None and not open_checks.is_environmental(exc):
                raise  # a bug (e.g. a failing migration), not the file's or the disk's fault
            raise StoreError(open_checks.describe_sqlite_error(exc, path)) from None
        return store

    @classmethod
    def _open_postgres(cls, url: str, clock: Callable[[], float], timeout_s: float) -> Store:
        from uxlab.store.postgres import PostgresConnection

        conn = PostgresConnection(url, timeout_s=timeout_s)
        try:
            store = cls(conn, conn.name, clock)
            migrate(conn, conn.name, store.db.now_iso())
        except BaseException:
            conn.close()
            raise
        return store

    def ping(self) -> None:
        """One round trip to the database (raises StoreUnreachable while a server is away)."""
        self.db.conn.execute("SELECT 1").fetchone()

    def close(self, server_away: bool = False) -> None:
        """Give back this store's session leases and close the connection.

        `server_away`: the database server is known to be away (a participant quit on the
        reconnecting screen): close at once, without waiting for it to give the leases back
        (a lease is stale once this process is gone: the next start on this host takes it).
        """
        conn, leases = self.db.conn, self.db.leases
        # the lease is stale once this process is gone (or its server is away)
        if not server_away:
            with suppress(*store_errors(), StoreUnreachable):
                lease.give_back(conn, sorted(leases))
        leases.clear()
        close_now = getattr(conn, "close_now", None)  # a PostgreSQL connection's
        if server_away and close_now is not None:
            close_now()
        else:
            conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
