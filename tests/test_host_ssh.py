"""`uxlab host --ssh` end to end over loopback: a real host process, the asyncssh client with a
PTY as the participant's terminal (pyte paints the screen), the real study database.

An invited participant sees the consent text, takes part, disconnects in the middle (the
host hangs the program up: a clean quit), connects again with the same code and finishes;
the store then holds every trial once and the session says it was resumed, in the
client's terminal type and size. A window change resizes the app; a second connection
with the same code replaces the first; stopping the host hangs up open sessions cleanly. A
wrong code is refused and appears nowhere in the host's output; a valid code opens no
command, sftp or forwarding; the host key is kept across restarts (same fingerprint, 0600).
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import stat
import time
from pathlib import Path

import asyncssh
import pytest
from helpers.ssh import HostProcess, SshTerminal
from helpers.studies import tiny_study

from uxlab.host.ssh_server import host_key_path
from uxlab.store import Store
from uxlab.store.invitations import create_invitations

pytestmark = pytest.mark.slow

# Screen markers -> keys, as in test_run_tmux (the first marker on the screen decides).
ACTIONS = [
    ("Press a if you agree", ["a"]),
    ("Practice over", ["Enter"]),
    ("Take a short rest", ["Enter"]),
    ("Press Enter to begin", ["Enter"]),
    ("Press Enter to send.", ["Enter"]),
    ("Press Enter for the next trial", ["Enter"]),
    ("Was the wait acceptable?", ["y", "Enter"]),
    ("How fast did the answer feel?", ["4", "Enter"]),
    ("Anything else you noticed?", ["o", "k", "Enter"]),
    ("Press Enter to close", ["Enter"]),
]


async def drive(term: SshTerminal, stop_when=None, deadline_s: float = 90.0) -> str:
    """Answer screens until the connection ends (or `stop_when(screen)`); returns the screen."""
    give_up = time.monotonic() + deadline_s
    last_acted = None
    while time.monotonic() < give_up:
        screen = term.screen()
        if term.closed.is_set():
            return screen
        if stop_when is not None and stop_when(screen):
            return screen
        for marker, keys in ACTIONS:
            if marker in screen:
                lines = [ln.strip() for ln in screen.splitlines() if ln.strip()]
                state = (marker, tuple(lines[:3]))
                if state != last_acted:
                    term.keys(*keys)
                    last_acted = state
                break
        await _pause()
    raise AssertionError(f"the study did not finish in time; the screen:\n{term.screen()}")


async def _pause() -> None:
    await asyncio.sleep(0.05)


def committed(db: Path) -> list[tuple]:
    with sqlite3.connect(db) as conn:
        return conn.execute(
            "SELECT trial_index, outcome FROM trials WHERE outcome != 'running' ORDER BY 1"
        ).fetchall()


def invite(study_id: str, db: Path, n: int = 1) -> list:
    with Store.open(db) as store:
        return create_invitations(store, study_id, n)


async def test_participant_disconnects_mid_study_and_resumes_with_the_same_code(tmp_path):
    study = tiny_study(tmp_path, levels="20, 40", itl=2, attention=False)
    db = tmp_path / "ssh.sqlite"
    (inv,) = invite("tiny", db)
    host = HostProcess(study, db)
    try:
        term = SshTerminal(cols=90, rows=28)  # not 80x24: the session must get the client's size
        await term.connect(host.port, inv.code)
        consent = await term.wait_screen(lambda s: "Press a if you agree" in s)
        assert "You agree to take part" in consent

        def two_committed(screen: str) -> bool:
            return "Press Enter to send." in screen and len(committed(db)) == 2

        screen = await drive(term, stop_when=two_committed)  # practice + trial 1 stored
        assert "Trial 2 of" in screen
        before = committed(db)
        mark = len(host.lines)
        await term.close()
        host.wait_line(f"{inv.participant}: program ended", after=mark)
        assert committed(db) == before, "a hang-up loses no committed trial"
        with sqlite3.connect(db) as conn:
            assert conn.execute("SELECT state FROM sessions").fetchone() == ("interrupted",)
        # The researcher's closing lines reach the host's log, not the participant.
        host.wait_line(f"{inv.participant}: uxlab run: session of {inv.participant} interrupted")
        assert "resume:" in host.output()

        again = SshTerminal(cols=90, rows=28)
        await again.connect(host.port, inv.code)
        welcome = await again.wait_screen(lambda s: "Welcome back" in s or "Trial" in s)
        final = await drive(again)
        assert "The study is finished" in final, final
        assert "uxlab export" not in final and db.name not in final  # the researcher's lines
        host.wait_line(f"{inv.participant}: program ended", after=mark + 2)
    finally:
        assert host.stop() == 0
    assert "Welcome back" in welcome or "Trial 2 of" in welcome

    with sqlite3.connect(db) as conn:
        state, resumed, participant, env_json = conn.execute(
            "SELECT state, resumed_count, participant, environment FROM sessions"
        ).fetchone()
        plan_len = conn.execute("SELECT json_array_length(plan) FROM sessions").fetchone()[0]
        tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master")}
        stored_hashes = [r[0] for r in conn.execute("SELECT code_sha256 FROM invitations")]
    trials = committed(db)
    assert (state, resumed, participant) == ("completed", 1, inv.participant)
    assert [t[0] for t in trials][: len(before)] == [t[0] for t in before]
    assert len({t[0] for t in trials}) == len(trials) >= plan_len, "every trial once"
    assert all(outcome == "completed" for _, outcome in trials)
    env = json.loads(env_json)
    assert (env["term"], env["columns"], env["rows"], env["ssh"]) == (
        "xterm-256color",
        90,
        28,
        True,
    )
    assert "timing_warnings" in env  # stored with the session, not shown to the participant
    assert "invitations" in tables and inv.code not in stored_hashes
    assert inv.code not in db.read_bytes().decode("latin-1")
    assert inv.code not in host.output()


async def test_a_window_change_resizes_the_participants_screen(tmp_path):
    study = tiny_study(tmp_path, levels="20", itl=2, attention=False)
    db = tmp_path / "resize.sqlite"
    (inv,) = invite("tiny", db)
    host = HostProcess(study, db)
    try:
        term = SshTerminal(cols=80, rows=24)
        await term.connect(host.port, inv.code)
        await term.wait_screen(lambda s: "Press a if you agree" in s)
        term.resize(120, 30)
        # The app repaints at the new size: its footer moves down to the 30th row.
        await term.wait_screen(lambda s: "Quit" in s.split("\n")[29])
        await term.close()
        host.wait_line(f"{inv.participant}: program ended")
    finally:
        assert host.stop() == 0


async def test_a_second_connection_with_the_same_code_replaces_the_first(tmp_path):
    study = tiny_study(tmp_path, levels="20", itl=2, attention=False)
    db = tmp_path / "twice.sqlite"
    (inv,) = invite("tiny", db)
    host = HostProcess(study, db)
    try:
        first = SshTerminal()
        await first.connect(host.port, inv.code)
        await first.wait_screen(lambda s: "Press a if you agree" in s)
        second = SshTerminal()
        await second.connect(host.port, inv.code)
        await asyncio.wait_for(first.closed.wait(), timeout=60)  # the first is hung up
        await second.wait_screen(lambda s: "Press a if you agree" in s)
        host.wait_line(f"{inv.participant}: a new connection replaces the open one")
        await second.close()
    finally:
        assert host.stop() == 0


async def test_stopping_the_host_hangs_up_open_sessions_cleanly(tmp_path):
    study = tiny_study(tmp_path, levels="20", itl=2, attention=False)
    db = tmp_path / "stop.sqlite"
    (inv,) = invite("tiny", db)
    host = HostProcess(study, db)
    try:
        term = SshTerminal()
        await term.connect(host.port, inv.code)
        await drive(term, stop_when=lambda s: "Press Enter to send." in s)
    finally:
        assert host.stop() == 0  # Ctrl+C: the open session is hung up before the host exits
    await asyncio.wait_for(term.closed.wait(), timeout=60)
    assert f"{inv.participant}: program ended" in host.output()
    with sqlite3.connect(db) as conn:
        assert conn.execute("SELECT state FROM sessions").fetchone() == ("interrupted",)


async def server_fingerprint(port: int, code: str) -> str:
    """The host key fingerprint the client is shown (a connection with a valid code), after
    checking that the connection offers nothing but the study: no command, no sftp, no port
    forwarding (which could reach the host's other services)."""
    async with asyncssh.connect(
        "127.0.0.1", port, username=code, known_hosts=None, client_keys=None
    ) as conn:
        with pytest.raises(asyncssh.ChannelOpenError):
            await conn.open_connection("127.0.0.1", port)
        with pytest.raises((asyncssh.ChannelOpenError, asyncssh.ProcessError)):
            await conn.run("id", check=True)
        with pytest.raises((asyncssh.ChannelOpenError, asyncssh.SFTPError)):
            await conn.start_sftp_client()
        return conn.get_server_host_key().get_fingerprint()


async def test_wrong_code_is_refused_unlogged_and_the_host_key_is_kept(tmp_path):
    study = tiny_study(tmp_path, levels="20", itl=2, attention=False)
    db = tmp_path / "keys.sqlite"
    (inv,) = invite("tiny", db)
    wrong = "Zz9-not-an-invitation-code"
    host = HostProcess(study, db)
    try:
        with pytest.raises(asyncssh.PermissionDenied):
            await asyncssh.connect(
                "127.0.0.1", host.port, username=wrong, known_hosts=None, client_keys=None
            )
        host.wait_line("refused an unknown invitation code")
        assert await server_fingerprint(host.port, inv.code) == host.fingerprint
    finally:
        assert host.stop() == 0
    first_output = host.output()
    assert wrong not in first_output and inv.code not in first_output
    key_file = host_key_path(db)
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    key_bytes = key_file.read_bytes()

    again = HostProcess(study, db)
    try:
        assert again.fingerprint == host.fingerprint
        assert await server_fingerprint(again.port, inv.code) == host.fingerprint
    finally:
        assert again.stop() == 0
    assert key_file.read_bytes() == key_bytes
    assert "(kept," in again.output() and "(new," in first_output
