"""Quit that forgives a slip: the first Ctrl+Q (or Ctrl+C) asks, the second quits.

`QuitConfirm` is the one-line bar that asks. It is drawn over the line above the footer
(the layer notifications use, so nothing under it moves or re-wraps, and a stream playing
under it keeps its timing), on whatever screen is showing. `QuitGuard` holds the state: a
first press arms it and shows the bar; a second press of either key while armed says
"quit"; any other key, or `CONFIRM_S` seconds, disarms it and the bar goes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from textual.screen import Screen
from textual.widgets import Static

QUIT_KEYS = ("ctrl+q", "ctrl+c")
"""The keys that quit the study (pressed twice)."""
CONFIRM_S = 5.0
"""How long the question stays after a first press (s)."""


class QuitConfirm(Static):
    """The bar: "Press Ctrl+Q again to leave; your answers so far are saved." """

    DEFAULT_CSS = """
    QuitConfirm {
        layer: _toastrack;
        dock: bottom;
        margin-bottom: 1;
        width: 100%;
        height: auto;
        padding: 0 2;
        background: $warning;
        color: $background;
        text-style: bold;
    }
    """


def confirm_text(key_label: str, saved: bool) -> str:
    """What the bar says after a first press of `key_label` (e.g. `Ctrl+Q`)."""
    if saved:
        return f"Press {key_label} again to leave; your answers so far are saved."
    return f"Press {key_label} again to leave."


class QuitGuard:
    """The armed-or-not state of the quit keys (see the module docstring).

    `set_timer` is the app's (`App.set_timer`), so the bar goes after `confirm_s` seconds.
    """

    def __init__(self, set_timer: Callable[..., Any], confirm_s: float = CONFIRM_S) -> None:
        self.set_timer = set_timer
        self.confirm_s = confirm_s
        self.bar: QuitConfirm | None = None
        self.asked = 0
        """How many times a first press asked (each is also a `ctrl+q` key in the trial)."""
        self._timer: Any = None

    @property
    def armed(self) -> bool:
        return self.bar is not None

    def press(self, screen: Screen[Any], key_label: str, saved: bool) -> bool:
        """A quit key was pressed: True to quit now (it was armed), else arm and ask."""
        if self.armed:
            self.disarm()
            return True
        self.asked += 1
        self.bar = QuitConfirm(confirm_text(key_label, saved), id="quit-confirm")
        screen.mount(self.bar)
        self._timer = self.set_timer(self.confirm_s, self.disarm)
        return False

    def other_key(self, key: str) -> None:
        """Any other key: the participant goes on, so the question goes."""
        if self.armed and key not in QUIT_KEYS:
            self.disarm()

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None
        bar, self.bar = self.bar, None
        if bar is not None and bar.is_attached:
            bar.remove()
