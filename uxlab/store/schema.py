"""The store's SQLite schema, its version, and the migrations from the first release on.

The version is kept in `PRAGMA user_version`; `MIGRATIONS[k]` takes a database from
version k to k + 1 and runs in the same transaction that sets the new version, so a failed
upgrade leaves the file as it was. A database made by a newer uxlab is refused, never
"downgraded". Each applied step is also written to `schema_migrations` with its time.

Tables:
  studies       every study file used: id, version, SHA-256 and full text; its stimulus
                files' SHA-256 and where it was run from (schema version 4)
  participants  pseudonymous ids, their sequential number (Latin-square row) and group
  sessions      one run of a participant through a study: state machine, environment
                (of the first run), the planned trial list (JSON), pilot/simulated flags,
                resume count, the adaptive procedures' state (JSON; schema version 2)
  session_runs  one row per start or resume of a session: when, and that run's
                environment with its timing warnings (JSON; schema version 3)
  trials        planned condition and seed, outcome, timings, attention result, the
                SHA-256 of the schedule played (schema version 4)
  requeued      trials queued again at the end of their session: the attempt replaced,
                the planned trial re-run and why, e.g. `interrupted` (schema version 5)
  responses     one row per question answered (trial_index -1: end-of-study questions)
  events        every emitted chunk and key press of a trial
  counters      persistent counters: participant numbers, between-group allocation
  refusals      a count of declined consents (no ids)
  audit         append-only log: create, run, resume, finish, export, delete, refuse, ...

  session_leases which process runs a session now (`uxlab.store.lease`; schema version 6,
                created on first use before)
  invitations   invitation codes' SHA-256 and the participant each stands for
                (`uxlab.store.invitations`; schema version 6, created on first use before)
  browser_paints when each chunk was painted in a participant's browser tab
                (`uxlab.store.browser_paints`; schema version 7, created on first use before)
  enrolment_salt the open-enrolment salt, one row (`uxlab.store.enrolment_salt`; schema
                version 8, a file beside the database before)
"""

from __future__ import annotations

import sqlite3

from uxlab.errors import UxlabError
from uxlab.store.backend import Connection

_V1 = """
CREATE TABLE studies (
    sha256        TEXT PRIMARY KEY,
    study_id      TEXT NOT NULL,
    version       TEXT NOT NULL,
    title         TEXT NOT NULL,
    seed          INTEGER NOT NULL,
    path          TEXT NOT NULL,
    text          TEXT NOT NULL,
    summary       TEXT NOT NULL,          -- JSON: factors, questions, design (study.json)
    registered_at TEXT NOT NULL
);
CREATE TABLE participants (
    participant   TEXT PRIMARY KEY,
    number        INTEGER NOT NULL UNIQUE,
    group_id      TEXT,
    created_at    TEXT NOT NULL,
    created_s     REAL NOT NULL           -- wall-clock seconds, for stale-slot detection
);
CREATE TABLE sessions (
    session_id    TEXT PRIMARY KEY,
    participant   TEXT NOT NULL REFERENCES participants(participant) ON DELETE CASCADE,
    study_sha256  TEXT NOT NULL REFERENCES studies(sha256),
    seed          INTEGER NOT NULL,
    state         TEXT NOT NULL CHECK (state IN
                  ('created','consented','running','completed','withdrawn','interrupted')),
    pilot         INTEGER NOT NULL DEFAULT 0,
    simulated     INTEGER NOT NULL DEFAULT 0,
    environment   TEXT NOT NULL,          -- JSON
    plan          TEXT NOT NULL,          -- JSON list of planned trials
    plan_sha256   TEXT NOT NULL,
    group_id      TEXT,
    resumed_count INTEGER NOT NULL DEFAULT 0,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    last_seen_s   REAL NOT NULL           -- wall-clock seconds, for stale-slot detection
);
CREATE INDEX sessions_participant ON sessions(participant);
CREATE TABLE trials (
    session_id    TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    trial_index   INTEGER NOT NULL,
    block         INTEGER NOT NULL,
    practice      INTEGER NOT NULL,
    kind          TEXT NOT NULL,
    condition_id  TEXT NOT NULL,
    levels        TEXT NOT NULL,          -- JSON {factor: level}
    replay_id     TEXT,
    seed          INTEGER NOT NULL,
    attention     INTEGER NOT NULL,
    outcome       TEXT NOT NULL CHECK (outcome IN
                  ('running','completed','abandoned','timed_out','error','interrupted')),
    attention_ok  INTEGER,
    t_abandon_ms  REAL,
    shown_first_ms REAL,
    shown_last_ms REAL,
    scheduled_end_ms REAL,
    timings       TEXT,                   -- JSON: any further timings the runner gave
    started_at    TEXT NOT NULL,
    committed_at  TEXT,
    PRIMARY KEY (session_id, trial_index)
);
CREATE TABLE responses (
    session_id    TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    trial_index   INTEGER NOT NULL,
    question_id   TEXT NOT NULL,
    value         TEXT,
    rt_ms         REAL,
    PRIMARY KEY (session_id, trial_index, question_id)
);
CREATE TABLE events (
    session_id    TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    trial_index   INTEGER NOT NULL,
    seq           INTEGER NOT NULL,
    t_ms          REAL,
    kind          TEXT NOT NULL,
    data          TEXT NOT NULL,          -- JSON
    PRIMARY KEY (session_id, trial_index, seq)
);
CREATE TABLE counters (
    name          TEXT PRIMARY KEY,       -- 'participant_number', 'group:<study id>'
    n             INTEGER NOT NULL
);
CREATE TABLE refusals (
    study_sha256  TEXT NOT NULL,
    at            TEXT NOT NULL
);
CREATE TABLE audit (
    seq           INTEGER PRIMARY KEY AUTOINCREMENT,
    at            TEXT NOT NULL,
    action        TEXT NOT NULL,
    subject       TEXT,                   -- a session id, a study hash; NULL after a deletion
    sha256        TEXT NOT NULL,          -- SHA-256 of what the action stored
    detail        TEXT NOT NULL,          -- JSON without participant content
    chain         TEXT NOT NULL           -- SHA-256 of the previous chain value and this row
);
CREATE TRIGGER audit_no_update BEFORE UPDATE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END;
CREATE TRIGGER audit_no_delete BEFORE DELETE ON audit
BEGIN SELECT RAISE(ABORT, 'the audit table is append-only'); END;
"""

