"""The study store: one SQLite file per study, written so that no committed answer is lost.

The runner and the simulator call, in this order::

    store = Store.open("results/ttft-threshold.sqlite")     # WAL, synchronous=FULL
    group = store.allocate_group(study, participant)         # None unless between factors
    session = store.start_or_resume_session(study, participant, seed=None,
                                            environment=env, pilot=False, simulated=False)
    store.set_state(session, "consented")
    store.set_state(session, "running")
    for trial in session.trials[session.next_index:]:
        store.begin_trial(session, trial.index,              # committed: the trial is in flight
                          schedule_sha256=schedule_sha256(schedule))  # what `uxlab verify` rebuilds
        ...play it, ask the questions...
        store.commit_trial(session, trial.index, outcome="completed",
                           timings={"shown_first_ms": ..., "shown_last_ms": ...,
                                    "scheduled_end_ms": ..., "t_abandon_ms": None},
                           responses={"acceptable": ("yes", 1840.0)},
                           events=[{"t_ms": 412.7, "kind": "chunk", "scheduled_ms": ...}])
    store.commit_end_responses(session, {"comments": ("fine", 5300.0)})
    store.set_state(session, "completed")

Guarantees:
- Every write is one short `BEGIN IMMEDIATE` transaction; `commit_trial` writes the trial's
  outcome, responses and events together, so a killed process loses at most the trial in
  flight. On resume that trial is stored as `interrupted` and the session continues with the
  next one of the same (stored) trial list; `sessions.resumed_count` says it was resumed.
- `requeue_trial(session, i, reason)` queues a finished or interrupted trial again after the
  planned list (table `requeued`): the same planned trial under a new trial_index; the
  attempt it replaces stays stored as it was. `unfinished_sessions(study)` lists what can
  be resumed; a quit (`set_state(..., "interrupted", by=...)`) leaves a `pause` audit entry.
- Every start and resume keeps its own environment (table `session_runs`, exported as
  `runs.csv`); `sessions.environment` stays the first run's.
- `withdraw(participant)` deletes every row of the participant and leaves an audit entry with
  counts and the SHA-256 of what was deleted, but no content.
- The `audit` table is append-only (triggers refuse UPDATE and DELETE) and hash-chained: each
  row's `chain` is the SHA-256 of the previous chain value and the row (`verify_audit`).
- Participant ids are pseudonymous: use `new_participant_id()` (e.g. `P-7K3QX`) or your own
  code, never a name. Ids with spaces are refused.
- `Store.open` refuses a read-only, damaged (`PRAGMA quick_check`) or foreign file before
  changing anything in it, and says what a SQLite error means (a full disk, a lock, ...):
  `uxlab.store.open_checks`.
- One live process per session: starting or resuming takes the session's lease, refused
  (naming the holder's host, pid and age) while another live process holds it; a dead
  holder's lease is taken over (`uxlab.store.lease`); `close()` gives leases back.

One `Store` per process (or thread); several processes may write one file at once (WAL and a
busy timeout serialise their short transactions). Wall-clock times come from `clock`
(injectable for tests), used only for timestamps and stale-slot detection.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
import re
import secrets
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from uxlab.outcomes import FINISHED, Outcome
from uxlab.store import lease, open_checks
from uxlab.store.schema import StoreError, migrate
from uxlab.study.adaptive import CommittedTrial
from uxlab.study.design import Trial, design_trials
from uxlab.study.questions import question_type
from uxlab.study.reproduce import stimulus_files
from uxlab.study.spec import Condition, Question, Study

OUTCOMES = tuple(FINISHED)
LIVE_STATES = ("created", "consented", "running")
"""Session states that hold a group slot while the session was seen recently."""
TRANSITIONS: dict[str, tuple[str, ...]] = {
    "created": ("consented", "interrupted", "withdrawn"),
    "consented": ("running", "interrupted", "withdrawn"),
    "running": ("completed", "interrupted", "withdrawn"),
    "interrupted": ("consented", "running", "withdrawn"),
    "completed": ("withdrawn",),
}
TIMING_COLUMNS = ("t_abandon_ms", "shown_first_ms", "shown_last_ms", "scheduled_end_ms")
END_INDEX = -1  # trial_index of end-of-study responses
_ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}$")
_ID_ALPHABET = "23456789ABCDEFGHJKMNPQRSTUVWXYZ"  # no 0/O, 1/I/L


def new_participant_id() -> str:
    """A random pseudonymous id like `P-7K3QX` (from `secrets`; 31^5 = 28 million ids)."""
    return "P-" + "".join(secrets.choice(_ID_ALPHABET) for _ in range(5))


def check_participant_id(participant: str) -> str:
    """Refuse ids that cannot be pseudonymous codes (spaces, empty, too long)."""
    if not isinstance(participant, str) or not _ID_RE.match(participant):
        raise StoreError(
            f"participant id {participant!r}: use a pseudonymous code of letters, digits, "
            "'-', '_', '.' or ':' without spaces (e.g. P-7K3QX), never a name"
        )
    return participant


def default_db_path(study: Study, root: str | Path = "results") -> Path:
    """`results/<study id>.sqlite`: one database per study (results/ is git-ignored)."""
    return Path(root) / f"{study.id}.sqlite"


def sha256_json(obj: Any) -> str:
    """SHA-256 of the canonical JSON of `obj` (sorted keys, no spaces)."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def sha256_json_streamed(obj: Any) -> str:
    """`sha256_json(obj)`, the same digest, encoded piece by piece (one list item at a time).

    For a trial of 100,000 events: no single call holds the interpreter for the whole
    encoding, so a commit in a worker thread leaves the UI loop free to run meanwhile.
    """
    digest = hashlib.sha256()
    for piece in _json_pieces(obj):
        digest.update(piece.encode())
    return digest.hexdigest()


