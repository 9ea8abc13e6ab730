"""A second answer posted before a screen has gone (a second Enter on a loaded machine, as
the durability torture typed them) once popped the screen twice: an internal error
(ScreenStackError) that ended the session. The first answer is kept, the second ignored,
on the attention check's screen and on a trial's last question."""

from __future__ import annotations

from helpers.pilot import asking, do_trial, wait_for, wait_screen
from helpers.studies import tiny_study

from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.check_screen import CheckScreen
from uxlab.tui.flow_screens import ConsentScreen, InstructionsScreen
from uxlab.tui.questions import Answered
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen

STUDY = {"levels": "20, 40", "practice": 0, "break_every": 10, "end_question": False}


def app_for(tmp_path, participant: str) -> StudyApp:
    study = load_study(tiny_study(tmp_path, **STUDY))
    return StudyApp(study, Store.open(tmp_path / "results.sqlite"), participant=participant)


async def started(pilot) -> None:
    await wait_screen(pilot, ConsentScreen)
    await pilot.press("a")
    await wait_screen(pilot, InstructionsScreen)
    await pilot.press("enter")


async def test_a_second_answer_before_the_check_is_gone_changes_nothing(tmp_path):
    app = app_for(tmp_path, "P-TWICE")
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot)
        while not isinstance(app.screen, CheckScreen):
            await wait_for(pilot, lambda: isinstance(app.screen, (TrialScreen, CheckScreen)))
            if isinstance(app.screen, TrialScreen):
                await do_trial(pilot, give_up=False)
        check = app.screen
        await wait_for(pilot, lambda: asking(app))
        check.post_message(Answered("acceptable", "no", 100.0))
        check.post_message(Answered("acceptable", "yes", 200.0))
        await wait_for(pilot, lambda: app.screen is not check)
        await pilot.pause()
        assert check.run.responses["acceptable"] == ("no", 100.0)
        assert app.return_value is None  # still running: no internal error
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()


async def test_a_second_answer_to_a_trials_last_question_changes_nothing(tmp_path):
    app = app_for(tmp_path, "P-TWICE2")
    async with app.run_test(size=(80, 24)) as pilot:
        await started(pilot)
        await wait_screen(pilot, TrialScreen)
        trial = app.screen
        await pilot.press("enter")
        await wait_for(pilot, lambda: asking(app, "acceptable"))
        await pilot.press("y", "enter")
        await wait_for(pilot, lambda: asking(app, "speed"))
        trial.post_message(Answered("speed", "4", 100.0))
        trial.post_message(Answered("speed", "2", 200.0))
        await wait_for(pilot, lambda: app.screen is not trial)
        await pilot.pause()
        assert trial.run.responses["speed"] == ("4", 100.0)
        assert app.return_value is None
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()
