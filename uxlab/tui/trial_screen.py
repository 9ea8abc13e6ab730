"""One trial as a chat exchange: send, wait, watch the answer stream, give up, answer.

The prompt waits in the input box; Enter sends it (that key press is t = 0, stamped by the
app when the key arrived, on the session clock) and the prompt moves into the chat as the
user's message, with a waiting indicator until the first chunk. The shaped answer is
played into the `StreamView` through the paint probe, so the trial keeps when each chunk
was handed out, queued in a frame and flushed to the terminal. The study's abandonment key
stops the stream at any moment (waiting or mid-stream); the study's timeout stops it too.
Then the per-trial questions appear under the answer, one at a time; the screen returns
the finished `TrialRun` and the app commits it before anything else is shown.

The view is the one the trial's kind names (`uxlab.tui.views`). A trial of steps with
questions after them (`Study.ask_after_steps`) is held after those steps: the view shows it
paused, the step's questions appear below it, and the trial goes on (its next step's clock
restarting) once the last one is answered; the abandonment key still stops it while the
questions are up.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any, ClassVar

from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.css.query import NoMatches
from textual.keys import format_key
from textual.message import Message
from textual.screen import Screen
from textual.widgets import Footer, Input, Static

from uxlab.collector import CollectorPacing
from uxlab.phases import LIVE, Phase
from uxlab.player import GlassReporter, fill_glass_paints
from uxlab.session import TrialRun
from uxlab.study.spec import Question
from uxlab.tui.paint_probe import PaintProbe, ProbedSink
from uxlab.tui.questions import Answered, QuestionPanel, question_view
from uxlab.tui.views import TrialView, make_view

KEY_NAMES = {"escape": "Esc", "space": "Space", "backspace": "Backspace", "tab": "Tab"}


def key_label(key: str) -> str:
    """How a Textual key name reads in the footer and the instructions (`escape` -> Esc,
    `slash` -> /)."""
    if key in KEY_NAMES:
        return KEY_NAMES[key]
    if "+" not in key and len(format_key(key)) == 1:  # a punctuation key's character
        return format_key(key)
    return key.replace("ctrl+", "Ctrl+").replace("alt+", "Alt+").replace("_", " ")


class TrialScreen(Screen[TrialRun]):
    """The chat client for one trial (see the module docstring)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "send", "Send"),
        Binding("enter", "next", "Next trial"),
        Binding("t", "toggle_details", "Details", show=False),
    ]

    class Played(Message):
        """The stream is over (completed, stopped, timed out or failed)."""

    def __init__(
        self,
        run: TrialRun,
        progress: str,
        probe: PaintProbe | None,
        collector: CollectorPacing | None = None,
    ) -> None:
        super().__init__()
        self.run = run
        self.progress = progress
        self.probe = probe
        self.collector = collector
        """Holds the collector's long collections while the stream plays (`uxlab.collector`)."""
        self.asked = 0
        self._awaiting_next = False
        self._step_asking: tuple[int, list[Question]] | None = None
        self._step_asked = 0
        self._step_done: asyncio.Future[None] | None = None
        self._sink: Any = None
        key = run.study.abandon.key
        self._bindings.bind(key, "give_up", "Stop", key_display=key_label(key))

    def compose(self) -> ComposeResult:
        practice = "  ·  practice (not counted)" if self.run.trial.practice else ""
        yield Static(f"{self.progress}{practice}", id="trial-header")
        yield make_view(self.run.kind.view, id="chat")  # its kind's view
        with VerticalScroll(id="composer"):  # grows with the prompt; scrolls past half the screen
            if self.typing:  # a live study where the participant writes the prompt
                yield Input(placeholder="Type your message", id="composer-input")
            yield Static(self.run.prompt, id="composer-text")
        hint = "Type a message and press Enter to send." if self.typing else "Press Enter to send."
        yield Static(hint, id="trial-hint")
        yield Vertical(id="trial-questions")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#trial-questions").display = False
        self._chat().start(None, waiting=False)
        self._chat().focus()
        if self.typing:
            self.query_one("#composer-text").display = False
            self.query_one("#composer-input", Input).focus()
        else:
            self.call_after_refresh(self._fit_prompt)

    def _fit_prompt(self) -> None:
        """A prompt longer than its box can show: the box takes the focus, so the arrows and
        PgDn scroll it, and the hint says so; the participant reads it all before sending."""
        box = self.query_one("#composer", VerticalScroll)
        if self.run.phase == Phase.READY and box.max_scroll_y > 0:
            box.focus()
            self.query_one("#trial-hint", Static).update(
                "The prompt goes on: ↓ or PgDn to read it all, then Enter to send."
            )

    @property
    def typing(self) -> bool:
        """The participant types each prompt (a live study with prompt_from participant)."""
        return self.run.kind.prompt_typed

    @on(Input.Submitted, "#composer-input")
    def _typed(self, message: Input.Submitted) -> None:
        message.stop()
        if not message.value.strip():
            self.query_one("#trial-hint", Static).update("Type a message first, then Enter.")
            return
        self.run.typed_prompt = message.value.strip()
        message.input.display = False
        self.action_send()

    def _chat(self) -> TrialView:
        """The view the trial plays in (its kind's, `uxlab.tui.views`)."""
        view = self.query_one("#chat")
        if not isinstance(view, TrialView):
            raise TypeError(f"#chat is a {type(view).__name__}, not a trial view")
        return view

    # -- sending and playing -------------------------------------------------------------
    def action_send(self) -> None:
        if self.run.phase != Phase.READY:
            return
        t0 = getattr(self.app, "key_time_ms", None)
        self.run.send(t0)
        view = self._chat()
        view.start(self.run.prompt)  # the prompt is now the user's message; waiting shows
        view.focus()  # (a long prompt's box had it)
        self.query_one("#composer-text", Static).update("")
        if view.fills_screen:  # an agent at work: the steps and answer need the room
            self.query_one("#composer").display = False
        self.query_one("#trial-hint", Static).update(
            f"Press {key_label(self.run.study.abandon.key)} to stop waiting."
        )
        self.refresh_bindings()
        self._play(view)

    @work(exclusive=True, group="trial-play")
    async def _play(self, view: TrialView) -> None:
        sink: Any = ProbedSink(view, self.probe) if self.probe is not None else view
        self._sink = sink
        ask = self._ask_step if self.run.kind.asks_after_steps else None
        if self.collector is not None:
            self.collector.hold()
        try:
            await self.run.play(sink, ask)  # returns once the last chunk's frame is flushed
        finally:
            if self.collector is not None:
                self.collector.release()
        self.post_message(self.Played())

    @property
    def awaiting_next(self) -> bool:
        """True once the trial has nothing to ask and waits for Enter to the next trial."""
        return self._awaiting_next

    def action_next(self) -> None:
        if self._awaiting_next:
            self._done()

    def _done(self) -> None:
        """Return the finished run; the glass probe's late reports are in its log first."""
        log = self.run.log
        if log is not None and isinstance(self._sink, GlassReporter):
            fill_glass_paints(log, self._sink)
        self.dismiss(self.run)

    def action_give_up(self) -> None:
        t_ms = getattr(self.app, "key_time_ms", None)
        if self.run.abandon(t_ms):
            self.refresh_bindings()

    def action_toggle_details(self) -> None:
        self._chat().action_toggle_details()

    @on(Played)
    def _played(self) -> None:
        hint = {
            "abandoned": "You stopped this answer.",
            "timed_out": "Time is up for this answer.",
        }.get(self.run.outcome, "")
        if not self.run.questions:
            # Nothing to ask (a give-up): show the stopped answer until Enter, so the
            # participant sees that the key worked before the next prompt appears.
            self.query_one("#composer").display = False
            self._awaiting_next = True
            hint = f"{hint} Press Enter for the next trial.".strip()
        self.query_one("#trial-hint", Static).update(hint)
        self.query_one("#trial-hint").display = bool(hint)
        self.refresh_bindings()
        if not self.run.questions:
            return
        self.query_one("#composer").display = False
        self.query_one("#trial-questions").display = True
        self._ask()

    # -- questions -----------------------------------------------------------------------
    def _ask(self) -> None:
        self._put(self.run.questions, self.asked)

    def _put(self, questions: list[Question], i: int) -> None:
        box = self.query_one("#trial-questions", Vertical)
        box.remove_children()
        number = f"{i + 1}/{len(questions)}  " if len(questions) > 1 else ""
        panel = QuestionPanel(question_view(questions[i]), self.run.clock.now_ms, number=number)
        box.mount(panel)

    async def _ask_step(self, step: int, questions: list[Question]) -> None:
        """The questions after `step`: the trial is held until the last is answered."""
        view = self._chat()
        view.hold()
        hint = self.query_one("#trial-hint", Static)
        stop = key_label(self.run.study.abandon.key)
        hint.update(f"The assistant waits for your answer. Press {stop} to stop it.")
        box = self.query_one("#trial-questions", Vertical)
        box.display = True
        self._step_asking, self._step_asked = (step, questions), 0
        self._step_done = asyncio.get_running_loop().create_future()
        self._put(questions, 0)
        self.refresh_bindings()
        try:
            await self._step_done
        finally:
            self._step_done, self._step_asking = None, None
            if self.is_attached and view.is_attached:  # not while the app shuts down
                self._end_step_questions(view, box, stop)

    def _end_step_questions(self, view: TrialView, box: Vertical, stop: str) -> None:
        """The hold is over: the questions go, the view goes on (or shows the stop)."""
        with contextlib.suppress(NoMatches):  # the screen is being torn down
            box.remove_children()
            box.display = False
            if self.run.abandoned_at_ms is None:
                view.resume()
                self.query_one("#trial-hint", Static).update(f"Press {stop} to stop waiting.")
            view.focus()
            self.refresh_bindings()

    @on(Answered)
    def _answered(self, message: Answered) -> None:
        message.stop()
        if self._step_asking is not None and self._step_done is not None:
            step, questions = self._step_asking
            self.run.answer_step(step, message.question_id, message.value, message.rt_ms)
            self._step_asked += 1
            if self._step_asked < len(questions):
                self._put(questions, self._step_asked)
            elif not self._step_done.done():
                self._step_done.set_result(None)
            return
        if self.run.phase == Phase.ANSWERED:
            return  # a second Enter before the screen went: the first answers are the data
        self.run.answer(message.question_id, message.value, message.rt_ms)
        self.asked += 1
        if self.asked < len(self.run.questions):
            self._ask()
        else:
            self.run.phase = Phase.ANSWERED
            self._done()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "send":
            return self.run.phase == Phase.READY
        if action == "next":
            return self._awaiting_next
        if action == "give_up":
            return self.run.phase in LIVE and self.run.abandoned_at_ms is None
        return True