def _json_pieces(obj: Any) -> Iterator[str]:
    if isinstance(obj, dict) and all(isinstance(k, str) for k in obj):
        yield "{"
        for n, key in enumerate(sorted(obj)):
            yield ("," if n else "") + json.dumps(key, ensure_ascii=False) + ":"
            yield from _json_pieces(obj[key])
        yield "}"
    elif isinstance(obj, (list, tuple)):
        yield "["
        for n, item in enumerate(obj):
            if n:
                yield ","
            yield from _json_pieces(item)
        yield "]"
    else:
        yield json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def study_summary(study: Study) -> dict[str, Any]:
    """What an analysis needs to know about a study (stored, and exported as study.json)."""
    d = study.design
    return {
        "study": {
            "id": study.id,
            "title": study.title,
            "version": study.version,
            "seed": study.seed,
            "sha256": study.sha256,
        },
        "factors": [
            {"name": f.name, "levels": list(f.levels), "between": f.between}
            | ({"procedure": f.procedure} if f.procedure != "fixed" else {})
            for f in study.factors
        ],
        "conditions": [{"condition_id": c.id, "levels": c.levels} for c in study.conditions],
        "questions": [q.to_dict() for q in study.questions],
        "design": {
            "order": d.order,
            "blocked_by": d.blocked_by,
            "repeats": d.repeats,
            "blocks": d.blocks,
            "max_run": d.max_run,
            "practice": d.practice,
            "break_every": d.break_every,
        },
        "abandon": {
            "key": study.abandon.key,
            "timeout_s": study.abandon.timeout_s,
            "ask_questions": study.abandon.ask_questions,
        },
        "attention": None
        if study.attention is None
        else {
            "every": study.attention.every,
            "question": study.attention.question,
            "answer": study.attention.answer,
        },
        "timing": dataclasses.asdict(study.timing),
        "profile": study.profile.to_table(),
    }


@dataclass
class Session:
    """A participant's run through a study, as the runner sees it."""

    id: str
    participant: str
    participant_number: int
    study: Study = field(repr=False)
    seed: int
    trials: list[Trial] = field(repr=False)
    next_index: int
    """The first trial not yet begun (the runner continues here)."""
    state: str
    resumed: bool = False
    resumed_count: int = 0
    interrupted: list[int] = field(default_factory=list)
    """Trials found in flight when this session was resumed (now stored as `interrupted`)."""
    group: str | None = None
    pilot: bool = False
    simulated: bool = False
    reruns: dict[int, tuple[int, str]] = field(default_factory=dict)
    """Re-runs queued at the end (`Store.requeue_trial`): their trial_index -> (the index
    of the attempt they replace, why). `trials` holds them after the planned list."""
    n_planned: int | None = None
    """The planned list's length (`trials` beyond it are re-runs); None: all of `trials`."""


@dataclass(frozen=True)
class UnfinishedSession:
    """A session that can be resumed, as the first screen of `uxlab run` lists it."""

    session_id: str
    participant: str
    state: str
    """`interrupted`: paused by a quit; `running` (or earlier): the program ended without
    a quit, or is still running elsewhere."""
    n_done: int
    """Trials with a final outcome (`interrupted` attempts not counted)."""
    n_trials: int
    """The trial list's length, re-runs included."""
    updated_at: str
    """Last activity (ISO 8601, UTC)."""
    last_seen_s: float
    """Last activity (wall-clock seconds)."""
    pilot: bool


