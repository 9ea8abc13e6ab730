"""Quit that forgives a slip: the first Ctrl+Q or Ctrl+C asks, on whatever screen is up, and
the second quits; any other key (or a few seconds) takes the question back. What the
participant reads is checked: the bar's words, and that the study goes on under it."""

from __future__ import annotations

import sqlite3
import tomllib
from pathlib import Path

from helpers.pilot import wait_for, wait_screen
from helpers.studies import SLOW_MS, tiny_study
from textual.widgets import Footer

from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.flow_screens import ConsentScreen, InstructionsScreen, ParticipantScreen
from uxlab.tui.quit_confirm import QuitConfirm
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

REPO = Path(__file__).resolve().parents[1]


def make_app(tmp_path: Path, **kw) -> StudyApp:
    study = load_study(tiny_study(tmp_path, levels=f"{SLOW_MS:g}", attention=False))
    return StudyApp(study, Store.open(tmp_path / "results.sqlite"), **kw)


def bar_text(app: StudyApp) -> str | None:
    bars = list(app.screen.query(QuitConfirm))
    return str(bars[0].render()) if bars else None


async def test_one_press_asks_and_the_trial_goes_on_another_key_takes_it_back(tmp_path):
    app = make_app(tmp_path, participant="P-SLIP1")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        await pilot.press("enter")
        await wait_screen(pilot, TrialScreen)
        trial = app.screen
        await pilot.press("enter", "ctrl+q")  # sent; then a slip while it waits
        await wait_for(pilot, lambda: bar_text(app) is not None)
        assert bar_text(app) == "Press Ctrl+Q again to leave; your answers so far are saved."
        assert app.is_running and app.screen is trial and trial.run.phase != "over"
        await pilot.press("escape")  # the participant goes on: gives up on the wait
        await wait_for(pilot, lambda: bar_text(app) is None and trial.run.outcome == "abandoned")
        assert app.is_running
        await pilot.press("ctrl+c")
        await wait_for(pilot, lambda: bar_text(app) is not None)
        assert bar_text(app).startswith("Press Ctrl+C again to leave")
        await pilot.press("ctrl+c")
    assert app.return_value.outcome == "interrupted"
    app.store.close()
    with sqlite3.connect(tmp_path / "results.sqlite") as conn:
        assert conn.execute("SELECT outcome FROM trials").fetchall() == [("abandoned",)]
        assert conn.execute("SELECT state FROM sessions").fetchone() == ("interrupted",)


async def test_the_question_goes_by_itself_and_before_a_session_names_no_answers(tmp_path):
    app = make_app(tmp_path, suggested_id="P-SLIP2")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ParticipantScreen)
        await pilot.press("ctrl+q")
        await wait_for(pilot, lambda: bar_text(app) is not None)
        assert bar_text(app) == "Press Ctrl+Q again to leave."  # nothing stored yet
        await pilot.press("left")  # another key: the question goes
        await wait_for(pilot, lambda: bar_text(app) is None)
        app.quit_guard.confirm_s = 0.05
        await pilot.press("ctrl+q")  # asks again, and the question goes by itself
        await wait_for(pilot, lambda: app.quit_guard.asked == 2 and bar_text(app) is None)
        assert app.is_running and isinstance(app.screen, ParticipantScreen)
        app.quit_guard.confirm_s = 60.0
        await pilot.press("ctrl+q")  # a first press again: it asks, it does not quit
        await wait_for(pilot, lambda: bar_text(app) is not None)
        assert app.is_running
        await pilot.press("ctrl+q")
    assert app.return_value.outcome == "quit"
    app.store.close()


async def test_consent_footer_and_docs_name_the_same_keys(tmp_path):
    consent = tomllib.loads((REPO / "studies/quickstart.toml").read_text())["texts"]["consent"]
    assert "Ctrl+Q twice" in " ".join(consent.split())
    app = make_app(tmp_path, participant="P-SLIP3")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        footer = app.screen.query_one(Footer)
        active = footer.screen.active_bindings.values()
        keys = [(b.key, b.description) for (_, b, on, _) in active if on and b.show]
        assert ("ctrl+q", "Quit") in keys
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()
    docs = " ".join((REPO / "docs/how-to/run-a-study.md").read_text().split())
    assert "Ctrl+Q (or Ctrl+C) twice" in docs
