"""The store on a shared PostgreSQL server: several hosts at once, connections that drop,
a server that restarts, and exports byte-identical to SQLite's (the cluster is started by
the tests themselves: `helpers.postgres`)."""

from __future__ import annotations

import filecmp
import subprocess
import sys
import time
from pathlib import Path

import pytest
from helpers.postgres import query

from uxlab.simulate.driver import simulate_cohort
from uxlab.store import Store, export_db
from uxlab.store.postgres import StoreUnreachable
from uxlab.study import load_study, parse_study

HERE = Path(__file__).parent
GOOD = HERE / "data" / "bad_studies" / "good.toml"
ALLOCATE = HERE / "store_allocate_child.py"

THREE_GROUPS = """
[factors.jitter]
levels = [0.2, 0.5, 0.8]
between = true

[counterbalance]
stale_after_min = 30
"""


class Ticks:
    """A wall clock that moves 0.25 s each time it is read: the same for the same calls."""

    def __init__(self) -> None:
        self.t = 1_800_000_000.0

    def __call__(self) -> float:
        self.t += 0.25
        return self.t


def repeatable(db, clock: Ticks) -> Store:
    store = Store.open(db, clock=clock)
    ids = iter(range(1, 10**6))
    store.sessions.new_id = lambda: f"S-{next(ids):012d}"
    return store


def test_export_gives_byte_identical_tables_from_both_backends(tmp_path, postgres_db):
    study = load_study(GOOD)
    out = {}
    for name, db in (("sqlite", tmp_path / "study.sqlite"), ("postgresql", postgres_db)):
        with repeatable(db, Ticks()) as store:
            simulate_cohort(study, store, 4, seed=7)
        out[name] = export_db(db, tmp_path / name)
    names = sorted(k for k in out["sqlite"] if k != "study")
    assert names == ["events", "runs", "sessions", "trials"]
    for table in [*names, "study"]:
        a, b = out["sqlite"][table], out["postgresql"][table]
        assert filecmp.cmp(a, b, shallow=False), f"{table}: the backends' exports differ"
    assert out["sqlite"].rows["trials"] > 40 and out["sqlite"].rows["events"] > 100


def test_every_commit_is_durable_whatever_the_servers_default(postgres_cluster):
    db = postgres_cluster.database()
    name = db.rsplit("/", 1)[1]
    query(db, f"ALTER DATABASE {name} SET synchronous_commit = off")  # a lax server default
    assert query(db, "SHOW synchronous_commit") == [("off",)]
    with Store.open(db) as store:
        assert store.db.conn.execute("SHOW synchronous_commit").fetchone() == ("on",)


def test_every_number_column_is_64_bit_even_under_a_commented_statement(postgres_db):
    """PostgreSQL's REAL is 32-bit: a wall-clock second stored in it is off by up to 64 s
    (a lease's age), a painted time by fractions of a ms. Schema statements headed by a
    comment (`requeued`, `session_leases`, ...) are changed like the others."""
    Store.open(postgres_db).close()
    narrow = query(
        postgres_db,
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = current_schema() AND data_type IN ('real', 'integer')",
    )
    assert narrow == []
    with Store.open(postgres_db, clock=lambda: 1_800_000_000.125) as store:
        store.sessions.start_or_resume(load_study(GOOD), "P-TTTTT")
        (taken_s,) = store.db.conn.execute("SELECT taken_s FROM session_leases").fetchone()
    assert taken_s == 1_800_000_000.125


def test_a_database_that_cannot_be_opened_is_named_in_one_line(postgres_cluster):
    from uxlab.store import StoreError

    url = postgres_cluster.url.rsplit("/", 1)[0] + "/no_such_db"
    secret = url.replace("postgres@", "postgres:hunter2@")
    with pytest.raises(StoreError, match=r'no_such_db.*database "no_such_db" does not exist') as e:
        Store.open(secret)
    assert "hunter2" not in str(e.value)


def _three_groups(tmp_path: Path) -> Path:
    text = GOOD.read_text().replace("[design]", THREE_GROUPS + "\n[design]")
    text = text.replace("[profile]\n", '[profile]\nitl = "lognormal:median=30,sigma=0.5"\n')
    text = text.replace('corpus = "corpus"', f'corpus = "{(GOOD.parent / "corpus").as_posix()}"')
    path = tmp_path / "groups.toml"
    path.write_text(text)
    parse_study(text, path)  # a valid study
    return path


