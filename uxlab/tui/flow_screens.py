"""The participant's path around the trials: id, consent, instructions, breaks, the end.

Every screen fits 80x24, shows its keys in the footer and never needs the mouse. Screens
return their result with `dismiss(...)`; the study app decides what comes next. Quitting
(Ctrl+Q or Ctrl+C, twice: the first press asks) is an app-wide key, shown in every footer.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Callable
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Markdown, Static

from uxlab.tui.questions import Answered, QuestionPanel, question_view


class TextScreen(Screen[bool]):
    """A titled page of Markdown text with a footer; Enter continues (returns True)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "continue", "Continue")]

    def __init__(self, title: str, body: str, progress: str = "") -> None:
        super().__init__()
        self.page_title = title
        self.body = body
        self.progress = progress

    def compose(self) -> ComposeResult:
        with Vertical(id="page"):
            yield Static(self.page_title, classes="page-title")
            if self.progress:
                yield Static(self.progress, classes="progress")
            with VerticalScroll(id="page-body"):
                yield Markdown(self.body)
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#page-body").focus()  # arrows and PgUp/PgDn scroll a long text

    def action_continue(self) -> None:
        self.dismiss(True)


class WarningsScreen(TextScreen):
    """For the researcher, before the participant sits down: why timing may be off."""

    def __init__(self, warnings: list[str]) -> None:
        body = (
            "This setup cannot show the study's timing faithfully:\n\n"
            + "\n".join(f"- {w}" for w in warnings)
            + "\n\nThe warnings are stored with the session. Press **Enter** to run anyway, "
            "or **Ctrl+Q** to stop and fix the setup."
        )
        super().__init__("Timing warnings (for the researcher)", body)


class ParticipantScreen(Screen[str]):
    """Asks for a pseudonymous participant id; offers a random one. Never a name."""

    BINDINGS: ClassVar[list[BindingType]] = [
        # A priority binding, so the footer names Enter (the input's own is hidden).
        Binding("enter", "use_id", "Use this id", priority=True),
    ]

    def __init__(self, suggested_id: str, study_title: str, problem: str = "") -> None:
        super().__init__()
        self.suggested_id = suggested_id
        self.study_title = study_title
        self.problem = problem

    def compose(self) -> ComposeResult:
        with Vertical(id="page"):
            yield Static(self.study_title, classes="page-title")
            yield Static(
                "Participant id: press Enter to use the suggested pseudonymous id, or type "
                "the id the researcher gave you (the same id resumes an unfinished session). "
                "Do not type your name.",
                classes="explain",
            )
            yield Input(value=self.suggested_id, id="participant-id")
            yield Static(self.problem, id="participant-error", classes="error")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def action_use_id(self) -> None:
        value = self.query_one(Input).value.strip()
        problem = participant_id_problem(value)
        if problem:
            self.query_one("#participant-error", Static).update(problem)
            return
        self.dismiss(value)


def participant_id_problem(value: str) -> str | None:
    """Why `value` is not an acceptable participant id (None when it is)."""
    if not value:
        return "The id must not be empty."
    if any(ch.isspace() for ch in value):
        return "The id must not contain spaces (use the pseudonymous id, not a name)."
    if len(value) > 40:
        return "The id is too long (40 characters at most)."
    if not all(ch.isalnum() or ch in "-_.:" for ch in value):
        return "Use letters, digits, '-', '_', '.' or ':' only."
    return None


class ConsentScreen(TextScreen):
    """Consent: `a` accepts, `d` declines (the session ends with only the refusal stored)."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("a", "accept", "I agree"),
        Binding("d", "decline", "I do not agree"),
    ]

    def __init__(self, body: str, note: str = "") -> None:
        text = (f"*{note}*\n\n" if note else "") + body
        text += "\n\nPress **a** if you agree to take part, or **d** if you do not."
        super().__init__("Consent", text)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action != "continue"  # consent is a/d only: Enter must not agree by habit

    def action_accept(self) -> None:
        self.dismiss(True)

    def action_decline(self) -> None:
        self.dismiss(False)


class InstructionsScreen(TextScreen):
    """Instructions before the practice or the main trials; Enter continues."""

    def __init__(self, body: str, keys: str, note: str = "") -> None:
        text = (f"*{note}*\n\n" if note else "") + body + "\n\n" + keys
        super().__init__("Instructions", text)


class BreakScreen(TextScreen):
    """A rest break with progress ("trial 12 of 60"); Enter continues."""

    def __init__(self, progress: str) -> None:
        super().__init__(
            "Break",
            "Take a short rest if you like. Press **Enter** when you are ready to go on.",
            progress=progress,
        )


class EndScreen(TextScreen):
    """The end of the session; Enter closes the program."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("enter", "continue", "Close")]


