"""README's path, typed as README types it, through the real terminal client in tmux.

One scripted participant (`helpers.tmux_participant`) takes the quickstart with
`uv run uxlab run studies/quickstart.toml` in an 80x24 pane, giving up once and missing an
attention check; quits with Ctrl+Q before trial 4 and comes back with the `resume:` command
printed at exit; then the `export:` and `report:` commands printed at the end are run
exactly as printed. The study file is the shipped quickstart shortened by `short_quickstart`
(fewer trials, shorter fast waits; every text, question, key and check as shipped), so the test
waits seconds on the study's clock instead of the quickstart's minutes.
The shell is a newcomer's: the project's `.venv` is not on PATH, so the hints
must say `uv run uxlab`. Asserts a report is written, its first section says what this one
participant can support, and no traceback is printed anywhere.
"""

from __future__ import annotations

import os
import shutil
import sqlite3
import subprocess
from pathlib import Path

import pytest
from helpers.tmux import need_tmux
from helpers.tmux_participant import Participant, Tmux

REPO = Path(__file__).resolve().parents[1]
pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(shutil.which("uv") is None, reason="README's commands need uv"),
]


SEND_4, SEND = "Trial 4 of", "Press Enter to send."

SHORTER = (
    ("ttft_ms = [200, 1000, 3000]", "ttft_ms = [100, 300, 3000]"),
    ("repeats = 5", "repeats = 2"),
    ("practice = 2", "practice = 1"),
)
"""The quickstart's lines changed for the README-path tests, and what they become: 6 main
trials (trial 4 to leave at, the attention check after trial 6), 1 practice trial, shorter
fast levels and the slow level kept (the participant gives up only on a long wait). The
streams keep their recorded gaps: shorter ones are more than a loaded machine keeps, and
trials shown late are left out of the report (fidelity_flag)."""


def short_quickstart(lab: Path) -> None:
    """Write the shipped quickstart, shortened by `SHORTER`, as `lab/studies/quickstart.toml`.

    Fails when a line to change is not in the shipped file, so the tests cannot drift into
    running some other study unnoticed.
    """
    text = (REPO / "studies" / "quickstart.toml").read_text()
    for line, shorter in SHORTER:
        assert text.count(line) == 1, f"studies/quickstart.toml no longer has {line!r}"
        text = text.replace(line, shorter)
    (lab / "studies").mkdir(parents=True, exist_ok=True)
    (lab / "studies" / "quickstart.toml").write_text(text)


def newcomer_env() -> dict[str, str]:
    """This process's environment as a fresh shell in the checkout would have it.

    `UV_PROJECT` lets `uv run` find this checkout from the scratch folder, so the data go
    to the scratch folder's `results/` and the commands are typed exactly as in README.
    """
    venv_bin = {str(REPO / ".venv" / "bin"), os.environ.get("VIRTUAL_ENV", "") + "/bin"}
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("VIRTUAL_ENV", "UV_RUN_RECURSION_DEPTH", "PYTHONPATH", "TMUX", "TMUX_PANE")
    }
    env["PATH"] = os.pathsep.join(p for p in env["PATH"].split(os.pathsep) if p not in venv_bin)
    env["UV_PROJECT"] = str(REPO)
    env["TERM"] = "xterm-256color"
    return env


@pytest.fixture
def tmux():
    need_tmux()
    t = Tmux()
    yield t
    t.kill_server()


def printed_command(screen: str, label: str) -> str:
    """The command after `label:` in what `uxlab run` printed at exit."""
    for line in screen.splitlines():
        if line.startswith(f"{label}:"):
            return line.split(":", 1)[1].strip()
    raise AssertionError(f"no {label}: line in\n{screen}")


def test_one_participant_takes_the_quickstart_then_export_and_report(tmux, tmp_path):
    lab = tmp_path / "lab"
    short_quickstart(lab)
    shutil.copytree(REPO / "replays" / "chat", lab / "replays" / "chat")
    env = newcomer_env()

    tmux.start_in("uv run uxlab run studies/quickstart.toml", lab, env)
    participant = Participant()
    participant.take(tmux, deadline_s=300, stop_when=lambda s: SEND_4 in s and SEND in s)
    tmux.keys("C-q", "C-q")  # the participant has to leave mid-study, and comes back
    paused = tmux.wait_exit(deadline_s=30)
    assert "Traceback" not in paused, paused
    resume = printed_command(paused, "resume")
    assert resume.startswith("uv run uxlab run studies/quickstart.toml --participant P-")

    tmux.fresh()  # a new server: the old one may still be going away
    tmux.start_in(resume, lab, env)  # as printed
    final = participant.take(tmux, deadline_s=600)
    assert "Traceback" not in final, final
    assert "completed the study" in final, final
    assert participant.gave_up and participant.attention_seen >= 1

    db = lab / "results" / "quickstart.sqlite"
    with sqlite3.connect(db) as conn:
        outcomes = [r[0] for r in conn.execute("SELECT outcome FROM trials WHERE practice = 0")]
        checks = [r[0] for r in conn.execute("SELECT attention_ok FROM trials WHERE attention")]
        sessions = conn.execute("SELECT state, resumed_count FROM sessions").fetchall()
    assert sessions == [("completed", 1)], "one participant, one session, resumed once"
    assert outcomes.count("abandoned") == 1, outcomes
    assert checks.count(0) == 1, checks  # the missed attention check is stored as missed

    export, report = printed_command(final, "export"), printed_command(final, "report")
    assert export == "uv run uxlab export results/quickstart.sqlite"  # runs as typed
    assert report == "uv run uxlab report results/quickstart.sqlite"
    for line in (export, report):
        done = subprocess.run(
            line, shell=True, cwd=lab, env=env, capture_output=True, text=True, timeout=600
        )
        assert "Traceback" not in done.stdout + done.stderr, done.stderr
        assert done.returncode in (0, 1), f"{line}: {done.returncode}\n{done.stderr}"
        if line == export:
            assert (lab / "results" / "quickstart-export" / "trials.csv").is_file()
    written = lab / "results" / "quickstart-report"
    assert (written / "report.html").is_file()
    sections = (written / "report.md").read_text().split("\n## ")
    support = sections[1]  # the first section after the title
    assert support.startswith("What this sample can support"), support[:200]
    assert "of 1 participant(s)" in support, support[:600]
