"""Invitation codes (`uxlab invite`, `uxlab.store.invitations`) and the failed-code limiter.

The codes are unguessable and shown once; the database keeps only their SHA-256 and the
pseudonymous participant each stands for; a code finds its participant in its own study
only; the limiter's delay grows with recent failures host-wide (an injected clock).
"""

from __future__ import annotations

import os
import stat

import pytest
from helpers.studies import tiny_study

from uxlab.cli import main
from uxlab.host.limits import FailureLimiter
from uxlab.store import Store, check_participant_id
from uxlab.store.invitations import (
    code_sha256,
    count_invitations,
    create_invitations,
    participant_for_code,
)


def test_codes_are_unique_stored_as_hashes_and_find_their_participant(tmp_path):
    db = tmp_path / "inv.sqlite"
    with Store.open(db) as store:
        made = create_invitations(store, "tiny", 20)
        other = create_invitations(store, "other-study", 1)
        rows = store.db.conn.execute("SELECT code_sha256, participant FROM invitations").fetchall()
        assert participant_for_code(store, "tiny", made[3].code) == made[3].participant
        assert participant_for_code(store, "tiny", other[0].code) is None  # another study's
        assert participant_for_code(store, "tiny", made[3].code[:-1]) is None
        assert participant_for_code(store, "tiny", "") is None
        assert count_invitations(store, "tiny") == 20
    codes = [m.code for m in made]
    assert len(set(codes)) == 20 and all(len(c) >= 24 and not c.startswith("-") for c in codes)
    assert len({m.participant for m in made + other}) == 21
    assert all(check_participant_id(m.participant) for m in made)
    assert {h for h, _ in rows} == {code_sha256(m.code) for m in made + other}
    raw = db.read_bytes().decode("latin-1")
    wal = db.with_name(db.name + "-wal")
    raw += wal.read_bytes().decode("latin-1") if wal.exists() else ""
    assert not any(c in raw for c in codes), "no usable code in the database file"


def test_new_participants_do_not_reuse_an_existing_participant_id(db, monkeypatch):
    ids = iter(["P-AAAAA", "P-AAAAA", "P-BBBBB", "P-CCCCC"])
    monkeypatch.setattr("uxlab.store.invitations.new_participant_id", lambda: next(ids))
    with Store.open(db) as store:
        made = create_invitations(store, "tiny", 2)
    assert [m.participant for m in made] == ["P-AAAAA", "P-BBBBB"]


def test_limiter_delay_grows_with_recent_failures_and_forgets_old_ones():
    now = [0.0]
    limiter = FailureLimiter(delay_s=1.0, budget=3, window_s=60.0, max_delay_s=5.0,
                             clock=lambda: now[0])  # fmt: skip
    delays = [limiter.failed() for _ in range(10)]
    assert delays[:3] == [1.0, 1.0, 1.0] and delays[3:6] == [2.0, 2.0, 2.0]
    assert delays[6] == 4.0 and delays[9] == 5.0  # capped
    now[0] = 61.0
    assert limiter.failed() == 1.0 and limiter.recent_failures() == 1


def test_invite_command_prints_codes_or_writes_a_private_file(tmp_path, capsys):
    study = tiny_study(tmp_path)
    db = tmp_path / "cli.sqlite"
    assert main(["invite", str(study), "--db", str(db), "-n", "3"]) == 0
    printed = [ln.split("\t") for ln in capsys.readouterr().out.splitlines()]
    assert len(printed) == 3 and all(p.startswith("P-") for _, p in printed)
    with Store.open(db) as store:
        assert participant_for_code(store, "tiny", printed[0][0]) == printed[0][1]

    out = tmp_path / "codes.tsv"
    assert main(["invite", str(study), "--db", str(db), "-n", "2", "-o", str(out)]) == 0
    assert stat.S_IMODE(os.stat(out).st_mode) == 0o600
    assert len(out.read_text().splitlines()) == 2
    assert "written to" in capsys.readouterr().out
    assert main(["invite", str(study), "--db", str(db), "-o", str(out)]) == 2  # never overwrite
    assert "exists" in capsys.readouterr().err
    assert main(["invite", str(study), "--db", str(db), "-n", "0"]) == 2


def test_host_refuses_a_study_without_invitations(tmp_path, capsys):
    study = tiny_study(tmp_path)
    assert main(["host", str(study), "--db", str(tmp_path / "none.sqlite"), "--ssh", "0"]) == 2
    assert "uxlab invite" in capsys.readouterr().err


