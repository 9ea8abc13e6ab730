"""Keyboard-only question widgets: Likert, yes/no, choice, slider and free text, one per
question type of `uxlab.study.questions` (`WIDGETS`, by the type's name).

Each widget shows one question, takes its answer from the keyboard only, and posts an
`Answered` message with the value and the response time (from the moment the widget was
first painted to the confirming key press, on the session's monotonic clock).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar

from rich.text import Text
from textual import events, on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import Input, Static

from uxlab.study.questions import question_type, slider_step

NowMs = Callable[[], float]


def _perf_ms() -> float:
    return time.perf_counter_ns() / 1e6


@dataclass(frozen=True)
class QuestionView:
    """What a question widget needs to know (built from the study's question spec)."""

    id: str
    kind: str  # likert | yesno | choice | slider | text
    text: str
    scale: int = 5
    labels: tuple[str, str] = ("", "")
    options: tuple[str, ...] = ()
    minimum: float = 0.0
    maximum: float = 100.0
    step: float = 1.0
    required: bool = True


_ARROWS = {False: "← →", True: "↑ ↓"}


class NotAnswered(Message):
    """Enter with no answer yet: the question's panel says which keys answer it."""


class Chosen(Message):
    """A value is chosen (not confirmed yet): the panel takes back its "answer first"."""


class Answered(Message):
    """A question was answered: its id, the value and the response time in ms."""

    def __init__(self, question_id: str, value: Any, rt_ms: float) -> None:
        super().__init__()
        self.question_id = question_id
        self.value = value
        self.rt_ms = rt_ms


class _Timed:
    """Mixin: response time from first paint to the confirming key."""

    now_ms: NowMs
    shown_ms: float | None = None

    def _mark_shown(self) -> None:
        if self.shown_ms is None:
            self.shown_ms = self.now_ms()

    def _rt(self) -> float:
        shown = self.shown_ms if self.shown_ms is not None else self.now_ms()
        return max(0.0, self.now_ms() - shown)


class ChoiceRow(_Timed, Widget, can_focus=True):
    """A row of options chosen with arrows or digits and confirmed with Enter.

    Serves Likert scales (options 1..k with end labels), yes/no and short choice lists.
    """

    DEFAULT_CSS = """
    ChoiceRow { height: auto; padding: 1 0; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("enter", "confirm", "Confirm"),
    ]
    """Arrows are bound per widget: the footer names the ones that match the layout."""

    selected: reactive[int | None] = reactive(None)

    def __init__(
        self,
        question: QuestionView,
        values: list[Any],
        captions: list[str],
        *,
        hotkeys: dict[str, int] | None = None,
        vertical: bool = False,
        now_ms: NowMs | None = None,
        id: str | None = None,
    ) -> None:
        super().__init__(id=id)
        self.question = question
        self.values = values
        self.captions = captions
        self.hotkeys = hotkeys or {}
        self.vertical = vertical
        self.now_ms = now_ms or _perf_ms
        row, column = ("right,l", "left,h"), ("down,j", "up,k")
        shown, other = (column, row) if vertical else (row, column)
        self._bindings.bind(shown[0], "move(1)", "Choose", key_display=_ARROWS[vertical])
        self._bindings.bind(shown[1], "move(-1)", "Choose", show=False)
        self._bindings.bind(other[0], "move(1)", "Choose", show=False)
        self._bindings.bind(other[1], "move(-1)", "Choose", show=False)

    def on_mount(self) -> None:
        self.call_after_refresh(self._mark_shown)

    def render(self) -> Text:
        out = Text()
        for i, caption in enumerate(self.captions):
            chosen = i == self.selected
            style = "bold reverse" if chosen else ""
            box = f" {caption} "
            out.append(f"[{box}]" if chosen else f" {box} ", style=style)
            out.append("\n" if self.vertical else " ")
        labels = self.question.labels
        if not self.vertical and any(labels):
            # Under the first option's caption, and ending under the last one's.
            last_start = 2 + sum(len(c) + 5 for c in self.captions[:-1])
            last_end = last_start + len(self.captions[-1])
            left, right = labels
            pad = last_end - len(right) - (2 + len(left))
            out.append("\n  ")
            out.append(left, style="dim")
            out.append(" " * max(1, pad))
            out.append(right, style="dim")
        return out

    def watch_selected(self, value: int | None) -> None:
        if value is not None:
            self.post_message(Chosen())

    def action_move(self, delta: int) -> None:
        if self.selected is None:
            self.selected = 0 if delta > 0 else len(self.values) - 1
        else:
            self.selected = max(0, min(len(self.values) - 1, self.selected + delta))

    def on_key(self, event: events.Key) -> None:  # digits and y/n style hotkeys
        key = event.key
        if key in self.hotkeys:
            self.selected = self.hotkeys[key]
            event.stop()

    def action_confirm(self) -> None:
        if self.selected is None:
            self.post_message(NotAnswered())
            return
        self.post_message(Answered(self.question.id, self.values[self.selected], self._rt()))


class Slider(_Timed, Widget, can_focus=True):
    """A horizontal slider moved with arrows (shift for big steps), confirmed with Enter."""

    DEFAULT_CSS = """
    Slider { height: auto; padding: 1 0; }
    """

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("left,h", "move(-1)", "Move", key_display="← →"),
        Binding("right,l", "move(1)", "More", show=False),
        Binding("shift+left,H", "move(-10)", "Less x10", show=False),
        Binding("shift+right,L", "move(10)", "More x10", show=False),
        Binding("enter", "confirm", "Confirm"),
    ]

    value: reactive[float | None] = reactive(None)

    def __init__(self, question: QuestionView, *, now_ms: NowMs | None = None, width: int = 44):
        super().__init__()
        self.question = question
        self.now_ms = now_ms or _perf_ms
        self.bar_width = width

    def on_mount(self) -> None:
        self.call_after_refresh(self._mark_shown)

    def render(self) -> Text:
        q = self.question
        out = Text()
        span = q.maximum - q.minimum
        if self.value is None:
            out.append("─" * self.bar_width, style="dim")
            out.append("  (← → to place)", style="dim")
        else:
            pos = round((self.value - q.minimum) / span * (self.bar_width - 1)) if span else 0
            out.append("─" * pos)
            out.append("●", style="bold")
            out.append("─" * (self.bar_width - 1 - pos))
            out.append(f"  {self.value:g}")
        out.append("\n")
        left, right = q.labels
        out.append(left or f"{q.minimum:g}", style="dim")
        pad = self.bar_width - len(left or f"{q.minimum:g}") - len(right or f"{q.maximum:g}")
        out.append(" " * max(1, pad))
        out.append(right or f"{q.maximum:g}", style="dim")
        return out

    def watch_value(self, value: float | None) -> None:
        if value is not None:
            self.post_message(Chosen())

    def action_move(self, steps: int) -> None:
        q = self.question
        if self.value is None:
            self.value = q.minimum + round((q.maximum - q.minimum) / 2 / q.step) * q.step
            return
        v = self.value + steps * q.step
        self.value = max(q.minimum, min(q.maximum, round(v / q.step) * q.step))

    def action_confirm(self) -> None:
        if self.value is None:
            self.post_message(NotAnswered())
            return
        self.post_message(Answered(self.question.id, self.value, self._rt()))


class FreeText(_Timed, Vertical):
    """A free-text answer; Enter submits (an empty answer only when not required)."""

    DEFAULT_CSS = """
    FreeText { height: auto; padding: 1 0; }
    """

    def __init__(self, question: QuestionView, *, now_ms: NowMs | None = None):
        super().__init__()
        self.question = question
        self.now_ms = now_ms or _perf_ms

    def compose(self) -> ComposeResult:
        # a free-text answer is stored as typed: the box asks for no name, as the id does
        yield Input(placeholder="Type your answer (not your name), then press Enter", id="answer")

    def on_mount(self) -> None:
        self.query_one(Input).focus()
        self.call_after_refresh(self._mark_shown)

    @on(Input.Submitted)
    def _submitted(self, event: Input.Submitted) -> None:
        event.stop()
        text = event.value.strip()
        if not text and self.question.required:
            self.post_message(NotAnswered())
            return
        self.post_message(Answered(self.question.id, text or None, self._rt()))


def question_view(q: Any) -> QuestionView:
    """The view of a study question (`uxlab.study.Question`: id, type, text, scale, ...)."""
    labels = tuple(q.labels) if len(q.labels) == 2 else ("", "")
    kw: dict[str, Any] = {"id": q.id, "kind": q.type, "text": q.text, "labels": labels}
    kw["required"] = question_type(q.type).answer_required
    if q.scale is not None:
        kw["scale"] = int(q.scale)
    if q.options:
        kw["options"] = tuple(q.options)
    if q.min is not None and q.max is not None:
        lo, hi = float(q.min), float(q.max)
        kw.update(minimum=lo, maximum=hi, step=slider_step(lo, hi))
    return QuestionView(**kw)


@dataclass(frozen=True)
class QuestionWidget:
    """How the terminal shows one question type: its widget, its one-line key help, and
    what that line says instead after Enter with no answer (`need`)."""

    build: Callable[[QuestionView, NowMs | None], Widget]
    help: Callable[[QuestionView], str]
    need: Callable[[QuestionView], str]


def _likert(q: QuestionView, now_ms: NowMs | None) -> Widget:
    values = list(range(1, q.scale + 1))
    hotkeys = {str(v): i for i, v in enumerate(values) if v < 10}
    return ChoiceRow(q, values, [str(v) for v in values], hotkeys=hotkeys, now_ms=now_ms)


def _yesno(q: QuestionView, now_ms: NowMs | None) -> Widget:
    return ChoiceRow(
        q, ["yes", "no"], ["Yes (y)", "No (n)"], hotkeys={"y": 0, "n": 1}, now_ms=now_ms
    )


def _choice(q: QuestionView, now_ms: NowMs | None) -> Widget:
    hotkeys = {str(i + 1): i for i in range(min(9, len(q.options)))}
    captions = [f"{i + 1}. {opt}" for i, opt in enumerate(q.options)]
    return ChoiceRow(q, list(q.options), captions, hotkeys=hotkeys, vertical=True, now_ms=now_ms)


WIDGETS: dict[str, QuestionWidget] = {
    "likert": QuestionWidget(
        _likert,
        lambda q: f"← → or 1-{min(q.scale, 9)} to choose, Enter to confirm",
        lambda q: f"Choose an answer first: press 1-{min(q.scale, 9)} (or ← →), then Enter.",
    ),
    "yesno": QuestionWidget(
        _yesno,
        lambda q: "y / n (or ← →) to choose, Enter to confirm",
        lambda q: "Choose an answer first: press y or n (or ← →), then Enter.",
    ),
    "choice": QuestionWidget(
        _choice,
        lambda q: "↑ ↓ or the number keys to choose, Enter to confirm",
        lambda q: "Choose an answer first: press its number (or ↑ ↓), then Enter.",
    ),
    "slider": QuestionWidget(
        lambda q, now_ms: Slider(q, now_ms=now_ms),
        lambda q: "← → to move (Shift for big steps), Enter to confirm",
        lambda q: "Place the marker first: press ← or →, then Enter.",
    ),
    "text": QuestionWidget(
        lambda q, now_ms: FreeText(q, now_ms=now_ms),
        lambda q: "type your answer, then Enter (Enter on an empty box skips it)",
        lambda q: "Type an answer first, then press Enter.",
    ),
}
"""The widget of each question type (`uxlab.study.questions.REGISTRY`), by its name."""


def build_question_widget(q: QuestionView, now_ms: NowMs | None = None) -> Widget:
    """The widget for a question of any kind."""
    if q.kind not in WIDGETS:
        raise ValueError(f"unknown question kind {q.kind!r}")
    return WIDGETS[q.kind].build(q, now_ms)


def question_help(q: QuestionView) -> str:
    """The one-line key help shown under a question."""
    return WIDGETS[q.kind].help(q)


class QuestionPanel(Vertical):
    """One question: its text, its widget and its key help."""

    DEFAULT_CSS = """
    QuestionPanel { height: auto; }
    QuestionPanel > .question-text { text-style: bold; padding: 0 0 0 0; }
    QuestionPanel > .question-help { color: $text-muted; }
    QuestionPanel > .question-help.needed { color: $warning; text-style: bold; }
    """

    def __init__(self, q: QuestionView, now_ms: NowMs | None = None, *, number: str = ""):
        super().__init__()
        self.question = q
        self.now_ms = now_ms
        self.number = number

    def compose(self) -> ComposeResult:
        yield Static(f"{self.number}{self.question.text}", classes="question-text")
        yield build_question_widget(self.question, self.now_ms)
        yield Static(question_help(self.question), classes="question-help")

    def on_mount(self) -> None:
        widget = self.children[1]
        if widget.can_focus:
            widget.focus()

    @on(NotAnswered)
    def _not_answered(self, message: NotAnswered) -> None:
        """Enter with no answer: the key-help line names this question's keys, in place
        (no toast over the screen), until a value is chosen."""
        message.stop()
        line = self.query_one(".question-help", Static)
        line.update(WIDGETS[self.question.kind].need(self.question))
        line.add_class("needed")

    @on(Chosen)
    @on(Input.Changed)
    def _chosen(self, message: Message) -> None:
        message.stop()
        line = self.query_one(".question-help", Static)
        if line.has_class("needed"):
            line.update(question_help(self.question))
            line.remove_class("needed")