class Store:
    """A study database. Open with `Store.open(path)`; see the module docstring for the flow."""

    def __init__(self, conn: sqlite3.Connection, path: Path, clock: Callable[[], float]):
        self.conn = conn
        self.path = path
        self.clock = clock
        self.leases: set[str] = set()
        """Sessions whose lease this store holds (`uxlab.store.lease`), given back at close."""

    # --- opening ----------------------------------------------------------------------------

    @classmethod
    def open(
        cls,
        path: str | Path,
        clock: Callable[[], float] = time.time,
        busy_timeout_s: float = 30.0,
    ) -> Store:
        """Open or create the database at `path` and bring its schema up to date.

        A write waits up to `busy_timeout_s` for another process's transaction, then fails
        with `sqlite3.OperationalError` ("database is locked"); nothing is half-written.
        A read-only, damaged or foreign file is refused (StoreError) before anything in it
        is changed (`uxlab.store.open_checks`). The connection may be used from another
        thread (a trial committed off the UI loop), one thread at a time.
        """
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
            conn.execute("PRAGMA synchronous = FULL")
            conn.execute("PRAGMA foreign_keys = ON")
            conn.execute("PRAGMA secure_delete = ON")  # a withdrawal leaves no readable remains
            store = cls(conn, path, clock)
            migrate(conn, str(path), store._now_iso())
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

    def close(self) -> None:
        """Give back this store's session leases and close the connection."""
        with suppress(sqlite3.Error):  # the lease is stale once this process is gone
            lease.give_back(self.conn, sorted(self.leases))
        self.leases.clear()
        self.conn.close()

    def __enter__(self) -> Store:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # --- helpers ----------------------------------------------------------------------------

    def _now_iso(self) -> str:
        return datetime.fromtimestamp(self.clock(), UTC).isoformat(timespec="milliseconds")

    @contextmanager
    def _write(self) -> Iterator[sqlite3.Connection]:
        """One short write transaction, taken with BEGIN IMMEDIATE (no lock upgrades)."""
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

    def _audit(self, action: str, subject: str | None, sha256: str, detail: dict) -> None:
        at = self._now_iso()
        detail_json = json.dumps(detail, sort_keys=True, separators=(",", ":"))
        row = self.conn.execute("SELECT chain FROM audit ORDER BY seq DESC LIMIT 1").fetchone()
        chain = _chain(row[0] if row else "", at, action, subject, sha256, detail_json)
        self.conn.execute(
            "INSERT INTO audit (at, action, subject, sha256, detail, chain) VALUES (?,?,?,?,?,?)",
            (at, action, subject, sha256, detail_json, chain),
        )

    def _counter(self, name: str) -> int:
        """Increment and return a persistent counter (inside a write transaction)."""
        self.conn.execute(
            "INSERT INTO counters (name, n) VALUES (?, 1) "
            "ON CONFLICT(name) DO UPDATE SET n = n + 1",
            (name,),
        )
        return self.conn.execute("SELECT n FROM counters WHERE name = ?", (name,)).fetchone()[0]

    def _ensure_participant(self, participant: str) -> int:
        row = self.conn.execute(
            "SELECT number FROM participants WHERE participant = ?", (participant,)
        ).fetchone()
        if row:
            return row[0]
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
        with self._write():
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
            "stimuli": json.dumps(stimulus_files(study), sort_keys=True),  # schema version 4
            "location": _location(study.path),
        }
        columns = {c[1] for c in self.conn.execute("PRAGMA table_info(studies)")}
        names = [k for k in row if k in columns]  # a file still at an older schema (tests)
        self.conn.execute(
            f"INSERT INTO studies ({', '.join(names)}) VALUES ({', '.join('?' * len(names))})",
            [row[k] for k in names],
        )
        self._audit("register", study.sha256, study.sha256, {"study_id": study.id})

    # --- groups -----------------------------------------------------------------------------

    def allocate_group(self, study: Study, participant: str) -> Condition | None:
        """The participant's between-participant group, allocated once from a counter.

        A group counts its completed sessions plus live ones (`LIVE_STATES`) seen within the
        study's `stale_after_min` (and just-allocated participants without a session yet);
        stale, interrupted and withdrawn participants give their slot back. A session is
        "seen" (`sessions.last_seen_s`) when it starts or resumes, changes state, or begins
        or commits a trial, so a participant taking part keeps the slot. The emptiest group below
        `group_cap` wins, ties broken by a persistent round-robin counter. Raises StoreError
        when every group is full.
        """
        groups = study.groups
        if not groups:
            return None
        check_participant_id(participant)
        with self._write():
            self._register(study)
            self._ensure_participant(participant)
            (current,) = self.conn.execute(
                "SELECT group_id FROM participants WHERE participant = ?", (participant,)
            ).fetchone()
            if current is not None:
                return next(g for g in groups if g.id == current)
            counts = self.group_counts(study)
            cap = study.counterbalance.group_cap
            open_groups = [g for g in groups if cap is None or counts[g.id] < cap]
            if not open_groups:
                raise StoreError(
                    f"{self.path}: every group of study {study.id!r} is full "
                    f"({cap} per group: {counts}); raise [counterbalance].group_cap"
                )
            turn = self._counter(f"group:{study.id}")
            fewest = min(counts[g.id] for g in open_groups)
            ring = groups[turn % len(groups) :] + groups[: turn % len(groups)]
            chosen = next(g for g in ring if g in open_groups and counts[g.id] == fewest)
            self.conn.execute(
                "UPDATE participants SET group_id = ? WHERE participant = ?",
                (chosen.id, participant),
            )
            self._audit(
                "allocate", None, sha256_json(chosen.id), {"group": chosen.id, "counts": counts}
            )
            return chosen

    def group_counts(self, study: Study) -> dict[str, int]:
        """How many slots each group holds now (completed + live + freshly allocated)."""
        stale_s = self.clock() - study.counterbalance.stale_after_min * 60.0
        counts = {g.id: 0 for g in study.groups}
        live_states = ", ".join("?" * len(LIVE_STATES))
        rows = self.conn.execute(
            f"""
            SELECT p.group_id,
                   SUM(s.state = 'completed') AS done,
                   SUM(s.state IN ({live_states}) AND s.last_seen_s >= ?) AS live,
                   COUNT(s.session_id) AS n_sessions,
                   p.created_s
            FROM participants p
            LEFT JOIN sessions s ON s.participant = p.participant
                 AND s.study_sha256 IN (SELECT sha256 FROM studies WHERE study_id = ?)
            WHERE p.group_id IS NOT NULL
            GROUP BY p.participant
            """,
            (*LIVE_STATES, stale_s, study.id),
        ).fetchall()
        for group_id, done, live, n_sessions, created_s in rows:
            holds = (done or 0) > 0 or (live or 0) > 0 or (n_sessions == 0 and created_s >= stale_s)
            if holds and group_id in counts:
                counts[group_id] += 1
        return counts

    # --- sessions ---------------------------------------------------------------------------

    def start_or_resume_session(
        self,
        study: Study,
        participant: str,
        seed: int | None = None,
        environment: dict[str, Any] | None = None,
        pilot: bool = False,
        simulated: bool = False,
    ) -> Session:
        """Start the participant's session, or resume their unfinished one.

        A new session gets the trial list from `design_trials` (stored with it). Resuming
        marks any trial in flight `interrupted`, keeps the stored trial list, counts the
        resume, and returns `next_index` after the last trial begun. A participant who
        completed the study is refused (StoreError), as is resuming with a changed study file.
        """
        check_participant_id(participant)
        environment = dict(environment or {})
        seed = study.seed if seed is None else int(seed)
        now_s, now = self.clock(), self._now_iso()
        with self._write():
            self._register(study)
            number = self._ensure_participant(participant)
            row = self.conn.execute(
                """
                SELECT s.session_id, s.state, s.study_sha256, s.plan, s.seed, s.resumed_count,
                       s.group_id, s.pilot, s.simulated
                FROM sessions s JOIN studies st ON st.sha256 = s.study_sha256
                WHERE s.participant = ? AND st.study_id = ?
                ORDER BY s.created_at DESC, s.rowid DESC LIMIT 1
                """,
                (participant, study.id),
            ).fetchone()
            if row and row[1] == "completed":
                raise StoreError(
                    f"{self.path}: participant {participant} already completed study "
                    f"{study.id!r} (session {row[0]}); use a new participant id"
                )
            if row:
                self._take_lease(study, participant, row[0], now_s, now)
                return self._resume(study, participant, number, row, now, now_s, environment)
            (group_id,) = self.conn.execute(
                "SELECT group_id FROM participants WHERE participant = ?", (participant,)
            ).fetchone()
            group = None
            if study.groups:
                if group_id is None:
                    raise StoreError(
                        f"study {study.id!r} has between-participant factors: call "
                        "allocate_group(study, participant) before starting the session"
                    )
                group = next(g for g in study.groups if g.id == group_id)
            trials = design_trials(study, participant, number, seed, group)
            plan = [t.to_dict() for t in trials]
            plan_sha = sha256_json(plan)
            session_id = "S-" + uuid.uuid4().hex[:12]
            self.conn.execute(
                "INSERT INTO sessions (session_id, participant, study_sha256, seed, state, pilot,"
                " simulated, environment, plan, plan_sha256, group_id, resumed_count, created_at,"
                " updated_at, last_seen_s) VALUES (?,?,?,?,?,?,?,?,?,?,?,0,?,?,?)",
                (
                    session_id,
                    participant,
                    study.sha256,
                    seed,
                    "created",
                    int(pilot),
                    int(simulated),
                    json.dumps(environment, sort_keys=True),
                    json.dumps(plan),
                    plan_sha,
                    group_id,
                    now,
                    now,
                    now_s,
                ),
            )
            self._audit(
                "create",
                session_id,
                plan_sha,
                {"study_sha256": study.sha256, "seed": seed, "n_trials": len(trials)},
            )
            self._add_run(session_id, 0, 0, environment, now)
            self._take_lease(study, participant, session_id, now_s, now)
        return Session(
            id=session_id,
            participant=participant,
            participant_number=number,
            study=study,
            seed=seed,
            trials=trials,
            next_index=0,
            state="created",
            group=group_id,
            pilot=pilot,
            simulated=simulated,
            n_planned=len(trials),
        )

    def _take_lease(
        self, study: Study, participant: str, session_id: str, now_s: float, now: str
    ) -> None:
        """Hold the session for this process (raises while another live process holds it)."""
        stale_s = study.counterbalance.stale_after_min * 60.0
        lease.take(self.conn, self.path, session_id, participant, now_s, now, stale_s)
        self.leases.add(session_id)

    def _add_run(
        self, session_id: str, run: int, next_index: int, environment: dict[str, Any], now: str
    ) -> None:
        """Keep this start's or resume's environment (and its timing warnings)."""
        self.conn.execute(
            "INSERT INTO session_runs (session_id, run, kind, started_at, next_index, "
            "environment) VALUES (?,?,?,?,?,?)",
            (
                session_id,
                run,
                "resume" if run else "start",
                now,
                next_index,
                json.dumps(environment, sort_keys=True),
            ),
        )

    def _resume(
        self,
        study: Study,
        participant: str,
        number: int,
        row: tuple,
        now: str,
        now_s: float,
        environment: dict[str, Any],
    ) -> Session:
        session_id, state, sha, plan_json, seed, resumed_count, group_id, pilot, simulated = row
        if sha != study.sha256:
            raise StoreError(
                f"{self.path}: session {session_id} ran study file {sha[:12]}…, but this file is "
                f"{study.sha256[:12]}…; resume with the original file (the database holds its "
                "text) or use a new participant id"
            )
        in_flight = [
            r[0]
            for r in self.conn.execute(
                "SELECT trial_index FROM trials WHERE session_id = ? AND outcome = 'running' "
                "ORDER BY trial_index",
                (session_id,),
            )
        ]
        self.conn.execute(
            "UPDATE trials SET outcome = 'interrupted', committed_at = ? "
            "WHERE session_id = ? AND outcome = 'running'",
            (now, session_id),
        )
        (last,) = self.conn.execute(
            "SELECT MAX(trial_index) FROM trials WHERE session_id = ? AND trial_index >= 0",
            (session_id,),
        ).fetchone()
        resumed_count += 1
        self.conn.execute(
            "UPDATE sessions SET state = 'interrupted', resumed_count = ?, updated_at = ?, "
            "last_seen_s = ? WHERE session_id = ?",
            (resumed_count, now, now_s, session_id),
        )
        next_index = 0 if last is None else last + 1
        self._audit(
            "resume",
            session_id,
            sha256_json(in_flight),
            {"interrupted": in_flight, "next_index": next_index, "previous_state": state},
        )
        self._add_run(session_id, resumed_count, next_index, environment, now)
        trials = [Trial.from_dict(d) for d in json.loads(plan_json)]
        n_planned = len(trials)
        reruns = self._reruns(session_id)
        trials += [self._rerun_trial(trials, i, session_id) for i in sorted(reruns)]
        return Session(
            id=session_id,
            participant=participant,
            participant_number=number,
            study=study,
            seed=seed,
            trials=trials,
            next_index=next_index,
            state="interrupted",
            resumed=True,
            resumed_count=resumed_count,
            interrupted=in_flight,
            group=group_id,
            pilot=bool(pilot),
            simulated=bool(simulated),
            reruns=reruns,
            n_planned=n_planned,
        )

    # --- re-runs at the end -------------------------------------------------------------------

    def _reruns(self, session_id: str) -> dict[int, tuple[int, str]]:
        return {
            idx: (of, reason)
            for idx, of, reason in self.conn.execute(
                "SELECT trial_index, of_index, reason FROM requeued WHERE session_id = ?",
                (session_id,),
            )
        }

    def _rerun_trial(self, planned: list[Trial], trial_index: int, session_id: str) -> Trial:
        (root,) = self.conn.execute(
            "SELECT root_index FROM requeued WHERE session_id = ? AND trial_index = ?",
            (session_id, trial_index),
        ).fetchone()
        return dataclasses.replace(planned[root], index=trial_index, break_before=False)

    def requeue_trial(
        self, session: Session, of_index: int, reason: str, max_per_reason: int = 1
    ) -> Trial | None:
        """Queue trial `of_index` again at the end of the session's list; returns the re-run.

        The re-run plays the same planned trial (condition, recording, seed) under a new
        `trial_index` after every other trial; the attempt `of_index` stays stored as it is
        and `requeued` says which re-run replaces it and why (`reason`, e.g. `interrupted`).
        None (nothing queued) for a practice trial, an attempt already queued again, or a
        planned trial already re-run `max_per_reason` times for this reason. The attempt
        must be over (committed or `interrupted`): StoreError otherwise.
        """
        if not 0 <= of_index < len(session.trials):
            raise StoreError(f"session {session.id}: no trial {of_index} to queue again")
        trial = session.trials[of_index]
        if trial.practice:
            return None
        n_planned = session.n_planned if session.n_planned is not None else len(session.trials)
        now = self._now_iso()
        with self._write():
            row = self.conn.execute(
                "SELECT committed_at FROM trials WHERE session_id = ? AND trial_index = ?",
                (session.id, of_index),
            ).fetchone()
            if row is None or row[0] is None:
                raise StoreError(
                    f"session {session.id}: trial {of_index} is not over (only a committed or "
                    "interrupted trial can be queued again)"
                )
            queued = self.conn.execute(
                "SELECT root_index FROM requeued WHERE session_id = ? AND trial_index = ?",
                (session.id, of_index),
            ).fetchone()
            root = queued[0] if queued else of_index
            if root >= n_planned:
                raise StoreError(f"session {session.id}: trial {of_index} has no planned trial")
            (already,) = self.conn.execute(
                "SELECT COUNT(*) FROM requeued WHERE session_id = ? AND of_index = ?",
                (session.id, of_index),
            ).fetchone()
            (n_same,) = self.conn.execute(
                "SELECT COUNT(*) FROM requeued WHERE session_id = ? AND root_index = ? "
                "AND reason = ?",
                (session.id, root, reason),
            ).fetchone()
            if already or n_same >= max_per_reason:
                return None
            index = len(session.trials)
            self.conn.execute(
                "INSERT INTO requeued (session_id, trial_index, of_index, root_index, reason, "
                "queued_at) VALUES (?,?,?,?,?,?)",
                (session.id, index, of_index, root, reason, now),
            )
            detail = {"trial_index": index, "of_index": of_index, "reason": reason}
            self._audit("requeue", session.id, sha256_json(detail), detail)
        plan = session.trials[:n_planned]
        rerun = dataclasses.replace(plan[root], index=index, break_before=False)
        session.trials.append(rerun)
        session.reruns[index] = (of_index, reason)
        return rerun

    def requeued_attempts(self, session: Session) -> dict[int, tuple[int, str]]:
        """Attempts queued again: their trial_index -> (the re-run's index, why)."""
        return {of: (idx, why) for idx, (of, why) in session.reruns.items()}

    def interrupted_trials(self, session: Session) -> list[int]:
        """Indexes of the session's trials stored as `interrupted`, in order."""
        return [
            r[0]
            for r in self.conn.execute(
                "SELECT trial_index FROM trials WHERE session_id = ? AND outcome = 'interrupted' "
                "ORDER BY trial_index",
                (session.id,),
            )
        ]

    def unfinished_sessions(self, study: Study) -> list[UnfinishedSession]:
        """This study file's sessions that can be resumed, the most recently active first.

        Not listed: completed or withdrawn sessions, simulated ones, and sessions of another
        version of the study file (they cannot be resumed with this one).
        """
        rows = self.conn.execute(
            """
            SELECT s.session_id, s.participant, s.state, s.plan, s.updated_at, s.last_seen_s,
                   s.pilot,
                   (SELECT COUNT(*) FROM trials t WHERE t.session_id = s.session_id
                    AND t.committed_at IS NOT NULL AND t.outcome != 'interrupted'),
                   (SELECT COUNT(*) FROM requeued q WHERE q.session_id = s.session_id)
            FROM sessions s
            WHERE s.study_sha256 = ? AND s.simulated = 0
              AND s.state IN ('created', 'consented', 'running', 'interrupted')
            ORDER BY s.last_seen_s DESC, s.rowid DESC
            """,
            (study.sha256,),
        ).fetchall()
        return [
            UnfinishedSession(
                session_id=sid,
                participant=participant,
                state=state,
                n_done=n_done,
                n_trials=len(json.loads(plan)) + n_reruns,
                updated_at=updated_at,
                last_seen_s=last_seen_s,
                pilot=bool(pilot),
            )
            for sid, participant, state, plan, updated_at, last_seen_s, pilot, n_done, n_reruns
            in rows
        ]  # fmt: skip

    def unfinished_of_other_versions(self, study: Study) -> int:
        """How many unfinished sessions of this study id ran another version of its file."""
        (n,) = self.conn.execute(
            "SELECT COUNT(*) FROM sessions s JOIN studies st ON st.sha256 = s.study_sha256 "
            "WHERE st.study_id = ? AND s.study_sha256 != ? AND s.simulated = 0 "
            "AND s.state IN ('created', 'consented', 'running', 'interrupted')",
            (study.id, study.sha256),
        ).fetchone()
        return int(n)

    def set_state(self, session: Session, state: str, by: str | None = None) -> None:
        """Move the session along `created → consented → running → completed`.

        `interrupted` is set by a resume, or by a quit (a pause: `by` names what quit, `key`
        or a signal such as `SIGHUP`, kept in a `pause` audit entry); `withdrawn` deletes the
        participant's data (see `withdraw`).
        """
        allowed = TRANSITIONS.get(session.state, ())
        if state not in allowed:
            raise StoreError(
                f"session {session.id}: cannot go from {session.state!r} to {state!r} "
                f"(allowed: {', '.join(allowed) or 'nothing'})"
            )
        if state == "withdrawn":
            self.withdraw(session.participant)
            session.state = state
            return
        with self._write():
            self.conn.execute(
                "UPDATE sessions SET state = ?, updated_at = ?, last_seen_s = ? "
                "WHERE session_id = ?",
                (state, self._now_iso(), self.clock(), session.id),
            )
            if state in ("running", "completed"):
                digest = self._session_digest(session.id)
                self._audit(
                    "run" if state == "running" else "finish",
                    session.id,
                    digest,
                    {"resumed_count": session.resumed_count},
                )
            elif state == "interrupted" and by is not None:
                detail = {"by": by, "resumed_count": session.resumed_count}
                self._audit("pause", session.id, sha256_json(detail), detail)
        session.state = state

    # --- trials -----------------------------------------------------------------------------

    def begin_trial(
        self,
        session: Session,
        trial_index: int,
        planned: Trial | None = None,
        schedule_sha256: str | None = None,
    ) -> None:
        """Record the trial as in flight (committed), before its stream starts.

        `planned` is the trial as played (an adaptive level resolved); `schedule_sha256`
        the SHA-256 of the schedule it plays (`uxlab.study.reproduce.schedule_sha256`).
        """
        if trial_index != session.next_index:
            raise StoreError(
                f"session {session.id}: trial {trial_index} begun out of order "
                f"(the next trial is {session.next_index})"
            )
        if not 0 <= trial_index < len(session.trials):
            raise StoreError(f"session {session.id}: no trial {trial_index} in the trial list")
        t = planned or session.trials[trial_index]
        now = self._now_iso()
        with self._write():
            self.conn.execute(
                "INSERT INTO trials (session_id, trial_index, block, practice, kind, "
                "condition_id, levels, replay_id, seed, attention, outcome, started_at, "
                "schedule_sha256) VALUES (?,?,?,?,?,?,?,?,?,?, 'running', ?, ?)",
                (
                    session.id,
                    trial_index,
                    t.block,
                    int(t.practice),
                    t.kind,
                    t.condition_id,
                    json.dumps(t.levels, sort_keys=True),
                    t.replay_id,
                    t.seed,
                    int(t.attention is not None),
                    now,
                    schedule_sha256,
                ),
            )
            self.conn.execute(
                "UPDATE sessions SET updated_at = ?, last_seen_s = ? WHERE session_id = ?",
                (now, self.clock(), session.id),
            )
        session.next_index = trial_index + 1

    def release_trial(self, session: Session, trial_index: int) -> bool:
        """Take back a trial begun but never sent (the participant quit before Enter).

        Its in-flight row is deleted, so a resume offers the same trial again instead of
        storing it as `interrupted`. Only the last trial begun, only while still in flight
        and with nothing stored for it; returns False (and changes nothing) otherwise.
        """
        if trial_index != session.next_index - 1:
            return False
        with self._write():
            stored = self.conn.execute(
                "SELECT (SELECT COUNT(*) FROM events WHERE session_id = ?1 AND trial_index = ?2)"
                " + (SELECT COUNT(*) FROM responses WHERE session_id = ?1 AND trial_index = ?2)",
                (session.id, trial_index),
            ).fetchone()[0]
            if stored:
                return False
            cur = self.conn.execute(
                "DELETE FROM trials WHERE session_id = ? AND trial_index = ? "
                "AND outcome = 'running'",
                (session.id, trial_index),
            )
            if cur.rowcount != 1:
                return False
            self._audit("release", session.id, sha256_json(trial_index),
                        {"trial_index": trial_index})  # fmt: skip
        session.next_index = trial_index
        return True

    def commit_trial(
        self,
        session: Session,
        trial_index: int,
        outcome: str,
        timings: dict[str, float | None] | None = None,
        responses: dict[str, Any] | None = None,
        events: list[dict[str, Any]] | None = None,
    ) -> str:
        """Store a trial's outcome, timings, responses and events in ONE transaction.

        `responses` maps question id to `(value, rt_ms)` or `{"value": ..., "rt_ms": ...}`;
        `events` are dicts with `kind` and `t_ms` (the rest is kept as data). Returns the
        SHA-256 of what was stored (also written to the audit log).
        """
        if outcome not in OUTCOMES:
            raise StoreError(
                f"trial {trial_index}: outcome {outcome!r} is not one of {', '.join(OUTCOMES)}"
            )
        timings = dict(timings or {})
        for key, value in timings.items():
            if value is not None and not isinstance(value, (int, float)):
                raise StoreError(f"trial {trial_index}: timing {key}={value!r} is not a number")
        if outcome == Outcome.ABANDONED and timings.get("t_abandon_ms") is None:
            raise StoreError(f"trial {trial_index}: an abandoned trial needs t_abandon_ms")
        trial = session.trials[trial_index]
        answers = _normalise_responses(
            session.study.trial_response_questions, responses or {}, f"trial {trial_index}"
        )
        attention_ok = None
        check = trial.attention
        given = None if check is None else answers.get(check.question, (None, None))[0]
        if check is not None and given is not None:  # unanswered (a quit): stays empty
            question = session.study.question(check.question)
            attention_ok = int(_matches(question, given, check.answer))
        events = list(events or [])
        event_rows = []
        for seq, ev in enumerate(events):
            ev = dict(ev)
            kind = ev.pop("kind", None)
            if not isinstance(kind, str):
                raise StoreError(f"trial {trial_index}: event {seq} has no 'kind'")
            t_ms = ev.pop("t_ms", None)
            data = json.dumps(ev, sort_keys=True, separators=(",", ":"))
            event_rows.append((session.id, trial_index, seq, t_ms, kind, data))
        extra = {k: v for k, v in timings.items() if k not in TIMING_COLUMNS}
        payload = {
            "session_id": session.id,
            "trial_index": trial_index,
            "outcome": outcome,
            "timings": timings,
            "responses": answers,
            "events": event_rows,
        }
        digest = sha256_json_streamed(payload)  # = sha256_json(payload), loop-friendly
        now = self._now_iso()
        with self._write():
            cur = self.conn.execute(
                "UPDATE trials SET outcome = ?, attention_ok = ?, t_abandon_ms = ?, "
                "shown_first_ms = ?, shown_last_ms = ?, scheduled_end_ms = ?, timings = ?, "
                "committed_at = ? WHERE session_id = ? AND trial_index = ? "
                "AND outcome = 'running'",
                (
                    outcome,
                    attention_ok,
                    *(timings.get(k) for k in TIMING_COLUMNS),
                    json.dumps(extra, sort_keys=True) if extra else None,
                    now,
                    session.id,
                    trial_index,
                ),
            )
            if cur.rowcount != 1:
                raise StoreError(
                    f"session {session.id}: trial {trial_index} is not in flight (call "
                    "begin_trial first; a trial is committed once)"
                )
            self.conn.executemany(
                "INSERT INTO responses VALUES (?,?,?,?,?)",
                [(session.id, trial_index, q, v, rt) for q, (v, rt) in answers.items()],
            )
            self.conn.executemany("INSERT INTO events VALUES (?,?,?,?,?,?)", event_rows)
            self.conn.execute(
                "UPDATE sessions SET updated_at = ?, last_seen_s = ? WHERE session_id = ?",
                (now, self.clock(), session.id),
            )
            self._audit("trial", session.id, digest, {"trial_index": trial_index})
        return digest

    def committed_trials(self, session: Session) -> list[CommittedTrial]:
        """The session's committed trials in order: levels, outcome and answers."""
        answers: dict[int, dict[str, str | None]] = {}
        for idx, qid, value in self.conn.execute(
            "SELECT trial_index, question_id, value FROM responses WHERE session_id = ?",
            (session.id,),
        ):
            answers.setdefault(idx, {})[qid] = value
        return [
            CommittedTrial(
                idx, bool(practice), bool(att), json.loads(levels), outcome, answers.get(idx, {})
            )
            for idx, practice, att, levels, outcome in self.conn.execute(
                "SELECT trial_index, practice, attention, levels, outcome FROM trials "
                "WHERE session_id = ? AND committed_at IS NOT NULL AND outcome != 'interrupted' "
                "ORDER BY trial_index",
                (session.id,),
            )
        ]

    def set_adaptive(self, session: Session, state: dict[str, Any]) -> None:
        """Keep the adaptive procedures' state (estimates, posterior) with the session."""
        with self._write():
            self.conn.execute(
                "UPDATE sessions SET adaptive = ? WHERE session_id = ?",
                (json.dumps(state, sort_keys=True), session.id),
            )

    def adaptive_state(self, session_id: str) -> dict[str, Any] | None:
        """The stored adaptive state of a session (None when the study is not adaptive)."""
        row = self.conn.execute(
            "SELECT adaptive FROM sessions WHERE session_id = ?", (session_id,)
        ).fetchone()
        return json.loads(row[0]) if row and row[0] else None

    def add_session_event(
        self, session: Session, kind: str, t_ms: float | None, data: dict[str, Any]
    ) -> None:
        """Store one event of the session, not of a trial (e.g. the terminal's size at a start
        or a resize between trials), at once, under `trial_index` -1 (`END_INDEX`)."""
        payload = json.dumps(data, sort_keys=True, separators=(",", ":"))
        with self._write():
            (seq,) = self.conn.execute(
                "SELECT COALESCE(MAX(seq), -1) + 1 FROM events WHERE session_id = ? "
                "AND trial_index = ?",
                (session.id, END_INDEX),
            ).fetchone()
            self.conn.execute(
                "INSERT INTO events VALUES (?,?,?,?,?,?)",
                (session.id, END_INDEX, seq, t_ms, kind, payload),
            )

    def commit_end_responses(self, session: Session, responses: dict[str, Any]) -> None:
        """Store the answers to the end-of-study questions (one transaction)."""
        answers = _normalise_responses(session.study.end_questions, responses, "end questions")
        with self._write():
            self.conn.executemany(
                "INSERT OR REPLACE INTO responses VALUES (?,?,?,?,?)",
                [(session.id, END_INDEX, q, v, rt) for q, (v, rt) in answers.items()],
            )
            self._audit("answers", session.id, sha256_json(answers), {"n": len(answers)})

    # --- consent, withdrawal ----------------------------------------------------------------

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
        self._audit(action, None, sha256_json(dump), counts)
        return counts

    # --- reading ----------------------------------------------------------------------------

    def session_state(self, study: Study, participant: str) -> tuple[str, int, str] | None:
        """The state of the participant's latest session of `study`, its trials stored
        (committed or in flight) and its id, or None when they have none (read only)."""
        row = self.conn.execute(
            "SELECT s.state, (SELECT COUNT(*) FROM trials t WHERE t.session_id = s.session_id "
            "AND t.trial_index >= 0), s.session_id FROM sessions s JOIN studies st ON st.sha256 = "
            "s.study_sha256 WHERE s.participant = ? AND st.study_id = ? "
            "ORDER BY s.created_at DESC, s.rowid DESC LIMIT 1",
            (participant, study.id),
        ).fetchone()
        return None if row is None else (row[0], row[1], row[2])

    def audit_entries(self) -> list[dict[str, Any]]:
        cur = self.conn.execute(
            "SELECT seq, at, action, subject, sha256, detail, chain FROM audit ORDER BY seq"
        )
        cols = [c[0] for c in cur.description]
        return [dict(zip(cols, r, strict=True)) for r in cur]

    def verify_audit(self) -> bool:
        """True when every audit row's chain value matches the rows before it."""
        return first_broken_audit_entry(self.conn)[1] is None

    def record_export(self, digest: str, detail: dict[str, Any]) -> None:
        """Append an `export` entry to the audit log (the only write an export makes)."""
        with self._write():
            self._audit("export", None, digest, detail)

    def _session_digest(self, session_id: str) -> str:
        rows = self.conn.execute(
            "SELECT trial_index, outcome, t_abandon_ms, shown_first_ms, shown_last_ms, "
            "scheduled_end_ms FROM trials WHERE session_id = ? ORDER BY trial_index",
            (session_id,),
        ).fetchall()
        answers = self.conn.execute(
            "SELECT trial_index, question_id, value, rt_ms FROM responses WHERE session_id = ? "
            "ORDER BY 1, 2",
            (session_id,),
        ).fetchall()
        return sha256_json({"trials": rows, "responses": answers})


