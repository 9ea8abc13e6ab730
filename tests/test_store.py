"""The store's API: sessions, resume, one-transaction commits, withdrawal, groups, audit."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest

from uxlab.store import SCHEMA_VERSION, Store, StoreError, new_participant_id
from uxlab.store.errors import store_errors
from uxlab.study import load_study, parse_study

BAD = Path(__file__).parent / "data" / "bad_studies"
GOOD = BAD / "good.toml"


class FakeClock:
    """Wall-clock seconds that only move when told to."""

    def __init__(self, t: float = 1_800_000_000.0):
        self.t = t

    def __call__(self) -> float:
        return self.t


@pytest.fixture
def study():
    return load_study(GOOD)


@pytest.fixture
def store(db):
    """A store on each backend (SQLite file, PostgreSQL database)."""
    s = Store.open(db, clock=FakeClock())
    yield s
    s.close()


def run_trial(store, session, index, outcome="completed", answer="yes", events=2):
    store.trials.begin(session, index)
    return store.trials.commit(
        session,
        index,
        outcome,
        {
            "shown_first_ms": 410.0,
            "shown_last_ms": 2300.0,
            "scheduled_end_ms": 2290.0,
            "t_abandon_ms": 900.0 if outcome == "abandoned" else None,
            "frames": 31,
        },
        {"acceptable": (answer, 1500.0), "speed": {"value": 3, "rt_ms": 800.0}},
        [{"kind": "chunk", "t_ms": 400.0 + k, "scheduled_ms": 399.0 + k} for k in range(events)],
    )


def test_opens_in_wal_with_full_sync_and_current_schema(tmp_path):
    store = Store.open(tmp_path / "results" / "good.sqlite", clock=FakeClock())
    assert store.db.conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert store.db.conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    assert store.db.conn.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION
    store.close()
    again = Store.open(store.path)  # reopening an up-to-date file changes nothing
    assert (
        again.db.conn.execute("SELECT COUNT(*) FROM schema_migrations").fetchone()[0]
        == SCHEMA_VERSION
    )
    again.close()


def test_a_newer_schema_or_a_foreign_file_is_refused(tmp_path):
    newer = tmp_path / "newer.sqlite"
    conn = sqlite3.connect(newer)
    conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION + 1}")
    conn.close()
    with pytest.raises(StoreError, match="written by a newer uxlab"):
        Store.open(newer)
    junk = tmp_path / "junk.sqlite"
    junk.write_bytes(b"this is not a database at all" * 100)
    with pytest.raises(StoreError, match="not a uxlab study database"):
        Store.open(junk)


def test_full_session_flow(store, study):
    session = store.sessions.start_or_resume(
        study, "P-7K3QX", environment={"term": "xterm-256color"}, simulated=True
    )
    assert session.state == "created" and session.next_index == 0 and not session.resumed
    assert session.participant_number == 1
    store.sessions.set_state(session, "consented")
    store.sessions.set_state(session, "running")
    for t in session.trials:
        run_trial(store, session, t.index, answer="no" if t.attention else "yes")
    store.end_answers.commit(session, {"comments": ("all fine", 4200.0)})
    store.sessions.set_state(session, "completed")
    rows = store.db.conn.execute(
        "SELECT outcome, attention, attention_ok FROM trials ORDER BY trial_index"
    ).fetchall()
    assert len(rows) == len(session.trials)
    assert {r[0] for r in rows} == {"completed"}
    assert {r[2] for r in rows if r[1]} == {1}
    assert [e["action"] for e in store.audit.entries()][:4] == [
        "register", "create", "run", "trial",
    ]  # fmt: skip
    assert store.audit.entries()[-1]["action"] == "finish"
    with pytest.raises(StoreError, match="already completed"):
        store.sessions.start_or_resume(study, "P-7K3QX")


def test_resume_marks_the_trial_in_flight_and_continues_after_it(db, study):
    with Store.open(db) as store:
        session = store.sessions.start_or_resume(study, "P-RESUME")
        store.sessions.set_state(session, "consented")
        store.sessions.set_state(session, "running")
        for i in range(3):
            run_trial(store, session, i)
        store.trials.begin(session, 3)  # the process "dies" here
        planned = session.trials
    with Store.open(db) as store:
        again = store.sessions.start_or_resume(study, "P-RESUME", seed=999)  # seed is ignored
        assert again.resumed and again.resumed_count == 1
        assert again.interrupted == [3] and again.next_index == 4
        assert again.trials == planned  # the stored list, not a new one
        assert again.state == "interrupted"
        store.sessions.set_state(again, "running")
        run_trial(store, again, 4)
        outcomes = dict(store.db.conn.execute("SELECT trial_index, outcome FROM trials"))
        assert outcomes == {0: "completed", 1: "completed", 2: "completed", 3: "interrupted",
                            4: "completed"}  # fmt: skip
        (count,) = store.db.conn.execute("SELECT resumed_count FROM sessions").fetchone()
        assert count == 1


def test_resume_with_a_changed_study_file_is_refused(db, study):
    with Store.open(db) as store:
        store.sessions.start_or_resume(study, "P-CHANGE")
        changed = parse_study(study.text.replace("seed = 11", "seed = 12"), GOOD)
        with pytest.raises(StoreError, match="resume with the original file"):
            store.sessions.start_or_resume(changed, "P-CHANGE")


def test_commit_is_one_transaction(store, study):
    session = store.sessions.start_or_resume(study, "P-ATOMIC")
    store.sessions.set_state(session, "consented")
    store.sessions.set_state(session, "running")
    store.trials.begin(session, 0)
    with pytest.raises(StoreError, match="event 1 has no 'kind'"):
        store.trials.commit(
            session, 0, "completed", {}, {"acceptable": ("yes", 1.0)},
            [{"kind": "chunk", "t_ms": 1.0}, {"t_ms": 2.0}],
        )  # fmt: skip
    with pytest.raises(StoreError, match="not one of the questions"):
        store.trials.commit(session, 0, "completed", {}, {"comments": ("x", 1.0)}, [])
    with pytest.raises(StoreError, match=r"speed \(likert\) cannot take 9"):
        store.trials.commit(session, 0, "completed", {}, {"speed": (9, 1.0)}, [])
    assert store.db.conn.execute("SELECT COUNT(*) FROM responses").fetchone()[0] == 0
    assert store.db.conn.execute("SELECT COUNT(*) FROM events").fetchone()[0] == 0
    assert store.db.conn.execute("SELECT outcome FROM trials").fetchone()[0] == "running"
    store.trials.commit(session, 0, "abandoned", {"t_abandon_ms": 700.0}, {}, [])
    with pytest.raises(StoreError, match="not in flight"):
        store.trials.commit(session, 0, "completed", {}, {}, [])
    with pytest.raises(StoreError, match="needs t_abandon_ms"):
        store.trials.begin(session, 1)
        store.trials.commit(session, 1, "abandoned", {}, {}, [])
    with pytest.raises(StoreError, match="out of order"):
        store.trials.begin(session, 5)


def test_state_machine_refuses_skipping(store, study):
    session = store.sessions.start_or_resume(study, "P-STATE")
    with pytest.raises(StoreError, match="cannot go from 'created' to 'running'"):
        store.sessions.set_state(session, "running")


def test_participant_ids_are_pseudonymous_codes(store, study):
    pid = new_participant_id()
    assert pid.startswith("P-") and len(pid) == 7 and " " not in pid
    for bad in ("Jane Doe", "", "x" * 80, "a/b"):
        with pytest.raises(StoreError, match="never a name"):
            store.sessions.start_or_resume(study, bad)


def test_withdrawal_deletes_everything_and_audits_without_content(tmp_path, study):
    db = tmp_path / "w.sqlite"
    with Store.open(db) as store:
        keep = store.sessions.start_or_resume(study, "P-KEEPME")
        gone = store.sessions.start_or_resume(study, "P-WITHDRAWN")
        for s in (keep, gone):
            store.sessions.set_state(s, "consented")
            store.sessions.set_state(s, "running")
            run_trial(store, s, 0, events=20)
        store.sessions.set_state(gone, "withdrawn")
        entry = store.audit.entries()[-1]
        assert entry["action"] == "delete" and entry["subject"] is None
        assert "P-WITHDRAWN" not in str(store.audit.entries())
        assert '"events":20' in entry["detail"] and '"trials":1' in entry["detail"]
        left = {"participants": 1, "sessions": 1, "trials": 1, "responses": 2, "events": 20}
        for table, n in left.items():  # only P-KEEPME's rows remain
            assert store.db.conn.execute(f"SELECT COUNT(*) FROM {table}").fetchone()[0] == n
        store.db.conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        assert store.audit.is_intact()
    raw = db.read_bytes() + (db.with_name(db.name + "-wal").read_bytes()
                             if db.with_name(db.name + "-wal").exists() else b"")  # fmt: skip
    assert b"P-WITHDRAWN" not in raw and b"P-KEEPME" in raw


def test_audit_is_append_only(store, study):
    store.sessions.start_or_resume(study, "P-AUDIT")
    with pytest.raises(store_errors(), match="append-only"):
        store.db.conn.execute("UPDATE audit SET action = 'x'")
    with pytest.raises(store_errors(), match="append-only"):
        store.db.conn.execute("DELETE FROM audit")
    assert store.audit.is_intact()


def test_refusal_keeps_only_a_count(store, study):
    session = store.sessions.start_or_resume(study, "P-NO")
    store.withdrawal.record_refusal(session)
    assert store.db.conn.execute("SELECT COUNT(*) FROM refusals").fetchone()[0] == 1
    assert store.db.conn.execute("SELECT COUNT(*) FROM sessions").fetchone()[0] == 0
    assert store.audit.entries()[-1]["action"] == "refuse"


GROUPS = """
[factors.jitter]
levels = [0.2, 0.8]
between = true

