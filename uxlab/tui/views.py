"""The views a trial plays in, by the name its trial kind gives (`TrialKind.view`).

A trial view is a widget and a player `Sink` (`uxlab.player`): `start(prompt, waiting)`
clears it and shows the participant's prompt, `apply` / `finish` / `cancel` take the
stream, `action_toggle_details` shows or hides details (reasoning, tool calls), and `hold` /
`resume` show the trial held after a step while its questions are asked. `fills_screen`:
once the prompt is sent, the view takes the prompt box's room too (an agent at work).

`stream` is one chat exchange (`StreamView`), `chain` an agent chain's steps and answer
(`ChainView`); a new trial kind registers its view here (`register`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, ClassVar, Protocol, runtime_checkable

from textual.widget import Widget

from uxlab.streams.recording import Chunk, End, ErrorEvent
from uxlab.tui.chain_view import ChainView
from uxlab.tui.stream_view import StreamView


@runtime_checkable
class TrialView(Protocol):
    """What a trial screen needs of the view its trial plays in (see the module docstring)."""

    fills_screen: ClassVar[bool]

    def start(self, prompt: str | None = None, waiting: bool = True) -> None: ...
    def apply(self, index: int, chunk: Chunk) -> None: ...
    def finish(self, end: End | None = None, error: ErrorEvent | None = None) -> None: ...
    def cancel(self) -> None: ...
    def hold(self) -> None: ...
    def resume(self) -> None: ...
    def action_toggle_details(self) -> None: ...
    def focus(self, scroll_visible: bool = True) -> Any: ...
    @property
    def is_attached(self) -> bool: ...


ViewFactory = Callable[..., Widget]
"""Makes the view (`id=...` passed on), e.g. the widget's class."""

VIEWS: dict[str, ViewFactory] = {"stream": StreamView, "chain": ChainView}
"""Every trial view by its name (`TrialKind.view`)."""


def register(name: str, factory: ViewFactory) -> None:
    """Add the view of a trial kind defined outside uxlab (`uxlab.kinds.register`)."""
    if name in VIEWS and VIEWS[name] is not factory:
        raise ValueError(f"a trial view named {name!r} is registered already")
    VIEWS[name] = factory


def unregister(name: str) -> None:
    """Take a view added by `register` out again (the built-in views stay)."""
    if name in ("stream", "chain"):
        raise ValueError(f"{name!r} is a built-in trial view")
    VIEWS.pop(name, None)


def make_view(name: str, **kwargs: Any) -> Widget:
    """A new view of the kind named `name` (KeyError when none is registered)."""
    return VIEWS[name](**kwargs)