def _location(path: Path) -> str | None:
    """The study file's path relative to the working folder (POSIX), or None outside it."""
    try:
        return path.resolve().relative_to(Path.cwd().resolve()).as_posix()
    except ValueError:
        return None


def _chain(prev: str, at: str, action: str, subject: str | None, sha: str, detail: str) -> str:
    text = "\x1f".join((prev, at, action, subject or "", sha, detail))
    return hashlib.sha256(text.encode()).hexdigest()


def first_broken_audit_entry(conn: sqlite3.Connection) -> tuple[int, dict[str, Any] | None]:
    """The number of audit entries and the first whose `chain` does not follow (or None).

    Each entry's chain is recomputed from the one before; a changed, removed or inserted
    entry breaks it there. Reads only, so it also runs on a read-only connection.
    """
    prev = ""
    n_entries = 0
    broken = None
    cur = conn.execute(
        "SELECT seq, at, action, subject, sha256, detail, chain FROM audit ORDER BY seq"
    )
    cols = [c[0] for c in cur.description]
    for row in cur:
        n_entries += 1
        if broken is not None:
            continue
        entry = dict(zip(cols, row, strict=True))
        fields = (entry["at"], entry["action"], entry["subject"], entry["sha256"], entry["detail"])
        if not all(f is None or isinstance(f, str) for f in fields):
            broken = entry  # a value changed to a number or bytes
            continue
        chain = _chain(prev, *fields)
        if chain != entry["chain"]:
            broken = entry
        prev = chain
    return n_entries, broken


