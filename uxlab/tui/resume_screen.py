"""The first screen of `uxlab run` on a database with unfinished sessions: which to continue.

Re-running the same command (without `--participant`) must not turn one person into two
participants, so before the participant-id screen the researcher sees the study's
unfinished sessions (pseudonymous id, progress, paused or open, last activity) and
continues one with one key (its number, or ↑ ↓ and Enter); `n` starts a new participant.
A session another live process runs now (`UnfinishedSession.in_use`) is listed after the
others as *in use*, with that process's pid and host and for how long; it has no number
and cannot be chosen (resuming it would be refused). The screen returns the chosen
participant id, or None for a new participant.
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


def duration_text(seconds: float) -> str:
    """`under 1 min`, `12 min`, `3 h`, `2 days` (a negative duration: `under 1 min`)."""
    if seconds < 60:
        return "under 1 min"
    return ago_text(seconds).removesuffix(" ago")


def session_line(k: int, s: UnfinishedSession, now_s: float) -> str:
    """One row: number, id, progress, how it ended, last activity (local time and age).

    Progress is counted as the participant's screen counts it (`uxlab.study.progress`):
    main trials done of the study's planned ones, then on a second line practice,
    attention checks and re-runs (trials cut off and shown again at the end).

    A session in use (`s.in_use`) has no number (`k` is ignored), shows `in use` and a
    second line saying which process holds it (`in_use_line`).
    """
    how = "paused" if s.state == "interrupted" else "open"  # a quit / ended without one
    if s.in_use is not None:
        how = "in use"
    last = datetime.fromtimestamp(s.last_seen_s).strftime("%b %d %H:%M")
    key = f"{k}" if k <= SHORTCUTS and s.in_use is None else " "
    pilot = " pilot" if s.pilot else ""
    done = f"{s.n_done}/{s.n_trials}"
    line = (
        f"{key:>2}  {s.participant:<12} {done:>7} trials  {how:<7} "
        f"{last} ({ago_text(now_s - s.last_seen_s)}){pilot}"
    )
    if s.counts is not None and s.counts.breakdown():
        line += f"\n    {s.counts.breakdown()}"
    return line if s.in_use is None else f"{line}\n{in_use_line(s)}"


def in_use_line(s: UnfinishedSession) -> str:
    """Which live process holds the session, where and for how long (its second line)."""
    held = s.in_use
    if held is None:
        return ""
    line = f"    in use by pid {held.pid} on host {held.host} for {duration_text(held.held_s)}"
    if held.other_host:
        line += (
            f"\n    (another host: free after {held.stale_after_s / 60:.0f} min without "
            f"activity; idle {duration_text(held.idle_s)})"
        )
    return line


class ResumeScreen(Screen[str | None]):
    """Unfinished sessions to continue (returns the participant id) or `n` for a new one;
    sessions in use by another live process are shown, after the others, and not offered."""

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
        problem: str = "",
    ) -> None:
        super().__init__()
        self.resumable = [s for s in sessions if s.in_use is None]
        """The sessions that can be continued here, numbered 1, 2, ... on the screen."""
        self.in_use = [s for s in sessions if s.in_use is not None]
        """The sessions another live process runs now: listed, not offered."""
        self.sessions = self.resumable + self.in_use
        self.n_other_versions = n_other_versions
        self.study_title = study_title
        self.problem = problem
        """Why the session chosen before could not be continued (shown above the list)."""
        self.now_s = time.time() if now_s is None else now_s

    def compose(self) -> ComposeResult:
        n, k_busy = len(self.sessions), len(self.in_use)
        with Vertical(id="page"):
            yield Static(self.study_title, classes="page-title")
            if self.problem:
                yield Static(self.problem, classes="explain error")
            busy = ""
            if k_busy:
                busy = (
                    f"; {k_busy} of them {'is' if k_busy == 1 else 'are'} in use in another "
                    "process and cannot be continued here"
                )
            how = (
                "To continue one, press its number, or choose it with ↑ ↓ and press Enter. "
                if self.resumable
                else ""
            )
            yield Static(
                f"{n} unfinished session{'s' if n != 1 else ''} of this study (for the "
                f"researcher){busy}. {how}To start a new participant, press n.",
                classes="explain",
            )
            yield Static(
                "5/15 trials: main trials done of the study's 15, as the participant's "
                "screen counts them (practice, checks and re-runs below). "
                "paused: quit (Ctrl+Q twice, or the window was closed). open: the program ended "
                "without quitting."
                + (
                    " in use: running now in another process (its pid and host are shown); "
                    "finish or quit it there first."
                    if k_busy
                    else ""
                ),
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
                    Option(
                        session_line(k, s, self.now_s),
                        id=s.participant,
                        disabled=s.in_use is not None,
                    )
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
        if not message.option.disabled:  # an in-use row is never selected; be sure
            self.dismiss(message.option.id)

    def action_pick(self, k: int) -> None:
        if 1 <= k <= len(self.resumable):
            self.dismiss(self.resumable[k - 1].participant)

    def action_new(self) -> None:
        self.dismiss(None)
