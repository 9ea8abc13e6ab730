"""The open-enrolment salt kept in the study database (`uxlab.store.enrolment_salt`) on both
backends: hosts sharing one database enrol a platform id as the same participant and
`withdraw --enrolled` finds them from anywhere; the salt is never exported; a salt file
beside the database (where development builds kept it) is adopted, keeping the ids."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest
from helpers.postgres import query

from uxlab.cli import main
from uxlab.host.enrolment import enrolled_participant, salt_path
from uxlab.store import Store, StoreError, export_db
from uxlab.store.enrolment_salt import enrolment_salt, stored_salt
from uxlab.study import load_study

GOOD = Path(__file__).parent / "data" / "bad_studies" / "good.toml"
PLATFORM_ID = "5f3c9a71e2b04d18aa6c0e42"


def test_hosts_sharing_a_database_enrol_a_platform_id_as_one_participant(
    db, tmp_path, monkeypatch, capsys
):
    host_a, host_b = tmp_path / "a", tmp_path / "b"  # each host's own folder, no salt file
    salts: list[bytes] = []

    def enrol(folder: Path) -> None:  # one store per host, as each `uxlab host` opens its own
        with Store.open(db) as store:
            got = enrolment_salt(store, salt_path(folder / "study.sqlite"), make=True)
            assert got is not None
            salts.append(got.salt)

    Store.open(db).close()  # migrated first, so the two race on the salt only
    hosts = [threading.Thread(target=enrol, args=(h,)) for h in (host_a, host_b)]
    for h in hosts:
        h.start()
    for h in hosts:
        h.join()
    assert len(salts) == 2 and salts[0] == salts[1], "the first writer's salt wins"
    assert query(db, "SELECT count(*) FROM enrolment_salt") == [(1,)]
    assert not list(tmp_path.rglob("*.enrol_salt")), "no salt file is made any more"

    enrolled = enrolled_participant(salts[0], PLATFORM_ID)
    with Store.open(db) as store:  # enrolled on host A
        assert enrolment_salt(store, host_a / "x", make=True).origin == "stored"
        store.sessions.start_or_resume(load_study(GOOD), enrolled, environment={})

    host_b.mkdir()
    monkeypatch.chdir(host_b)  # withdrawn from host B
    code = main(["withdraw", str(db), "--enrolled", PLATFORM_ID, "--yes"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"Withdrew {enrolled}: deleted 1 session(s)" in out
    assert query(db, "SELECT count(*) FROM sessions WHERE participant = ?", (enrolled,)) == [(0,)]

    # the salt is in no exported file and no audit entry
    with Store.open(db) as store:
        assert salts[0].hex() not in str(store.audit.entries())
    out_dir = tmp_path / "export"
    export_db(db, out_dir)
    for fmt_dir, fmt in ((out_dir, "csv"), (tmp_path / "pq", "parquet")):
        if fmt == "parquet":
            export_db(db, fmt_dir, fmt="parquet")
        files = [p for p in fmt_dir.rglob("*") if p.is_file()]
        assert files
        for path in files:
            data = path.read_bytes()
            assert salts[0].hex().encode() not in data and salts[0] not in data, path


def test_a_salt_file_beside_the_database_is_adopted_keeping_ids(tmp_path, capsys):
    db = tmp_path / "enrolled.sqlite"
    old_salt = bytes(range(32))
    with Store.open(db) as old:  # participants enrolled with the salt in a file, none stored
        enrolled = enrolled_participant(old_salt, PLATFORM_ID)
        old.sessions.start_or_resume(load_study(GOOD), enrolled, environment={})
    salt_path(db).write_text(old_salt.hex() + "\n")

    with Store.open(db) as store:
        assert stored_salt(store) is None
        first = enrolment_salt(store, salt_path(db), make=True)
        assert first is not None and (first.salt, first.origin) == (old_salt, "adopted")
        again = enrolment_salt(store, salt_path(db), make=True)
        assert again is not None and again.origin == "stored", "adopted (and said) once"
    salt_path(db).unlink()  # the file is no longer read
    code = main(["withdraw", str(db), "--enrolled", PLATFORM_ID, "--yes"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert f"Withdrew {enrolled}" in out and "Adopted" not in out

    # withdraw --enrolled on such a database adopts the salt too (and says so)
    db2 = tmp_path / "enrolled-b.sqlite"
    with Store.open(db2) as old:
        old.sessions.start_or_resume(load_study(GOOD), enrolled, environment={})
    salt_path(db2).write_text(old_salt.hex() + "\n")
    code = main(["withdraw", str(db2), "--enrolled", PLATFORM_ID, "--yes"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert "Adopted the enrolment salt" in out and f"Withdrew {enrolled}" in out
    assert old_salt.hex() not in out + err, "the salt is never printed"


def test_a_damaged_salt_file_is_named_and_nothing_is_made(tmp_path):
    db = tmp_path / "s.sqlite"
    salt_path(db).write_text("not hex\n")
    with Store.open(db) as store:
        with pytest.raises(StoreError, match=r"s\.sqlite\.enrol_salt: not an enrolment salt"):
            enrolment_salt(store, salt_path(db), make=True)
        assert stored_salt(store) is None
