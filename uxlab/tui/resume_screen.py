"""The first screen of `uxlab run` on a database with unfinished sessions: which to continue.

Re-running the same command (without `--participant`) must not turn one person into two
participants, so before the participant-id screen the researcher sees the study's
unfinished sessions (pseudonymous id, progress, paused or open, last activity) and
continues one with one key (its number, or ↑ ↓ and Enter); `n` starts a new participant.
The screen returns the chosen participant id, or None for a new participant.
"""

from __future__ import annotations

import time
from datetime import datetime
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Footer, OptionList, Static
from textual.widgets.option_list import Option

from uxlab.store.store import UnfinishedSession

SHORTCUTS = 9
"""Rows 1-9 are continued with their digit key."""


def ago_text(seconds: float) -> str:
    """`just now`, `12 min ago`, `3 h ago`, `2 days ago` (a negative age: `just now`)."""
    if seconds < 60:
        return "just now"
    if seconds < 3600:
        return f"{int(seconds // 60)} min ago"
    if seconds < 2 * 86400:
        return f"{int(seconds // 3600)} h ago"
    return f"{int(seconds // 86400)} days ago"


def session_line(k: int, s: UnfinishedSession, now_s: float) -> str:
    """One row: number, id, progress, how it ended, last activity (local time and age)."""
    how = "paused" if s.state == "interrupted" else "open"  # a quit / ended without one
    last = datetime.fromtimestamp(s.last_seen_s).strftime("%b %d %H:%M")
    key = f"{k}" if k <= SHORTCUTS else " "
    pilot = " pilot" if s.pilot else ""
    done = f"{s.n_done}/{s.n_trials}"
    return (
        f"{key:>2}  {s.participant:<12} {done:>7} trials  {how:<7} "
        f"{last} ({ago_text(now_s - s.last_seen_s)}){pilot}"
    )


class ResumeScreen(Screen[str | None]):
    """Unfinished sessions to continue (returns the participant id) or `n` for a new one."""

    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("n", "new", "New participant"),
        *[Binding(str(k), f"pick({k})", f"Continue {k}", show=False) for k in range(1, 10)],
    ]

    def __init__(
        self,
        sessions: list[UnfinishedSession],
        study_title: str,
        now_s: float | None = None,
        n_other_versions: int = 0,
    ) -> None:
        super().__init__()
        self.sessions = sessions
        self.n_other_versions = n_other_versions
        self.study_title = study_title
        self.now_s = time.time() if now_s is None else now_s

    def compose(self) -> ComposeResult:
        n = len(self.sessions)
        with Vertical(id="page"):
            yield Static(self.study_title, classes="page-title")
            yield Static(
                f"{n} unfinished session{'s' if n != 1 else ''} of this study (for the "
                "researcher). To continue one, press its number, or choose it with ↑ ↓ and "
                "press Enter. To start a new participant, press n.",
                classes="explain",
            )
            yield Static(
                "paused: quit (Ctrl+Q, or the window was closed). open: the program ended "
                "without quitting, or is still running in another terminal.",
                classes="explain",
            )
            if self.n_other_versions:
                k = self.n_other_versions
                yield Static(
                    f"Not listed: {k} unfinished session{'s' if k != 1 else ''} of another "
                    "version of this study file (resume with that file).",
                    classes="explain",
                )
            yield OptionList(
                *[
                    Option(session_line(k, s, self.now_s), id=s.participant)
                    for k, s in enumerate(self.sessions, start=1)
                ],
                id="unfinished",
            )
        yield Footer()

    def on_mount(self) -> None:
        self.query_one(OptionList).focus()

    @on(OptionList.OptionSelected)
    def _selected(self, message: OptionList.OptionSelected) -> None:
        message.stop()
        self.dismiss(message.option.id)

    def action_pick(self, k: int) -> None:
        if 1 <= k <= len(self.sessions):
            self.dismiss(self.sessions[k - 1].participant)

    def action_new(self) -> None:
        self.dismiss(None)
