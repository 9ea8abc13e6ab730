"""`uxlab run`: one participant's session of a study in this terminal.

Before the first screen: the scheduling priority raised (`nice`), the glass checked
(`glass`), what this machine runs on collected with its timing warnings, and the timing
check played on screen in the study's own view, off-screen (hand-off only), or not at all.
Then the study app runs against the store, which is closed even when its server went away.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Literal

from uxlab.errors import UxlabError
from uxlab.study import Study
from uxlab.tui.run_result import RunResult

TimingCheck = Literal["on-screen", "off-screen", "none"]


class RunRefused(UxlabError):
    """An option this machine cannot honour (`--nice`, `--glass`); nothing was run."""


@dataclass
class TerminalRun:
    """How the session ended (the app's result, None when quit before it began) and the
    session's note on trials shown outside the study's timing tolerance, if any."""

    result: RunResult | None
    fidelity_note: str | None


def run_in_terminal(
    study: Study,
    db: Path | str,
    *,
    participant: str | None = None,
    seed: int | None = None,
    pilot: bool = False,
    nice: int | None = None,
    glass: bool = False,
    timing_check: TimingCheck = "on-screen",
    resume_words: tuple[str, ...] = (),
) -> TerminalRun:
    """Run one participant's session of `study`, stored in `db`. `resume_words`: the
    `uxlab run` arguments quoted in the hint when `nice` cannot be honoured."""
    from uxlab.environment import collect_environment, timing_warnings
    from uxlab.session import shortest_gap_ms
    from uxlab.store import Store
    from uxlab.tui import frame_cap
    from uxlab.tui.app_runner import run_app
    from uxlab.tui.study_app import StudyApp

    if nice:
        _raise_priority(nice, resume_words)
    if glass:
        from uxlab.tui.glass_session import GlassUnavailable, check_glass

        try:
            check_glass()
        except GlassUnavailable as exc:
            raise RunRefused(f"--glass: {exc}; leave --glass out to run without it") from None
    env = collect_environment(frame_cap())
    warnings = timing_warnings(env, shortest_gap_ms(study))
    if timing_check == "off-screen":  # before the app: hand-off only
        from uxlab.timing_check import check_timing

        check = check_timing(study, frame_cap_fps=frame_cap(), multiplexer=env["multiplexer"])
        env["timing_check"] = check.to_environment()
        warning = check.warning()
        if warning is not None:
            warnings.append(warning)
    store = Store.open(db, busy_timeout_s=5.0)  # then the participant sees why, and r retries
    app: StudyApp | None = None
    try:
        app = StudyApp(
            study,
            store,
            participant=participant,
            seed=seed,
            pilot=pilot,
            environment=env,
            warnings=warnings,
            # on screen, in the study's own view, before the first screen: the researcher
            # sees what it finds
            timing_check=timing_check == "on-screen",
            glass=glass,
        )
        result = run_app(app)
    finally:  # a server away (quit on the reconnecting screen): close without waiting for it
        store.close(server_away=app is not None and app.store_away)
    session = app.session if app is not None else None
    note = session.fidelity_note() if session is not None else ""
    return TerminalRun(result, note or None)


def _raise_priority(nice: int, resume_words: tuple[str, ...]) -> None:
    """Lower this process's niceness by `nice`, or refuse naming how to run it instead."""
    from uxlab.command_hint import command
    from uxlab.machine import raise_priority

    try:
        raise_priority(nice)
    except (PermissionError, ValueError) as exc:
        raise RunRefused(
            f"--nice {nice}: cannot raise the priority ({exc}); run it as "
            f"`sudo nice -n -{abs(nice)} {command('run', *resume_words)}` or leave "
            "--nice out"
        ) from None