_V2 = """
ALTER TABLE sessions ADD COLUMN adaptive TEXT;  -- JSON: adaptive procedures' state, or NULL
"""

_V3 = """
CREATE TABLE session_runs (
    session_id    TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    run           INTEGER NOT NULL,       -- 0 = the start, k = the k-th resume
    kind          TEXT NOT NULL CHECK (kind IN ('start','resume')),
    started_at    TEXT NOT NULL,
    next_index    INTEGER NOT NULL,       -- the trial this run started with
    environment   TEXT NOT NULL,          -- JSON: terminal, size, frame cap, timing_warnings
    PRIMARY KEY (session_id, run)
);
-- Sessions from before version 3 keep their first run's environment (resumes were not kept).
INSERT INTO session_runs (session_id, run, kind, started_at, next_index, environment)
    SELECT session_id, 0, 'start', created_at, 0, environment FROM sessions;
"""

_V4 = """
-- SHA-256 of the schedule a trial played (`uxlab.study.reproduce.schedule_sha256`);
-- NULL for trials begun before version 4 (`uxlab verify` says they were not checked).
ALTER TABLE trials ADD COLUMN schedule_sha256 TEXT;
-- JSON [{path, sha256, ids}]: the stimulus files when the study was registered, paths
-- relative to the study file's folder; NULL for studies registered before version 4.
ALTER TABLE studies ADD COLUMN stimuli TEXT;
-- The study file's path relative to the working folder it was run from (NULL if outside).
ALTER TABLE studies ADD COLUMN location TEXT;
"""

_V5 = """
-- Trials queued again at the end of a session (`Store.requeue_trial`): the re-run's own
-- trial_index comes after the planned list; it plays the planned trial `root_index` again.
CREATE TABLE requeued (
    session_id    TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    trial_index   INTEGER NOT NULL,       -- the re-run's place (>= the planned list's length)
    of_index      INTEGER NOT NULL,       -- the attempt it replaces (still stored, as it was)
    root_index    INTEGER NOT NULL,       -- the planned trial it plays (index in sessions.plan)
    reason        TEXT NOT NULL,          -- why: 'interrupted', ...
    queued_at     TEXT NOT NULL,
    PRIMARY KEY (session_id, trial_index),
    UNIQUE (session_id, of_index)
);
"""