class EndQuestionsScreen(Screen[dict[str, Any]]):
    """The end-of-study questions, one at a time; returns {id: (value, rt_ms)}.

    `on_answer` receives each answer as it is given ({id: (value, rt_ms)}), so the study
    flow saves it before the last one: a crash loses no answer already given. `asked_before`
    counts those answered before a resume (numbered as they were: "3/3" stays "3/3").
    """

    def __init__(
        self,
        questions: list[Any],
        now_ms: Any = None,
        on_answer: Callable[[dict[str, tuple[Any, float]]], None] | None = None,
        asked_before: int = 0,
    ) -> None:
        super().__init__()
        self.questions = questions
        self.now_ms = now_ms
        self.on_answer = on_answer
        self.asked_before = asked_before
        self.answers: dict[str, tuple[Any, float]] = {}

    def compose(self) -> ComposeResult:
        total = self.asked_before + len(self.questions)
        with Vertical(id="page"):
            yield Static("A last question" if total == 1 else "Last questions",
                         classes="page-title")  # fmt: skip
            yield Vertical(id="end-questions")
        yield Footer()

    def on_mount(self) -> None:
        self._ask(0)

    def _ask(self, k: int) -> None:
        box = self.query_one("#end-questions", Vertical)
        box.remove_children()
        total = self.asked_before + len(self.questions)
        number = f"{self.asked_before + k + 1}/{total}  " if total > 1 else ""
        box.mount(QuestionPanel(question_view(self.questions[k]), self.now_ms, number=number))

    @on(Answered)
    def _answered(self, message: Answered) -> None:
        message.stop()
        answer = (message.value, message.rt_ms)
        self.answers[message.question_id] = answer
        if self.on_answer is not None:
            self.on_answer({message.question_id: answer})
        if len(self.answers) < len(self.questions):
            self._ask(len(self.answers))
        else:
            self.dismiss(self.answers)


class ReconnectingScreen(TextScreen):
    """The study's database server is away (restarting, failing over): tries again on its
    own every `every_s` seconds and goes away once `ping` succeeds (returns True)."""

    BINDINGS: ClassVar[list[BindingType]] = []

    def __init__(self, what: str, ping: Callable[[], None], every_s: float = 1.0) -> None:
        super().__init__(
            "Reconnecting…",
            f"Reconnecting to the study's database to save {what}.\n\nEverything you "
            "answered so far is saved; this continues by itself once the connection is "
            "back. **Ctrl+Q** twice quits (the study can be resumed later).",
        )
        self.ping = ping
        self.every_s = every_s
        self._trying = False

    def on_mount(self) -> None:
        super().on_mount()
        self.set_interval(self.every_s, self._try)

    async def _try(self) -> None:
        if self._trying:
            return
        self._trying = True
        try:
            await _in_daemon_thread(self.ping)
        except Exception:  # still away: the next tick tries again
            return
        finally:
            self._trying = False
        self.dismiss(True)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action != "continue"  # nothing to confirm: it goes on by itself


async def _in_daemon_thread(call: Callable[[], None]) -> None:
    """Run `call` in a daemon thread and wait for it: a ping still waiting for a server that
    is away never holds the program's exit (the default executor's threads would)."""
    loop = asyncio.get_running_loop()
    done: asyncio.Future[None] = loop.create_future()

    def settle(exc: BaseException | None) -> None:
        if done.done():
            return
        if exc is None:
            done.set_result(None)
        else:
            done.set_exception(exc)

    def run() -> None:
        outcome: BaseException | None = None
        try:
            call()
        except BaseException as exc:  # handed to the waiting coroutine
            outcome = exc
        with contextlib.suppress(RuntimeError):  # the app has exited meanwhile
            loop.call_soon_threadsafe(settle, outcome)

    threading.Thread(target=run, name="uxlab-reconnect", daemon=True).start()
    await done


class InUseScreen(Screen[str]):
    """The participant's session is still open in another process (one closing after a
    database outage, a second window): wait and try again, the default (Enter, and by itself
    every `every_s` seconds: returns "retry"), or `i` to type another id ("other"). Never a
    new id pre-filled; the process's pid, host and session go to the researcher's log."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "retry", "Try again", priority=True),
        Binding("i", "other_id", "Type another id"),
    ]

    def __init__(self, participant: str, every_s: float = 3.0, attempt: int = 1) -> None:
        super().__init__()
        self.participant = participant
        self.every_s = every_s
        self.attempt = attempt
        self.body = (
            f"Your session ({participant}) is still open somewhere else: in another window, "
            "or one that is still closing. Nothing you answered is lost.\n\n"
            f"Please wait a moment: this page tries again by itself every {every_s:g} "
            "seconds, or press **Enter** to try again now.\n\n"
            "If the researcher gave you a different id, press **i** to type it."
        )

    def compose(self) -> ComposeResult:
        with Vertical(id="page"):
            yield Static("Your session is still open", classes="page-title")
            if self.attempt > 1:
                yield Static(f"Tried {self.attempt} times so far.", classes="progress")
            with VerticalScroll(id="page-body"):
                yield Markdown(self.body)
        yield Footer()

    def on_mount(self) -> None:
        self.set_timer(self.every_s, self.action_retry)

    def action_retry(self) -> None:
        if self.is_current:
            self.dismiss("retry")

    def action_other_id(self) -> None:
        self.dismiss("other")


class SaveFailedScreen(TextScreen):
    """Saving failed (a locked database, a full disk): `r` tries again (returns True)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("r", "retry", "Retry")]

    def __init__(self, what: str, reason: str) -> None:
        super().__init__(
            "Could not save",
            f"Could not save {what}: {reason}.\n\nPress **r** to retry, or **Ctrl+Q** to "
            "quit; nothing already saved is lost.",
        )
        self.reason = reason

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        return action != "continue"  # only r retries: a habitual Enter changes nothing

    def action_retry(self) -> None:
        self.dismiss(True)