[counterbalance]
group_cap = 2
stale_after_min = 30
"""


def test_groups_fill_evenly_up_to_the_cap_and_stale_slots_return(db):
    text = GOOD.read_text().replace("[design]", GROUPS + "\n[design]")
    text = text.replace("[profile]\n", '[profile]\nitl = "lognormal:median=30,sigma=0.5"\n')
    study = parse_study(text, GOOD)
    clock = FakeClock()
    with Store.open(db, clock=clock) as store:
        got = {}
        for p in ("P-G1", "P-G2", "P-G3", "P-G4"):
            got[p] = store.groups.allocate(study, p).id
            session = store.sessions.start_or_resume(study, p)
            assert all(t.levels["jitter"] == float(got[p].split("=")[1]) for t in session.trials)
        assert sorted(got.values()) == ["jitter=0.2", "jitter=0.2", "jitter=0.8", "jitter=0.8"]
        assert store.groups.allocate(study, "P-G1").id == got["P-G1"]  # allocated once
        with pytest.raises(StoreError, match="every group of study 'good' is full"):
            store.groups.allocate(study, "P-G5")
        # P-G1 completes (keeps its slot); the others go quiet for longer than 30 minutes
        s1 = store.sessions.start_or_resume(study, "P-G1")
        store.sessions.set_state(s1, "running")
        store.sessions.set_state(s1, "completed")
        clock.t += 31 * 60
        assert store.groups.counts(study)[got["P-G1"]] == 1
        assert store.groups.allocate(study, "P-G5").id in ("jitter=0.2", "jitter=0.8")
        with pytest.raises(StoreError, match=r"call store\.groups\.allocate"):
            store.sessions.start_or_resume(study, "P-NOGROUP")


def test_migrations_upgrade_in_place_and_roll_back_on_failure(tmp_path, study, monkeypatch):
    """The mechanism a release after the first will use: a new entry of MIGRATIONS."""
    from uxlab.store import schema

    db = tmp_path / "m.sqlite"
    current = schema.SCHEMA_VERSION
    released = list(schema.MIGRATIONS)
    with Store.open(db) as store:  # a current-version database with data in it
        store.sessions.start_or_resume(study, "P-OLD")
    broken = [*released, "ALTER TABLE no_such_table ADD COLUMN x TEXT"]
    monkeypatch.setattr(schema, "MIGRATIONS", broken)
    monkeypatch.setattr(schema, "SCHEMA_VERSION", current + 1)
    with pytest.raises(sqlite3.OperationalError):
        Store.open(db)
    conn = sqlite3.connect(db)
    assert conn.execute("PRAGMA user_version").fetchone()[0] == current  # left as it was
    conn.close()
    upgrade = [*released, "ALTER TABLE sessions ADD COLUMN note TEXT"]
    monkeypatch.setattr(schema, "MIGRATIONS", upgrade)
    with Store.open(db) as store:
        assert store.db.conn.execute("PRAGMA user_version").fetchone()[0] == current + 1
        assert store.db.conn.execute("SELECT participant, note FROM sessions").fetchall() == [
            ("P-OLD", None)
        ]
        applied = store.db.conn.execute("SELECT version FROM schema_migrations").fetchall()
        assert applied == [(k,) for k in range(1, current + 2)]


def test_every_start_and_resume_keeps_its_own_environment(store, study, db, tmp_path):
    from uxlab.store import export_db, read_tables

    first = {"term": "xterm-256color", "columns": 80, "timing_warnings": []}
    later = {"term": "tmux-256color", "columns": 70, "timing_warnings": ["inside tmux", "70x20"]}
    session = store.sessions.start_or_resume(study, "P-RUNS1", environment=first)
    store.trials.begin(session, 0)  # then the process dies
    again = store.sessions.start_or_resume(study, "P-RUNS1", environment=later)
    _columns, runs = read_tables(db)["runs"]
    assert [(r["run"], r["kind"], r["next_index"]) for r in runs] == [
        (0, "start", 0),
        (1, "resume", 1),
    ]
    assert [(r["env_term"], r["env_columns"]) for r in runs] == [
        ("xterm-256color", 80),
        ("tmux-256color", 70),
    ]
    assert again.resumed_count == 1
    out = export_db(db, tmp_path / "out")
    sessions = (out["sessions"]).read_text().splitlines()
    assert "xterm-256color" in sessions[1] and "tmux" not in sessions[1]  # the first run's
    runs_csv = out["runs"].read_text().splitlines()
    assert runs_csv[0].startswith("session_id,participant,run,kind,started_at,next_index,env_")
    assert [line.split(",")[2:4] for line in runs_csv[1:]] == [["0", "start"], ["1", "resume"]]
    assert "inside tmux | 70x20" in runs_csv[2] and "tmux" not in runs_csv[1]
    store.withdrawal.withdraw("P-RUNS1")
    assert store.db.conn.execute("SELECT COUNT(*) FROM session_runs").fetchone() == (0,)


def test_a_live_session_keeps_its_group_slot_while_it_begins_and_commits_trials(db):
    """Last activity is every write for the session; quiet live sessions go stale."""
    text = GOOD.read_text().replace("[design]", GROUPS + "\n[design]")
    text = text.replace("[profile]\n", '[profile]\nitl = "lognormal:median=30,sigma=0.5"\n')
    study = parse_study(text, GOOD)
    clock = FakeClock()
    with Store.open(db, clock=clock) as store:
        group = store.groups.allocate(study, "P-A").id
        busy = store.sessions.start_or_resume(study, "P-A")
        store.sessions.set_state(busy, "consented")
        store.sessions.set_state(busy, "running")
        other = store.groups.allocate(study, "P-B").id
        store.sessions.start_or_resume(study, "P-B")  # then nothing more
        assert other != group
        for index in range(2):  # P-A works on, 20 minutes per trial: 40 > 30 minutes in all
            clock.t += 10 * 60
            store.trials.begin(busy, index)
            clock.t += 10 * 60
            store.trials.commit(busy, index, "completed")
        assert store.groups.counts(study) == {group: 1, other: 0}
        clock.t += 31 * 60  # now P-A has gone quiet too
        assert store.groups.counts(study) == {group: 0, other: 0}