def _normalise_responses(
    questions: list[Question], responses: dict[str, Any], where: str
) -> dict[str, tuple[str | None, float | None]]:
    """Check answers against their questions; returns {id: (value as text, rt_ms)}."""
    by_id = {q.id: q for q in questions}
    out: dict[str, tuple[str | None, float | None]] = {}
    for qid, answer in responses.items():
        if qid not in by_id:
            raise StoreError(
                f"{where}: {qid!r} is not one of the questions asked here "
                f"({', '.join(by_id) or 'none'})"
            )
        if isinstance(answer, dict):
            value, rt_ms = answer.get("value"), answer.get("rt_ms")
        elif isinstance(answer, (tuple, list)) and len(answer) == 2:
            value, rt_ms = answer
        else:
            value, rt_ms = answer, None
        if rt_ms is not None and not isinstance(rt_ms, (int, float)):
            raise StoreError(f"{where}: {qid} response time {rt_ms!r} is not a number")
        out[qid] = (_check_value(by_id[qid], value, where), rt_ms)
    return out


def _check_value(q: Question, value: Any, where: str) -> str | None:
    """The answer as stored: its type's `normalise` (`uxlab.study.questions`)."""
    if value is None:
        return None
    try:
        return question_type(q.type).normalise(q, value)
    except ValueError:
        raise StoreError(f"{where}: {q.id} ({q.type}) cannot take {value!r}") from None


def _matches(q: Question, given: str | None, answer: str) -> bool:
    return given is not None and question_type(q.type).matches(q, given, answer)
