"""The keyboard-only question widgets, each mounted in a small host app and driven by keys.

Response times come from an injected clock: from the first paint of the widget to the
confirming key.
"""

from __future__ import annotations

from textual.app import App, ComposeResult

from uxlab.study.spec import Question
from uxlab.tui.questions import Answered, QuestionPanel, question_view


class FakeClock:
    def __init__(self) -> None:
        self.t_ms = 1000.0

    def __call__(self) -> float:
        return self.t_ms


class Host(App):
    def __init__(self, question: Question, clock: FakeClock) -> None:
        super().__init__()
        self.question = question
        self.clock = clock
        self.answers: list[Answered] = []

    def compose(self) -> ComposeResult:
        yield QuestionPanel(question_view(self.question), self.clock)

    def on_answered(self, message: Answered) -> None:
        self.answers.append(message)


async def answer(question: Question, *keys: str, wait_ms: float = 750.0) -> list[Answered]:
    clock = FakeClock()
    app = Host(question, clock)
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.pause()
        clock.t_ms += wait_ms  # the participant thinks for wait_ms after the first paint
        await pilot.press(*keys)
        await pilot.pause()
    return app.answers


LIKERT = Question("speed", "likert", "How fast?", scale=5, labels=("Slow", "Fast"))
YESNO = Question("ok", "yesno", "Acceptable?", yes_means="acceptable")
CHOICE = Question("tone", "choice", "Which?", options=("Helpful", "Neutral", "Rude"))
SLIDER = Question("wait", "slider", "How long?", min=0.0, max=100.0)
TEXT = Question("why", "text", "Why?")


async def test_likert_by_digit_and_by_arrows():
    (a,) = await answer(LIKERT, "4", "enter")
    assert (a.question_id, a.value, a.rt_ms) == ("speed", 4, 750.0)
    (b,) = await answer(LIKERT, "right", "right", "left", "enter")
    assert b.value == 1


async def test_enter_without_a_choice_answers_nothing():
    assert await answer(LIKERT, "enter") == []
    assert await answer(SLIDER, "enter") == []


async def test_yesno_gives_the_store_words():
    (a,) = await answer(YESNO, "n", "enter")
    assert a.value == "no"
    (b,) = await answer(YESNO, "right", "enter")
    assert b.value == "yes"


async def test_choice_by_number_and_by_down_arrow():
    (a,) = await answer(CHOICE, "3", "enter")
    assert a.value == "Rude"
    (b,) = await answer(CHOICE, "down", "down", "enter")
    assert b.value == "Neutral"


async def test_slider_starts_in_the_middle_and_moves_in_steps():
    (a,) = await answer(SLIDER, "right", "right", "right", "shift+left", "enter")
    assert a.value == 50 + 2 - 10


async def test_text_keeps_what_was_typed_and_an_empty_box_skips():
    (a,) = await answer(TEXT, *"too slow", "enter", wait_ms=4000.0)
    assert (a.value, a.rt_ms) == ("too slow", 4000.0)
    (b,) = await answer(TEXT, "enter")
    assert b.value is None


def test_question_view_reads_the_study_question():
    view = question_view(SLIDER)
    assert (view.minimum, view.maximum, view.step) == (0.0, 100.0, 1.0)
    assert question_view(LIKERT).labels == ("Slow", "Fast")
    assert not question_view(TEXT).required
