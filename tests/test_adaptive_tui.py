"""An adaptive study in the terminal runner (Pilot, 80x24): the session controller picks each
level from the committed answers, so the app needs no change; the levels climb as a
1-up/2-down staircase says when every wait is acceptable, and the state is stored."""

from __future__ import annotations

import json
import sqlite3

import pytest
from helpers.pilot import do_trial, wait_for, wait_screen
from helpers.studies import tiny_study

from uxlab.store import Store
from uxlab.store.verify import verify_db
from uxlab.study import load_study
from uxlab.study.adaptive import stimulus_grid
from uxlab.tui.flow_screens import ConsentScreen, EndScreen, InstructionsScreen, TextScreen
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen


@pytest.mark.slow
async def test_a_staircase_study_runs_in_the_terminal_runner(tmp_path):
    path = tiny_study(
        tmp_path, levels="20, 400", repeats=3, practice=1, attention=False, end_question=False
    )
    text = path.read_text().replace(
        "[factors]\nttft_ms = [20, 400]",
        '[factors.ttft_ms]\nlevels = [20, 400]\nprocedure = "staircase"',
    )
    path.write_text(text)
    study = load_study(path)
    store = Store.open(tmp_path / "results.sqlite")
    app = StudyApp(study, store, participant="P-ADAPT")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        await pilot.press("enter")
        while not isinstance(app.screen, EndScreen):
            await wait_for(
                pilot, lambda: isinstance(app.screen, (TrialScreen, TextScreen, EndScreen))
            )
            screen = app.screen
            if isinstance(screen, TrialScreen):
                await do_trial(pilot, answers=("y", "4"), give_up=False)  # always acceptable
            elif isinstance(screen, TextScreen):
                await pilot.press("enter")
                await wait_for(pilot, lambda s=screen: app.screen is not s)
        await pilot.press("enter")
    assert app.return_value.outcome == "completed"
    conn = sqlite3.connect(tmp_path / "results.sqlite")
    rows = conn.execute(
        "SELECT practice, condition_id, levels FROM trials ORDER BY trial_index"
    ).fetchall()
    main_levels = [json.loads(lv)["ttft_ms"] for p, _, lv in rows if not p]
    grid = stimulus_grid(20, 400)
    # 1-up/2-down from the bottom, start step 4: two acceptable answers, then 4 grid steps up
    assert main_levels == [grid[0], grid[0], grid[4], grid[4], grid[8], grid[8]]
    assert [c for p, c, _ in rows if not p][2] == f"ttft_ms={grid[4]:g}"
    (adaptive,) = conn.execute("SELECT adaptive FROM sessions").fetchone()
    track = json.loads(adaptive)["tracks"]["all"]
    assert track["procedure"] == "staircase" and track["n_trials"] == 6
    assert track["next_level_ms"] == grid[12]
    conn.close()
    # the adaptive levels, schedules and the events painted by the real terminal all rebuild
    report = verify_db(tmp_path / "results.sqlite", path)
    assert report.ok and report.n_event_trials == len(rows), [m.line() for m in report.mismatches]
