"""PostgreSQL databases made by an older uxlab, whose tables of schema versions 5 to 8 got
32-bit `integer` and `real` columns, are widened to 64-bit when `Store.open` opens them
(`uxlab.store.widen`), on a PostgreSQL server the tests start (`helpers.postgres`)."""

from __future__ import annotations

import importlib.util
import re
import threading
from pathlib import Path

import psycopg
import pytest
from helpers.postgres import query, wait_until

from uxlab.store import Store, StoreError, dialect
from uxlab.store import store as store_module
from uxlab.store.browser_paints import ChunkPaint, read_paints, record_paints
from uxlab.store.enrolment_salt import enrolment_salt
from uxlab.store.lease import Holder, live_holder
from uxlab.store.open_checks import open_read_only
from uxlab.store.postgres import WRITE_LOCK
from uxlab.store.widen import declared_columns, narrow_columns
from uxlab.study import load_study

HERE = Path(__file__).parent
GOOD = HERE / "data" / "bad_studies" / "good.toml"
TAKEN_S = 1_800_000_063.5  # a lease's wall-clock second: 63.5 s past a multiple of 128 s
PAINTED_MS = [412.345, 12345.678, 20000.124]  # the last beyond 16.4 s: `real` rounds it

MADE_NARROW = {
    ("browser_paints", "chunk_index", "integer"),
    ("browser_paints", "clock_uncertainty_ms", "real"),
    ("browser_paints", "painted_ms", "real"),
    ("browser_paints", "parse_to_paint_ms", "real"),
    ("browser_paints", "trial_index", "integer"),
    ("enrolment_salt", "id", "integer"),
    ("requeued", "of_index", "integer"),
    ("requeued", "root_index", "integer"),
    ("requeued", "trial_index", "integer"),
    ("session_leases", "pid", "integer"),
    ("session_leases", "taken_s", "real"),
}
"""What the older uxlab made 32-bit: the number columns of the tables of versions 5 to 8."""


def old_uxlab_database(url: str, tmp_path: Path) -> str:
    """Make a study database at `url` as uxlab did before migration statements headed by a
    comment were rewritten too (and before opening widened anything), with a session whose
    lease a killed host left behind, paints, a requeued trial and the enrolment salt;
    the session's id."""
    old_ddl = re.compile(r"\s*(CREATE|ALTER)\b", re.IGNORECASE)  # the old test, no comments
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(dialect, "_DDL", old_ddl)
        patch.setattr(store_module, "widen_narrow_columns", lambda store: [])
        dialect.to_postgres.cache_clear()
        try:
            store = Store.open(url, clock=lambda: TAKEN_S)
            session = store.start_or_resume_session(load_study(GOOD), "P-OLDDB")
            record_paints(
                store,
                [ChunkPaint(session.id, 0, k, ms, 0.5, 3.25) for k, ms in enumerate(PAINTED_MS)],
            )
            with store._write() as conn:
                conn.execute(
                    "INSERT INTO requeued (session_id, trial_index, of_index, root_index, "
                    "reason, queued_at) VALUES (?, 40, 2, 2, 'interrupted', 'then')",
                    (session.id,),
                )
            enrolment_salt(store, tmp_path / "no.enrol_salt", make=True)
            store.leases.clear()  # as a killed host: its lease stays behind
            store.close()
        finally:
            dialect.to_postgres.cache_clear()
    return session.id


def data_type(url: str) -> dict[tuple[str, str], str]:
    rows = query(
        url,
        "SELECT table_name, column_name, data_type FROM information_schema.columns "
        "WHERE table_schema = current_schema()",
    )
    return {(t, c): kind for t, c, kind in rows}


def stored_rows(url: str) -> dict[str, object]:
    """What a reader reads of the widened tables (through the read-only opener)."""
    conn = open_read_only(url)
    try:
        return {
            "leases": conn.execute("SELECT * FROM session_leases").fetchall(),
            "paints": read_paints(conn),
            "requeued": conn.execute("SELECT * FROM requeued").fetchall(),
            "salt": conn.execute("SELECT * FROM enrolment_salt").fetchall(),
        }
    finally:
        conn.close()


