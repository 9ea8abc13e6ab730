"""SVG snapshots (80x24; a long prompt also at 60x20, the answer column at 160x30) of every
screen of `uxlab run`.

Each test shows one screen in the real study app (its stylesheet, its app-wide Quit key)
without running the flow. Update after a deliberate change with `--snapshot-update` and look
at the SVGs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from helpers.pilot import OneScreen, asking, settle, trial_screen
from helpers.studies import LONG_PROMPT, long_prompt_study, tiny_study

from uxlab.session import StudySession, TrialRun
from uxlab.store import Store
from uxlab.study import load_study
from uxlab.tui.check_screen import CheckScreen
from uxlab.tui.flow_screens import (
    BreakScreen,
    ConsentScreen,
    EndQuestionsScreen,
    EndScreen,
    InstructionsScreen,
    ParticipantScreen,
    SaveFailedScreen,
    WarningsScreen,
)
from uxlab.tui.stream_view import StreamView
from uxlab.tui.trial_screen import TrialScreen

SIZE = (80, 24)
QUESTIONS = """
[[questions]]
id = "tone"
type = "choice"
text = "Which word fits the answer best?"
options = ["Helpful", "Neutral", "Unhelpful"]

[[questions]]
id = "wait"
type = "slider"
text = "How long did the wait feel?"
min = 0
max = 100
labels = ["No wait", "Far too long"]

[[questions]]
id = "why"
type = "text"
text = "Why did you give that rating?"
"""


def app_for(tmp_path: Path, make_screen, levels: str = "0") -> OneScreen:
    study = load_study(
        tiny_study(tmp_path, levels=levels, itl=1, practice=0, extra_questions=QUESTIONS)
    )
    store = Store.open(tmp_path / "snap.sqlite")
    return OneScreen(make_screen, study, store, participant="P-SNAP1", suggested_id="P-7K3QX")


def text_screen_test(make):
    def test(snap_compare, tmp_path):
        app = app_for(tmp_path, make)

        async def run_before(pilot) -> None:
            await settle(pilot, lambda: app.screen is not app.screen_stack[0])

        assert snap_compare(app, terminal_size=SIZE, run_before=run_before)

    return test


test_warnings = text_screen_test(
    lambda app: WarningsScreen(
        [
            "running inside tmux: it repaints the real terminal on its own schedule, so shown "
            "times are not what participants see; run studies outside it",
            "terminal is 70x20; the study screens need at least 80x24",
        ]
    )
)
test_participant = text_screen_test(lambda app: ParticipantScreen("P-7K3QX", app.study.title))
test_consent = text_screen_test(lambda app: ConsentScreen(app.study.texts["consent"]))
test_instructions = text_screen_test(
    lambda app: InstructionsScreen(
        app.study.texts["instructions"],
        "**Keys:** Enter sends the prompt; **Esc** stops waiting. There are 8 trials.",
        "Welcome back. You have done 3 of 8 trials; the session continues with the next one.",
    )
)
test_break = text_screen_test(lambda app: BreakScreen("Trial 12 of 60 done"))
test_end = text_screen_test(
    lambda app: EndScreen("Thank you", app.study.texts["debrief"] + "\n\nPress **Enter**.")
)
test_save_failed = text_screen_test(
    lambda app: SaveFailedScreen("this trial", "database is locked")
)
test_end_question = text_screen_test(
    lambda app: EndQuestionsScreen(app.study.end_questions, app.clock.now_ms)
)


def test_trial_ready(snap_compare, tmp_path):
    app = app_for(tmp_path, trial_screen)

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: isinstance(app.screen, TrialScreen))

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_trial_waiting(snap_compare, tmp_path):
    app = app_for(tmp_path, trial_screen, levels="600000")

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: isinstance(app.screen, TrialScreen))
        await pilot.press("enter")
        view = app.screen.query_one(StreamView)
        await settle(pilot, lambda: view.state == "waiting")
        view.hold_waiting(0)  # the dots move every 250 ms: freeze the first frame

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def test_trial_stopped_while_waiting(snap_compare, tmp_path):
    app = app_for(tmp_path, trial_screen, levels="600000")

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: isinstance(app.screen, TrialScreen))
        await pilot.press("enter", "escape")
        await settle(pilot, lambda: app.screen.awaiting_next)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


@pytest.mark.parametrize(
    "answered", [0, 1, 2, 3, 4], ids=["yesno", "likert", "choice", "slider", "text"]
)
def test_trial_finished_with_question(snap_compare, tmp_path, answered):
    app = app_for(tmp_path, trial_screen)
    keys = [("y", "enter"), ("4", "enter"), ("down", "enter"), ("right", "right", "enter")]

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: isinstance(app.screen, TrialScreen))
        screen = app.screen
        await pilot.press("enter")
        await settle(pilot, lambda: screen.run.phase == "over" and screen.query("QuestionPanel"))
        for k in range(answered):
            await pilot.press(*keys[k])
            # the next question's own widget has the focus (not the answered one, going)
            following = screen.run.questions[k + 1].id
            await settle(pilot, lambda k=k, q=following: screen.asked == k + 1 and asking(app, q))
        view = screen.query_one(StreamView)
        await settle(pilot, lambda: view.shows_markdown)  # the answer is shown as Markdown

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)


def long_prompt_app(tmp_path: Path, prompt: str = LONG_PROMPT) -> OneScreen:
    store = Store.open(tmp_path / "snap.sqlite")
    study = load_study(long_prompt_study(tmp_path, prompt))
    return OneScreen(trial_screen, study, store, participant="P-SNAP1")


def test_trial_ready_prompt_longer_than_its_box(snap_compare, tmp_path):
    app = long_prompt_app(tmp_path, " ".join([LONG_PROMPT] * 3))

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: isinstance(app.screen, TrialScreen))
        await settle(pilot, lambda: app.focused is app.screen.query_one("#composer"))

    assert snap_compare(app, terminal_size=(60, 20), run_before=run_before)


@pytest.mark.parametrize("size", [(80, 24), (60, 20)], ids=["80x24", "60x20"])
def test_trial_ready_long_prompt_wraps(snap_compare, tmp_path, size):
    app = long_prompt_app(tmp_path)

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: isinstance(app.screen, TrialScreen))

    assert snap_compare(app, terminal_size=size, run_before=run_before)


def test_trial_answer_column_capped_on_a_wide_terminal(snap_compare, tmp_path):
    app = long_prompt_app(tmp_path)

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: isinstance(app.screen, TrialScreen))
        screen = app.screen
        await pilot.press("enter")
        await settle(pilot, lambda: screen.run.phase == "over" and screen.query("QuestionPanel"))
        view = screen.query_one(StreamView)
        await settle(pilot, lambda: view.shows_markdown)

    assert snap_compare(app, terminal_size=(160, 30), run_before=run_before)


def test_attention_check(snap_compare, tmp_path):
    def check_screen(app) -> CheckScreen:
        ss = StudySession.open(app.study, app.store, "P-SNAP1", clock=app.clock)
        trial = next(t for t in ss.trials if t.attention is not None)
        run = TrialRun(trial, ss.schedule_for(trial), app.study, app.clock, app.clock.now_ms())
        return CheckScreen(run, ss.progress(trial))

    app = app_for(tmp_path, check_screen, levels="0, 50")  # 4 trials: a check after 3

    async def run_before(pilot) -> None:
        await settle(pilot, lambda: isinstance(app.screen, CheckScreen) and app.focused)

    assert snap_compare(app, terminal_size=SIZE, run_before=run_before)
