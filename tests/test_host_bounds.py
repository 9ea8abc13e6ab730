"""What a participant may ask of the SSH host is bounded: a huge terminal is clamped to the
browser host's 300x120, and the participant's program gets only the environment it needs
(none of the host's keys, tokens or credentials; a live study's key variable only when the
study is live), over a real `uxlab host --ssh` process and asyncssh's client."""

from __future__ import annotations

import asyncio
import json
import os
import sqlite3
import time
from pathlib import Path

import asyncssh
from helpers.host_process import CollectedHost
from helpers.ssh import REPO
from helpers.studies import tiny_study

from uxlab.host.limits import MAX_COLS, MAX_ROWS
from uxlab.host.pty_program import KEPT_VARS, program_env, program_vars
from uxlab.store import Store
from uxlab.store.invitations import create_invitations
from uxlab.study import load_study

SECRETS = {
    "OPENAI_API_KEY": "sk-host-secret-0123456789",
    "AWS_SECRET_ACCESS_KEY": "aws-host-secret",
    "UXLAB_TEST_HOST_TOKEN": "token-host-secret",
}


LIVE_STUDY = """
[study]
id = "live-env"
title = "Live env"
seed = 3

[texts]
consent = "Agree?"
instructions = "Send, watch, answer."

[stimuli]
live = { api = "openai", url = "http://127.0.0.1:9/v1", model = "m", \
api_key_env = "UXLAB_TEST_HOST_TOKEN", prompts = ["x"] }

[profile]
itl = "constant:5"

[factors]
ttft_ms = [50]

[design]
repeats = 1
order = "fixed"

[[questions]]
id = "acceptable"
type = "yesno"
text = "Acceptable?"
"""


class Host(CollectedHost):
    def __init__(self, study: Path, db: Path) -> None:
        env = dict(os.environ, PYTHONPATH=str(REPO), **SECRETS)
        super().__init__([str(study), "--db", str(db), "--ssh", "0"], REPO, env)
        first = self.wait_line("over SSH on", deadline_s=60)
        self.port = int(first.split(" on ")[1].split(";")[0].rsplit(":", 1)[1])


def session_events(db: Path, kind: str) -> list[dict]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute(
            "SELECT data FROM events WHERE trial_index = -1 AND kind = ? ORDER BY seq", (kind,)
        ).fetchall()
    return [json.loads(r[0]) for r in rows]


async def wait_for(condition, deadline_s: float = 60.0):
    give_up = time.monotonic() + deadline_s
    while time.monotonic() < give_up:
        got = condition()
        if got:
            return got
        await asyncio.sleep(0.05)
    raise AssertionError("the condition never held")


def program_pid(host: Host) -> int | None:
    """The participant's program: the host's child running `remote_participant`."""
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            cmdline = (entry / "cmdline").read_bytes()
        except OSError:
            continue
        ppid = int(stat.rsplit(")", 1)[1].split()[1])
        if ppid == host.proc.pid and b"remote_participant" in cmdline:
            return int(entry.name)
    return None


async def test_a_huge_terminal_is_clamped_and_the_program_gets_no_host_secret(tmp_path):
    study = tiny_study(tmp_path, levels="20", itl=2, attention=False)
    db = tmp_path / "bounds.sqlite"
    with Store.open(db) as store:
        (inv,) = create_invitations(store, "tiny", 1)
    host = Host(study, db)
    try:
        async with asyncssh.connect(
            "127.0.0.1", host.port, username=inv.code, known_hosts=None, client_keys=None
        ) as conn:
            proc = await conn.create_process(
                term_type="xterm-256color", term_size=(10000, 3000), encoding=None
            )
            (start,) = await wait_for(lambda: session_events(db, "terminal"))
            assert (start["cols"], start["rows"]) == (MAX_COLS, MAX_ROWS)
            pid = await wait_for(lambda: program_pid(host))
            env = dict(
                item.split("=", 1)
                for item in Path(f"/proc/{pid}/environ").read_text().split("\0")
                if "=" in item
            )
            for name, value in SECRETS.items():
                assert name not in env and value not in env.values(), name
            assert env["TERM"] == "xterm-256color" and "PATH" in env
            proc.change_terminal_size(5000, 60)  # a window change is clamped too
            resized = await wait_for(lambda: session_events(db, "resize"))
            assert [(r["cols"], r["rows"]) for r in resized] == [(MAX_COLS, 60)]
            proc.stdin.write(b"\x11\x11")  # Ctrl+Q twice: the first asks, the second quits
            await proc.wait_closed()
        host.wait_line(f"{inv.participant}: program ended")
    finally:
        assert host.stop() == 0


def test_only_a_live_studys_key_variable_and_postgresql_settings_are_passed(tmp_path, monkeypatch):
    for name, value in {**SECRETS, "PGPASSWORD": "pg-secret", "LC_ALL": "C.UTF-8"}.items():
        monkeypatch.setenv(name, value)
    plain = load_study(tiny_study(tmp_path, levels="20", attention=False))
    assert program_vars(plain, tmp_path / "x.sqlite") == ()
    assert program_vars(plain, "postgresql://u@h/db") == ("PGPASSWORD",)
    env = program_env(program_vars(plain, tmp_path / "x.sqlite"))
    assert set(env) <= KEPT_VARS | {k for k in env if k.startswith("LC_")}
    assert env["LC_ALL"] == "C.UTF-8" and "OPENAI_API_KEY" not in env
    live = tmp_path / "live.toml"
    live.write_text(LIVE_STUDY, encoding="utf-8")
    live_study = load_study(live)
    assert program_vars(live_study, tmp_path / "x.sqlite") == ("UXLAB_TEST_HOST_TOKEN",)
    env = program_env(program_vars(live_study, tmp_path / "x.sqlite"))
    assert env["UXLAB_TEST_HOST_TOKEN"] == "token-host-secret"
    assert "OPENAI_API_KEY" not in env and "AWS_SECRET_ACCESS_KEY" not in env