def widen_entries(url: str) -> list[str]:
    return [d for (d,) in query(url, "SELECT detail FROM audit WHERE action = 'widen'")]


def rewritten_at(url: str, table: str) -> int:
    """The table's file (PostgreSQL gives a rewritten table a new one)."""
    return query(url, f"SELECT pg_relation_filenode('{table}')")[0][0]


def test_a_database_of_an_older_uxlab_is_widened_on_open_with_its_rows_as_they_read(
    postgres_db, tmp_path
):
    session_id = old_uxlab_database(postgres_db, tmp_path)
    types = data_type(postgres_db)
    assert {(t, c, k) for (t, c), k in types.items() if k in ("integer", "real")} == MADE_NARROW
    # what went wrong: `real` rounds the lease's second to a multiple of 128 s
    (old_taken_s,) = query(postgres_db, "SELECT taken_s FROM session_leases")[0]
    assert old_taken_s == 1_800_000_000.0
    with pytest.raises(psycopg.errors.NumericValueOutOfRange):
        query(postgres_db, "UPDATE session_leases SET pid = ?", (2**31,))
    before = stored_rows(postgres_db)  # the read-only opener reads it as found
    assert data_type(postgres_db) == types and widen_entries(postgres_db) == []
    paints = before["paints"][(session_id, 0)]
    assert [paints[k].painted_ms for k in range(3)] == [412.345, 12345.678, 20000.123]
    paints_file = rewritten_at(postgres_db, "browser_paints")

    with Store.open(postgres_db, clock=lambda: TAKEN_S) as store:
        assert narrow_columns(store.conn) == []
        assert store.verify_audit()
    after = data_type(postgres_db)
    assert {k for k in after.values()} & {"integer", "real"} == set()
    assert {after[(t, c)] for t, c, _ in MADE_NARROW} == {"bigint", "double precision"}
    assert stored_rows(postgres_db) == before  # every row reads as it read before
    (entry,) = widen_entries(postgres_db)
    assert '"column":"taken_s","from":"real","table":"session_leases","to":"double precision"' in (
        entry
    )
    assert rewritten_at(postgres_db, "browser_paints") != paints_file

    # the lease's age: 63.5 s off from the old row, exact once the lease is taken anew
    elsewhere = Holder("another-host", 1, None)
    lease = query(postgres_db, "SELECT host, pid, pid_started, taken_s FROM session_leases")[0]
    now_s = TAKEN_S + 10.0
    assert live_holder(lease, TAKEN_S, now_s, 3600.0, elsewhere).held_s == 73.5
    with Store.open(postgres_db, clock=lambda: TAKEN_S) as store:
        store.start_or_resume_session(load_study(GOOD), "P-OLDDB")
        lease = query(postgres_db, "SELECT host, pid, pid_started, taken_s FROM session_leases")[0]
        assert live_holder(lease, TAKEN_S, now_s, 3600.0, elsewhere).held_s == 10.0
        record_paints(store, [ChunkPaint(session_id, 0, 2, 20000.124, 0.5, 3.25)])
        assert read_paints(store.conn)[(session_id, 0)][2].painted_ms == 20000.124
    query(postgres_db, "UPDATE session_leases SET pid = ?", (2**31,))  # 64-bit now

    paints_file = rewritten_at(postgres_db, "browser_paints")
    Store.open(postgres_db).close()  # opened again: nothing to widen, nothing rewritten
    assert rewritten_at(postgres_db, "browser_paints") == paints_file
    assert len(widen_entries(postgres_db)) == 1


