"""Enter with nothing chosen: the key-help line under the question names that question's own
keys, in place (no toast over the screen), and goes back once a value is chosen; the next
question starts clean. Also the answer's label and the reading width on a wide terminal."""

from __future__ import annotations

from helpers.pilot import asking, wait_for, wait_screen
from helpers.studies import tiny_study

from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.flow_screens import ConsentScreen, InstructionsScreen
from uxlab.tui.questions import QuestionPanel
from uxlab.tui.stream_view import StreamView
from uxlab.tui.study_app import StudyApp
from uxlab.tui.trial_screen import TrialScreen


def help_line(app) -> str:
    panel = app.screen.query_one(QuestionPanel)
    return str(panel.query_one(".question-help").render())


async def to_first_trial(pilot) -> TrialScreen:
    await wait_screen(pilot, ConsentScreen)
    await pilot.press("a")
    await wait_screen(pilot, InstructionsScreen)
    await pilot.press("enter")
    await wait_screen(pilot, TrialScreen)
    return pilot.app.screen


async def test_enter_without_an_answer_names_the_keys_of_the_question_on_screen(tmp_path):
    study = load_study(tiny_study(tmp_path, levels="20", practice=0, attention=False))
    app = StudyApp(study, Store.open(tmp_path / "results.sqlite"), participant="P-NEED1")
    async with app.run_test(size=(80, 24)) as pilot:
        screen = await to_first_trial(pilot)
        await pilot.press("enter")
        await wait_for(pilot, lambda: asking(app, "acceptable"))
        await pilot.press("enter")  # nothing chosen on the yes/no question
        await wait_for(pilot, lambda: "first" in help_line(app))
        assert help_line(app) == "Choose an answer first: press y or n (or ← →), then Enter."
        assert not app._notifications  # said in place, not in a toast over the screen
        await pilot.press("y")  # chosen: the line is the key help again
        await wait_for(pilot, lambda: "first" not in help_line(app))
        assert help_line(app) == "y / n (or ← →) to choose, Enter to confirm"
        await pilot.press("enter")
        await wait_for(pilot, lambda: asking(app, "speed"))
        assert help_line(app) == "← → or 1-5 to choose, Enter to confirm"  # starts clean
        await pilot.press("enter")
        await wait_for(pilot, lambda: "first" in help_line(app))
        assert help_line(app) == "Choose an answer first: press 1-5 (or ← →), then Enter."
        view = screen.query_one(StreamView)
        assert view.lines_text()[2] == "Assistant:"  # the answer is labelled
        await pilot.press("4", "enter")
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()


async def test_text_and_answer_keep_a_reading_width_on_a_wide_terminal(tmp_path):
    study = load_study(tiny_study(tmp_path, levels="20", practice=0, attention=False))
    app = StudyApp(study, Store.open(tmp_path / "results.sqlite"), participant="P-WIDE1")
    async with app.run_test(size=(200, 50)) as pilot:
        await wait_screen(pilot, ConsentScreen)
        assert app.screen.query_one("#page").size.width <= 100
        await pilot.press("a")
        await wait_screen(pilot, InstructionsScreen)
        assert app.screen.query_one("#page").size.width <= 100
        await pilot.press("enter")
        await wait_screen(pilot, TrialScreen)
        assert app.screen.query_one(StreamView).size.width <= 100
        await pilot.press("ctrl+q", "ctrl+q")
    app.store.close()
