"""An attention check: its own kind of trial screen, never a latency trial.

The check's text (`[attention] text`, which tells the participant the answer) is shown at
once, as the assistant's message, with the check's one question under it. Nothing is sent
and nothing streams, so the check has no latency to judge and is not followed by the other
per-trial questions; the trial table marks its row `attention_check = 1` with the answer in
the check question's column and `attention_ok` saying whether it matched. The screen
returns the answered `TrialRun`; quitting before the answer offers the check again on resume.
"""

from __future__ import annotations

from textual import on
from textual.app import ComposeResult
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, Static

from uxlab.phases import Phase
from uxlab.session import TrialRun
from uxlab.tui.questions import Answered, QuestionPanel, question_view


class CheckScreen(Screen[TrialRun]):
    """The attention check of `run` (see the module docstring)."""

    def __init__(self, run: TrialRun, progress: str = "Attention check") -> None:
        super().__init__()
        if run.trial.attention is None:
            raise ValueError(f"trial {run.trial.index} is not an attention check")
        self.run = run
        self.progress = progress

    def compose(self) -> ComposeResult:
        yield Static(self.progress, id="trial-header")
        with Vertical(id="check"):
            yield Static(self.run.trial.attention.text, id="check-text")  # type: ignore[union-attr]
            yield Vertical(id="check-question")
        yield Footer()

    def on_mount(self) -> None:
        (question,) = self.run.questions
        panel = QuestionPanel(question_view(question), self.run.clock.now_ms)
        self.query_one("#check-question", Vertical).mount(panel)

    @on(Answered)
    def _answered(self, message: Answered) -> None:
        message.stop()
        if self.run.phase == Phase.ANSWERED:
            return  # a second Enter before the screen went: the first answer is the datum
        self.run.answer(message.question_id, message.value, message.rt_ms)
        self.run.phase = Phase.ANSWERED
        self.dismiss(self.run)