@pytest.mark.parametrize("port", ["-1", "70000"])
def test_host_refuses_a_port_out_of_range(tmp_path, capsys, port):
    study = tiny_study(tmp_path)
    assert main(["host", str(study), "--ssh", port]) == 2
    assert "0..65535" in capsys.readouterr().err


class _Conn:
    """What `CodeAuthServer` uses of its connection: extra info and close."""

    def __init__(self) -> None:
        self.info: dict = {}
        self.closed = False

    def set_extra_info(self, **info) -> None:
        self.info.update(info)

    def close(self) -> None:
        self.closed = True


async def test_failed_codes_wait_in_line_and_valid_codes_do_not():
    import asyncio

    from uxlab.host.ssh_server import CodeAuthServer, HostContext

    logged: list[str] = []
    ctx = HostContext(
        study_path=None,
        study_id="tiny",
        db=None,
        lookup={"good-code": "P-GOOD1"}.get,
        limiter=FailureLimiter(delay_s=0.0, per_connection=2),
        log=logged.append,
    )
    server = CodeAuthServer(ctx)
    server.connection_made(_Conn())
    async with ctx.refusing:  # another failed code is being answered
        assert await asyncio.wait_for(server.begin_auth("good-code"), timeout=30) is False
        assert server.conn.info == {"participant": "P-GOOD1"}
        wrong = asyncio.ensure_future(server.begin_auth("bad-guess-1"))
        for _ in range(20):
            await asyncio.sleep(0)
        assert not wrong.done(), "a failed code waits for the one before it"
    assert await asyncio.wait_for(wrong, timeout=30) is True
    assert not server.conn.closed
    assert await server.begin_auth("bad-guess-2") is True
    assert server.conn.closed, "closed after per_connection failures"
    assert logged and not any("bad-guess" in line for line in logged)


def test_withdrawing_an_invited_participant_retires_their_code(db):
    from uxlab.store.invitations import withdraw_invited

    with Store.open(db) as store:
        gone, kept = create_invitations(store, "tiny", 2)
        counts = withdraw_invited(store, gone.participant)
        assert counts["invitations"] == 1
        assert participant_for_code(store, "tiny", gone.code) is None
        assert participant_for_code(store, "tiny", kept.code) == kept.participant


async def test_remote_app_logs_timing_warnings_for_the_researcher_instead_of_showing_them(
    tmp_path,
):
    """Also the warnings found after start-up (the on-screen timing check adds its own): the
    participant never sees the researcher's screen."""
    import io

    from helpers.pilot import wait_for

    from uxlab.cli.remote_participant import _remote_app_class
    from uxlab.study import load_study
    from uxlab.tui.flow_screens import ConsentScreen, WarningsScreen

    notes = io.StringIO()
    app_class = _remote_app_class(notes)
    with Store.open(tmp_path / "w.sqlite") as store:
        app = app_class(
            load_study(tiny_study(tmp_path)),
            store,
            participant="P-WARN1",
            environment={},
            warnings=["load average\n  7.9 on 2 CPUs"],
        )
        app.warnings.append("this machine cannot keep the study's shortest gaps right now")
        seen = []
        async with app.run_test(size=(80, 24)) as pilot:
            await wait_for(
                pilot,
                lambda: seen.append(type(app.screen)) or isinstance(app.screen, ConsentScreen),
            )
            await pilot.press("ctrl+q", "ctrl+q")
    assert WarningsScreen not in seen  # no warnings screen for the participant
    assert app.environment["timing_warnings"][0] == "load average\n  7.9 on 2 CPUs"  # stored
    assert notes.getvalue() == (
        "timing warning: load average 7.9 on 2 CPUs\n"
        "timing warning: this machine cannot keep the study's shortest gaps right now\n"
    )


def test_invite_makes_the_output_folder_before_any_code(tmp_path, capsys):
    """`-o results/codes.tsv` on a fresh checkout (the database elsewhere, e.g. PostgreSQL):
    the folder is made first, so codes that are shown only once are never lost to a
    missing folder; a folder that cannot be made is refused before any code exists."""
    study = tiny_study(tmp_path)
    db = tmp_path / "elsewhere" / "cli.sqlite"
    out = tmp_path / "results" / "codes.tsv"
    assert main(["invite", str(study), "--db", str(db), "-n", "2", "-o", str(out)]) == 0
    assert len(out.read_text().splitlines()) == 2
    blocked = tmp_path / "a-file"
    blocked.write_text("")
    db2 = tmp_path / "other.sqlite"
    argv = ["invite", str(study), "--db", str(db2), "-n", "2", "-o", str(blocked / "c.tsv")]
    assert main(argv) == 2
    assert "cannot make its folder" in capsys.readouterr().err
    assert not db2.exists()  # refused before the database was touched