def test_hosts_opening_at_once_widen_once_and_both_open(postgres_db, tmp_path):
    old_uxlab_database(postgres_db, tmp_path)
    opened: list[str] = []
    failed: list[BaseException] = []

    def host(name: str) -> None:
        try:
            Store.open(postgres_db).close()
            opened.append(name)
        except BaseException as exc:  # reported by the assertion below
            failed.append(exc)

    with psycopg.connect(postgres_db) as holder:  # the write lock, held while both start
        holder.execute("SELECT pg_advisory_xact_lock(%s)", (WRITE_LOCK,))
        hosts = [threading.Thread(target=host, args=(n,)) for n in ("a", "b")]
        for thread in hosts:
            thread.start()

        def both_wait() -> bool:
            (n,) = query(
                postgres_db,
                "SELECT COUNT(*) FROM pg_stat_activity WHERE datname = current_database() "
                "AND wait_event_type = 'Lock' AND wait_event = 'advisory'",
            )[0]
            return n == 2

        wait_until(both_wait)
        holder.commit()  # both go
        for thread in hosts:
            thread.join(timeout=60)
    assert failed == [] and sorted(opened) == ["a", "b"]
    assert len(widen_entries(postgres_db)) == 1
    assert set(data_type(postgres_db).values()) & {"integer", "real"} == set()


def test_the_columns_to_widen_are_those_the_current_migrations_make_64_bit(postgres_db):
    """`declared_columns` is computed from the migrations; a fresh PostgreSQL database has
    exactly those types, and opening it widens nothing."""
    declared = declared_columns()
    assert declared[("session_leases", "taken_s")] == "double precision"
    assert declared[("events", "seq")] == "bigint"
    assert {(t, c) for t, c, _ in MADE_NARROW} <= set(declared)
    Store.open(postgres_db).close()
    types = data_type(postgres_db)
    assert {key: types[key] for key in declared} == declared
    assert widen_entries(postgres_db) == []


def test_a_role_that_may_not_alter_the_tables_is_told_so_and_nothing_changes(postgres_db, tmp_path):
    old_uxlab_database(postgres_db, tmp_path)
    types = data_type(postgres_db)
    query(postgres_db, "DROP ROLE IF EXISTS widen_guest")
    query(postgres_db, "CREATE ROLE widen_guest LOGIN")
    query(postgres_db, "GRANT ALL ON ALL TABLES IN SCHEMA public TO widen_guest")
    guest = postgres_db.replace("postgres@", "widen_guest@")
    try:
        with pytest.raises(StoreError, match=r"session_leases.*only the tables' owner") as e:
            Store.open(guest)
        assert "must be owner of table" in str(e.value)
        assert data_type(postgres_db) == types and widen_entries(postgres_db) == []
    finally:
        query(postgres_db, "REVOKE ALL ON ALL TABLES IN SCHEMA public FROM widen_guest")
        query(postgres_db, "DROP ROLE widen_guest")


def test_the_benchmark_widens_an_old_database_it_made(postgres_cluster):
    """benchmarks/pg_widen.py (its figures are in the several-hosts how-to) still runs."""
    path = HERE.parent / "benchmarks" / "pg_widen.py"
    spec = importlib.util.spec_from_file_location("pg_widen_benchmark", path)
    assert spec is not None and spec.loader is not None
    benchmark = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(benchmark)
    widen_s, rewrite_s, reopen_s = benchmark.run(postgres_cluster, 200)
    assert widen_s > 0 and rewrite_s > 0 and reopen_s > 0
    assert store_module.widen_narrow_columns is benchmark.widen_narrow_columns  # put back


def test_verify_names_the_narrow_columns_and_changes_nothing(postgres_db, tmp_path):
    from uxlab.store.verify import verify_db

    old_uxlab_database(postgres_db, tmp_path)
    (note,) = [n for n in verify_db(postgres_db, GOOD).notes if "32-bit" in n]
    assert note.startswith("11 column(s) are 32-bit") and "session_leases.taken_s (real)" in note
    assert widen_entries(postgres_db) == []  # verify only reads
    Store.open(postgres_db).close()
    assert not [n for n in verify_db(postgres_db, GOOD).notes if "32-bit" in n]
