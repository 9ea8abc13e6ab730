"""The store's schema, its version, and how a database is upgraded after the first release.

`SCHEMA` is the first release's schema, version 1: `migrate` writes it into an empty
database. A change after that release is a new entry of `MIGRATIONS`, never an edit of
`SCHEMA`, so a database an earlier release made is upgraded in place. The version is kept
in `PRAGMA user_version` (on PostgreSQL: the highest version in `schema_migrations`); each
step runs in the same transaction that sets the new version, so a failed upgrade leaves the
file as it was, and is written to `schema_migrations` with its time. A database made by a
newer uxlab is refused, never "downgraded".

Tables:
  studies       every study file used: id, version, SHA-256 and full text; its stimulus
                files' SHA-256 and where it was run from
  participants  pseudonymous ids, their sequential number (Latin-square row) and group
  sessions      one run of a participant through a study: state machine, environment
                (of the first run), the planned trial list (JSON), pilot/simulated flags,
                resume count, the adaptive procedures' state (JSON)
  session_runs  one row per start or resume of a session: when, and that run's
                environment with its timing warnings (JSON)
  trials        planned condition and seed, outcome, timings, attention result, the
                SHA-256 of the schedule played
  requeued      trials queued again at the end of their session: the attempt replaced,
                the planned trial re-run and why, e.g. `interrupted`
  responses     one row per question answered (trial_index -1: end-of-study questions)
  events        every emitted chunk and key press of a trial
  counters      persistent counters: participant numbers, between-group allocation
  refusals      a count of declined consents (no ids)
  audit         append-only log: create, run, resume, finish, export, delete, refuse, ...
  session_leases which process runs a session now (`uxlab.store.lease`)
  invitations   invitation codes' SHA-256 and the participant each stands for
                (`uxlab.store.invitations`)
  browser_paints when each chunk was painted in a participant's browser tab
                (`uxlab.store.browser_paints`)
  enrolment_salt the open-enrolment salt, one row (`uxlab.store.enrolment_salt`)
"""

from __future__ import annotations

import sqlite3

from uxlab.errors import UxlabError
from uxlab.store.backend import Connection

SCHEMA = """
CREATE TABLE studies (
    sha256        TEXT PRIMARY KEY,
    study_id      TEXT NOT NULL,
    version       TEXT NOT NULL,
    title         TEXT NOT NULL,
    seed          INTEGER NOT NULL,
    path          TEXT NOT NULL,
    text          TEXT NOT NULL,
    summary       TEXT NOT NULL,          -- JSON: factors, questions, design (study.json)
    registered_at TEXT NOT NULL,
    stimuli       TEXT,                   -- JSON [{path, sha256, ids}]: the stimulus files at
                                          -- registration, paths relative to the study's folder
    location      TEXT                    -- the study file's path relative to the working
                                          -- folder it was run from (NULL if outside it)
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
    last_seen_s   REAL NOT NULL,          -- wall-clock seconds, for stale-slot detection
    adaptive      TEXT                    -- JSON: the adaptive procedures' state, or NULL
);
CREATE INDEX sessions_participant ON sessions(participant);
CREATE TABLE session_runs (
    session_id    TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    run           INTEGER NOT NULL,       -- 0 = the start, k = the k-th resume
    kind          TEXT NOT NULL CHECK (kind IN ('start','resume')),
    started_at    TEXT NOT NULL,
    next_index    INTEGER NOT NULL,       -- the trial this run started with
    environment   TEXT NOT NULL,          -- JSON: terminal, size, frame cap, timing_warnings
    PRIMARY KEY (session_id, run)
);
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
    schedule_sha256 TEXT,                 -- of the schedule played (`uxlab.study.reproduce`),
                                          -- what `uxlab verify` rebuilds; NULL: not given
    PRIMARY KEY (session_id, trial_index)
);
-- Trials queued again at the end of a session (`Sessions.requeue_trial`): the re-run's own
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
-- Which process runs a session now (`uxlab.store.lease`).
CREATE TABLE session_leases (
    session_id    TEXT PRIMARY KEY REFERENCES sessions(session_id) ON DELETE CASCADE,
    host          TEXT NOT NULL,
    pid           INTEGER NOT NULL,
    pid_started   TEXT,                   -- the process's start stamp (Linux), against pid reuse
    taken_at      TEXT NOT NULL,
    taken_s       REAL NOT NULL           -- wall-clock seconds
);
-- Invitation codes (`uxlab.store.invitations`): only each code's SHA-256 is kept.
CREATE TABLE invitations (
    code_sha256   TEXT PRIMARY KEY,
    study_id      TEXT NOT NULL,
    participant   TEXT NOT NULL UNIQUE,
    created_at    TEXT NOT NULL
);
-- When each chunk was painted in a participant's browser tab (`uxlab.store.browser_paints`),
-- one row per chunk.
CREATE TABLE browser_paints (
    session_id    TEXT NOT NULL REFERENCES sessions(session_id) ON DELETE CASCADE,
    trial_index   INTEGER NOT NULL,
    chunk_index   INTEGER NOT NULL,
    painted_ms    REAL NOT NULL,          -- on the player's clock, from the trial's send
    clock_uncertainty_ms REAL NOT NULL,   -- +- of the page-to-host clock mapping
    parse_to_paint_ms REAL NOT NULL,      -- on the page's clock alone
    PRIMARY KEY (session_id, trial_index, chunk_index)
);
-- The open-enrolment salt (`uxlab.store.enrolment_salt`): one row, written once by the first
-- host to enrol a participant.
CREATE TABLE enrolment_salt (
    id            INTEGER PRIMARY KEY CHECK (id = 1),
    salt          TEXT NOT NULL,          -- hex; never exported
    made_at       TEXT NOT NULL
);
"""
"""The first release's schema (version 1): what `migrate` writes into an empty database."""

MIGRATIONS: list[str] = []
"""`MIGRATIONS[k]` takes a database from version k + 1 to k + 2 (none before the first release)."""
SCHEMA_VERSION = 1 + len(MIGRATIONS)


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
        steps = [SCHEMA, *MIGRATIONS]  # steps[k] takes version k to k + 1 (0: an empty file)
        for k in range(version, SCHEMA_VERSION):
            for statement in _statements(steps[k]):
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