_V6 = """
-- Which process runs a session now (`uxlab.store.lease`). Before version 6 this table and
-- `invitations` were created on first use, so a database may hold them already.
CREATE TABLE IF NOT EXISTS session_leases (
    session_id    TEXT PRIMARY KEY REFERENCES sessions(session_id) ON DELETE CASCADE,
    host          TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    pid_started   TEXT,                   -- the process's start stamp (Linux), against pid reuse
    taken_at      TEXT NOT NULL,
    taken_s       REAL NOT NULL           -- wall-clock seconds
);
-- Invitation codes (`uxlab.store.invitations`): only each code's SHA-256 is kept.
CREATE TABLE IF NOT EXISTS invitations (
    code_sha256   TEXT PRIMARY KEY,
    study_id      TEXT NOT NULL,
    participant   TEXT NOT NULL UNIQUE,
    created_at    TEXT NOT NULL
);
"""

_V7 = """
-- When each chunk was painted in a participant's browser tab (`uxlab.store.browser_paints`),
-- one row per chunk. Before version 7 the web host created it on first use (SQLite only), so
-- a database may hold it already.
CREATE TABLE IF NOT EXISTS browser_paints (
    session_id    TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    trial_index   INTEGER NOT NULL,
    chunk_index   INTEGER NOT NULL,
    painted_ms    REAL NOT NULL,          -- on the player's clock, from the trial's send
    clock_uncertainty_ms REAL NOT NULL,   -- +- of the page-to-host clock mapping
    parse_to_paint_ms REAL NOT NULL,      -- on the page's clock alone
    PRIMARY KEY (session_id, trial_index, chunk_index)
);
"""

_V8 = """
-- The open-enrolment salt (`uxlab.store.enrolment_salt`): one row, written once by the first
-- host to enrol a participant. Before version 8 it was a file beside the database.
CREATE TABLE IF NOT EXISTS enrolment_salt (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    salt          TEXT NOT NULL,          -- hex; never exported
    made_at       TEXT NOT NULL
);
"""

# MIGRATIONS[k] upgrades version k to k + 1. Version 0 is an empty file.
MIGRATIONS: list[str] = [_V1, _V2, _V3, _V4, _V5, _V6, _V7, _V8]
SCHEMA_VERSION = len(MIGRATIONS)


class StoreError(UxlabError):
    """A store that cannot be used as asked (newer schema, bad id, wrong state, ...)."""


class StoreUnreachable(StoreError):
    """The database server cannot be reached now (a PostgreSQL store: restarted, failed
    over, the network); nothing of the failed write is stored and it can be tried again."""


def migrate(conn: Connection, path: str, now_iso: str) -> int:
    """Bring the database to SCHEMA_VERSION; returns the version it was at."""
    conn.execute("BEGIN IMMEDIATE")
    try:
        (version,) = conn.execute("PRAGMA user_version").fetchone()
        if version > SCHEMA_VERSION:
            raise StoreError(
                f"{path}: schema version {version} was written by a newer uxlab (this one "
                f"knows up to {SCHEMA_VERSION}); upgrade uxlab to open it"
            )
        if version == SCHEMA_VERSION:
            conn.execute("COMMIT")
            return int(version)
        conn.execute(
            "CREATE TABLE IF NOT EXISTS schema_migrations (version INTEGER PRIMARY KEY, "
            "applied_at TEXT NOT NULL)"
        )
        for k in range(version, SCHEMA_VERSION):
            for statement in _statements(MIGRATIONS[k]):
                conn.execute(statement)
            conn.execute("INSERT INTO schema_migrations VALUES (?, ?)", (k + 1, now_iso))
        conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
        conn.execute("COMMIT")
        return int(version)
    except BaseException:
        if conn.in_transaction:  # a failed COMMIT (disk full) has already rolled back
            conn.execute("ROLLBACK")
        raise


def _statements(script: str) -> list[str]:
    """Split a DDL script into statements (triggers hold `;` inside BEGIN ... END)."""
    out, buf = [], ""
    for line in script.strip().splitlines():
        buf += line + "\n"
        if sqlite3.complete_statement(buf):
            out.append(buf.strip())
            buf = ""
    if buf.strip():
        out.append(buf.strip())
    return out
