"""The timing warnings are for the researcher, once per session: shown at its start, and on
a resume only when their verdict changed (a new kind of problem, or one gone); a resume
with the same verdict keeps them with its run, marked as not shown."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

from helpers.pilot import wait_for
from helpers.studies import tiny_study

from uxlab.environment import warning_verdict
from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.flow_screens import ConsentScreen, InstructionsScreen, WarningsScreen
from uxlab.tui.resume_screen import ResumeScreen
from uxlab.tui.study_app import StudyApp

TMUX = "running inside tmux: it repaints the real terminal on its own schedule"
LOAD = "this machine cannot keep the study's shortest gaps right now: load average {} on 2 CPUs"


async def run_once(tmp_path: Path, warnings: list[str], participant: str | None) -> list[str]:
    """Start the app, go as far as the consent or instructions, quit; the screens seen."""
    study = load_study(tiny_study(tmp_path, attention=False))
    app = StudyApp(
        study,
        Store.open(tmp_path / "results.sqlite"),
        participant=participant,
        warnings=list(warnings),
        suggested_id="P-NEW01",
    )
    seen: list[str] = []
    async with app.run_test(size=(80, 24)) as pilot:
        while True:
            await wait_for(
                pilot,
                lambda: (
                    isinstance(
                        app.screen,
                        (WarningsScreen, ResumeScreen, ConsentScreen, InstructionsScreen),
                    )
                    and type(app.screen).__name__ not in seen
                ),
            )
            seen.append(type(app.screen).__name__)
            if isinstance(app.screen, WarningsScreen):
                await pilot.press("enter")
            elif isinstance(app.screen, ResumeScreen):
                await pilot.press("1")
            elif isinstance(app.screen, ConsentScreen):
                await pilot.press("a")
            else:
                break
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()
    return seen


def runs(db: Path) -> list[tuple[bool, list[str]]]:
    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT environment FROM session_runs ORDER BY run").fetchall()
    return [
        (json.loads(e)["timing_warnings_shown"], json.loads(e)["timing_warnings"]) for (e,) in rows
    ]


async def test_warnings_show_once_then_only_when_their_verdict_changes(tmp_path):
    db = tmp_path / "results.sqlite"
    first = await run_once(tmp_path, [TMUX, LOAD.format(8.34)], "P-WARN1")
    assert first[0] == "WarningsScreen"
    # the same kinds of problem at another load: not shown, kept with the run
    again = await run_once(tmp_path, [TMUX, LOAD.format(7.9)], "P-WARN1")
    assert "WarningsScreen" not in again and again[-1] == "InstructionsScreen"
    # continued from the researcher's list, the load gone: the verdict changed, shown
    listed = await run_once(tmp_path, [TMUX], None)
    assert listed[:2] == ["ResumeScreen", "WarningsScreen"]
    assert [shown for shown, _ in runs(db)] == [True, False, True]
    assert runs(db)[1][1] == [TMUX, LOAD.format(7.9)]  # logged though not shown


def test_the_verdict_names_kinds_not_amounts():
    assert warning_verdict([LOAD.format(8.34), TMUX]) == warning_verdict([TMUX, LOAD.format(3)])
    small = "terminal is 60x20; the study screens need at least 80x24"
    assert warning_verdict([small]) == warning_verdict([small.replace("60x20", "70x22")])
    assert warning_verdict([TMUX]) != warning_verdict([TMUX, small])
