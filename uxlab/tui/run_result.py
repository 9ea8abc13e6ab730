"""How `uxlab run`'s app ended (`StudyApp`), for the command line to report."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class RunResult:
    """How the app ended, for the command line to report."""

    outcome: str = "quit"
    """completed | interrupted | declined | quit (before a session existed)."""
    participant: str | None = None
    session_id: str | None = None
    committed: list[int] = field(default_factory=list)
    quit_trial: str | None = None
    """What became of the trial on screen at a quit (`StudySession.quit`), if any."""
    save_error: str | None = None
    """The reason the last write failed, when the participant quit on it."""
    quit_by: str | None = None
    """What quit: `key` (Ctrl+Q/Ctrl+C) or a signal's name (`SIGHUP`, `SIGTERM`, `SIGINT`)."""
    notes: list[str] = field(default_factory=list)
    """Lines for the researcher's log, never shown to the participant (which process held
    their session, a quit while the database was away)."""