def test_two_hosts_allocate_200_concurrent_starts_balanced_without_duplicates(tmp_path, db):
    """Two processes with 4 stores (threads) each start 100 participants apiece at the same moment.
    The design's rule: each start takes the emptiest group, so with every slot live the
    groups differ by at most one; every participant has one number, one group, one session,
    and the audit chain has one entry per write, in one line."""
    study_path = _three_groups(tmp_path)
    with Store.open(db) as store:
        store.studies.register(load_study(study_path))
    hosts = subprocess.Popen(  # one process that forks the two hosts
        [sys.executable, str(ALLOCATE), str(db), str(study_path), "100", "4"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    ready = [hosts.stdout.readline() for _ in range(2)]
    if ready != ["READY\n", "READY\n"]:
        hosts.kill()
        pytest.fail(f"the hosts did not start: {ready} {hosts.communicate()[1][-2000:]}")
    out, err = hosts.communicate("GO\n", timeout=300)  # both go at once
    assert hosts.returncode == 0 and out.split() == ["DONE", "100", "DONE", "100"], err
    rows = query(db, "SELECT participant, number, group_id FROM participants")
    assert len(rows) == 200
    assert sorted(n for _, n, _ in rows) == list(range(1, 201))  # no number twice
    counts: dict[str, int] = {}
    for _, _, group in rows:
        counts[group] = counts.get(group, 0) + 1
    assert sorted(counts) == ["jitter=0.2", "jitter=0.5", "jitter=0.8"]
    assert max(counts.values()) - min(counts.values()) <= 1, counts
    sessions = query(db, "SELECT participant, COUNT(*) FROM sessions GROUP BY participant")
    assert len(sessions) == 200 and {n for _, n in sessions} == {1}
    with Store.open(db) as store:
        entries = store.audit.entries()
        assert store.audit.is_intact()  # one linear chain
    actions = [e["action"] for e in entries]
    assert actions.count("allocate") == 200 and actions.count("create") == 200
    assert [e["seq"] for e in entries] == sorted(e["seq"] for e in entries)


def _running(store: Store, participant: str):
    study = load_study(GOOD)
    session = store.sessions.start_or_resume(study, participant)
    store.sessions.set_state(session, "consented")
    store.sessions.set_state(session, "running")
    return session


def _commit(store: Store, session, index: int) -> str:
    store.trials.begin(session, index)
    return store.trials.commit(
        session,
        index,
        "completed",
        {"shown_first_ms": 300.0, "shown_last_ms": 900.0, "scheduled_end_ms": 900.0},
        {"acceptable": ("yes", 1000.0 + index)},
        [{"kind": "chunk", "t_ms": 300.0 + k} for k in range(5)],
    )


def until_reconnected(write, timeout_s: float = 60.0):
    """Run `write` again while the server is unreachable, as the runner's screen does."""
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return write()
        except StoreUnreachable:
            if time.monotonic() > deadline:
                raise


def test_a_connection_dropped_mid_transaction_stores_nothing_of_it(postgres_cluster):
    db = postgres_cluster.database()
    name = db.rsplit("/", 1)[1]
    with Store.open(db) as store:
        session = _running(store, "P-DROP1")
        _commit(store, session, 0)
        n_audit = len(store.audit.entries())
        with pytest.raises(StoreUnreachable, match="reconnecting"), store.db.write_transaction():
            store.db.conn.execute("INSERT INTO refusals VALUES (?, ?)", ("x", "half-written"))
            store.db.conn.execute(
                "INSERT INTO audit (at, action, subject, sha256, detail, chain) "
                "VALUES ('half-written', 'refuse', NULL, ?, '{}', ?)",
                ("0" * 64, "0" * 64),
            )
            assert postgres_cluster.terminate_backends(name) >= 1  # the server drops us
            store.db.conn.execute("SELECT COUNT(*) FROM refusals")
        assert not store.db.conn.in_transaction
        assert query(db, "SELECT COUNT(*) FROM refusals") == [(0,)]  # rolled back, whole
        assert len(store.audit.entries()) == n_audit
        _commit(store, session, 1)  # the pool connects anew: the next write goes through
        assert query(db, "SELECT trial_index, outcome FROM trials ORDER BY 1") == [
            (0, "completed"),
            (1, "completed"),
        ]
        assert store.audit.is_intact()


@pytest.mark.slow
def test_a_server_restart_during_a_session_loses_nothing_committed(postgres_cluster):
    """A failover-style restart (`pg_ctl stop -m immediate`, then start): a write while the
    server is down fails with a "reconnecting" error and stores nothing; once it is back the
    same write goes through and every trial committed before is there."""
    db = postgres_cluster.database()
    with Store.open(db, busy_timeout_s=1.0) as store:
        session = _running(store, "P-RESTART")
        digests = [_commit(store, session, i) for i in range(3)]
        postgres_cluster.stop_now()
        try:
            with pytest.raises(StoreUnreachable, match="reconnecting"):
                store.trials.begin(session, 3)
            assert session.next_index == 3  # the failed write moved nothing on
        finally:
            postgres_cluster.start_again()
        digests.append(until_reconnected(lambda: _commit(store, session, 3)))
        rows = query(db, "SELECT trial_index, outcome FROM trials ORDER BY 1")
        assert rows == [(i, "completed") for i in range(4)]
        trail = [e["sha256"] for e in store.audit.entries() if e["action"] == "trial"]
        assert trail == digests
        assert store.audit.is_intact()


@pytest.mark.slow
def test_every_command_that_takes_a_database_takes_a_postgresql_url(
    tmp_path, postgres_db, capsys, monkeypatch
):
    """simulate, export, verify, report and withdraw with `postgresql://...`: the same
    results as with a file; output folders are named after the database; no password in
    what the commands print."""
    from uxlab.cli import main

    monkeypatch.chdir(tmp_path)
    url = postgres_db.replace("postgres@", "postgres:not-a-secret@")  # trust auth ignores it
    name = url.rsplit("/", 1)[1]
    assert main(["simulate", str(GOOD), "--participants", "3", "--db", url, "--seed", "5"]) == 0
    assert main(["export", url]) == 0
    assert main(["verify", url, "--study", str(GOOD)]) == 0
    out = capsys.readouterr().out
    assert (tmp_path / "results" / f"{name}-export" / "trials.csv").is_file()
    assert "3 session(s)" in out and "not-a-secret" not in out and "postgres:***@" in out
    assert main(["report", url, "--n-boot", "0", "-q"]) == 0
    assert (tmp_path / "results" / f"{name}-report").is_dir()
    capsys.readouterr()
    assert main(["withdraw", url, "--participant", "SIM-s5-002", "--yes"]) == 0
    assert "not-a-secret" not in capsys.readouterr().out
    assert query(postgres_db, "SELECT participant FROM participants ORDER BY 1") == [
        ("SIM-s5-001",),
        ("SIM-s5-003",),
    ]
    assert main(["verify", url, "--study", str(GOOD)]) == 0  # the audit chain still holds
