"""docs/how-to/several-hosts.md as written: two `uxlab host` processes on one PostgreSQL
database, a participant who starts on the first host, hangs up, and finishes on the second.

The invitation is made with the page's own `uxlab invite` line and the hosts are started
as its `uxlab host` lines say (with this test's study, database and free ports); the
participant's terminal is the asyncssh client with pyte, as in test_host_ssh.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from helpers.postgres import query
from helpers.ssh import REPO, HostProcess, SshTerminal
from helpers.studies import tiny_study
from test_host_ssh import drive

from uxlab.cli import main

pytestmark = pytest.mark.slow

PAGE = REPO / "docs" / "how-to" / "several-hosts.md"


def page_commands() -> list[list[str]]:
    """The `$ uxlab` lines of the page's first block that starts hosts, as argument lists."""
    blocks = re.findall(r"```console\n(.*?)```", PAGE.read_text(), re.S)
    block = next(b for b in blocks if "uxlab host" in b)
    return [shlex.split(line[2:]) for line in block.splitlines() if line.startswith("$ uxlab ")]


def committed(db: str) -> list[tuple]:
    return query(
        db, "SELECT trial_index, outcome FROM trials WHERE outcome != 'running' ORDER BY 1"
    )


async def test_two_hosts_on_one_database_and_a_participant_resumed_on_the_other(
    tmp_path, postgres_cluster, monkeypatch
):
    db = postgres_cluster.database()
    study = tiny_study(tmp_path, levels="20, 40", itl=2, attention=False)
    invite, host_a, host_b = page_commands()
    assert invite[:2] == ["uxlab", "invite"] and invite[3:5] == ["--db", "$DB"]
    for line in (host_a, host_b):
        assert line[:2] == ["uxlab", "host"] and line[3:5] == ["--db", "$DB"]
        assert line[5] == "--ssh" and line[3:5] == invite[3:5]
    assert host_a[2] == host_b[2] == invite[2]  # the same study file on both hosts

    monkeypatch.chdir(tmp_path)  # the page's relative paths (codes.tsv, results/) land here
    argv = [str(study) if a == invite[2] else db if a == "$DB" else a for a in invite[1:]]
    assert main(argv) == 0
    code, participant = (Path(tmp_path) / invite[-1]).read_text().splitlines()[0].split("\t")

    first, second = HostProcess(study, db, cwd=tmp_path), HostProcess(study, db, cwd=tmp_path)
    try:
        term = SshTerminal(cols=90, rows=28)
        await term.connect(first.port, code)
        await term.wait_screen(lambda s: "Press a if you agree" in s)

        def two_committed(screen: str) -> bool:
            return "Press Enter to send." in screen and len(committed(db)) == 2

        await drive(term, stop_when=two_committed)
        before = committed(db)
        mark = len(first.lines)
        await term.close()  # the connection drops: a clean quit on the first host
        first.wait_line(f"{participant}: program ended", after=mark)

        again = SshTerminal(cols=90, rows=28)
        await again.connect(second.port, code)  # the same code, the other host
        welcome = await again.wait_screen(lambda s: "Welcome back" in s or "Trial" in s)
        assert "Welcome back" in welcome or "Trial 2 of" in welcome
        final = await drive(again)
        assert "The study is finished" in final, final
        second.wait_line(f"{participant}: program ended")
    finally:
        assert first.stop() == 0
        assert second.stop() == 0
    trials = committed(db)
    assert trials[: len(before)] == before, "nothing the first host committed is lost"
    assert len({i for i, _ in trials}) == len(trials), "every trial once"
    assert all(outcome == "completed" for _, outcome in trials)
    ((state, resumed, who),) = query(db, "SELECT state, resumed_count, participant FROM sessions")
    assert (state, resumed, who) == ("completed", 1, participant)
    runs = query(db, "SELECT run, kind FROM session_runs ORDER BY run")
    assert runs == [(0, "start"), (1, "resume")]
    codes_file = Path(invite[-1])  # the page keeps the codes under results/ (git ignores it)
    assert codes_file.parent.name == "results"
    assert sorted(p.name for p in (tmp_path / "results").iterdir()) == sorted(
        [codes_file.name, db.rsplit("/", 1)[1] + ".ssh_host_key"]
    )  # each host's key in the folder it was started from (here: the same folder)
    assert code not in first.output() + second.output()  # a code never reaches a log
