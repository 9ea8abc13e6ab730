"""The program each SSH connection runs in its pseudo-terminal: `uxlab run` for one participant.

`python -m uxlab.cli.remote_participant STUDY DB PARTICIPANT` makes the pseudo-terminal on its
stdin its controlling terminal (so the kernel delivers SIGWINCH and SIGHUP as for a local
terminal) and runs `uxlab run STUDY --db DB --participant PARTICIPANT` in this process, with
two differences that keep the researcher's words away from the participant:
- the timing check is made off-screen (`--off-screen-check`: the participant is not shown a
  test stream), and its warnings are stored with the session as always, but not shown as a
  screen (no researcher sits at a remote participant's terminal); they go to the host's log;
- the closing lines (database path, resume and export commands) go to the host's log, and
  the participant reads a note of their own instead.
The host's log is the descriptor named by `UXLAB_HOST_NOTES_FD`, when the host passes one.
Errors (e.g. a session already completed) still reach the participant on the terminal.

In a browser tab (`uxlab host` without `--ssh`), the host passes `UXLAB_HOST_BROWSER`: the
browser family and the display refresh rate the page measured. They are stored with the
session's environment (`browser`), a display too slow for the study's shortest gap adds a
timing warning, and the app writes paint marks after each frame that holds chunks
(`uxlab.tui.browser_marks`), so the page can report when it painted them.
"""

from __future__ import annotations

import fcntl
import io
import os
import sys
import termios
from contextlib import redirect_stdout, suppress
from typing import TYPE_CHECKING, Any, TextIO

from uxlab.host import BROWSER_VAR, NOTES_FD_VAR

if TYPE_CHECKING:
    from uxlab.tui.study_app import StudyApp

FAREWELL = {
    0: "The study is finished. Thank you for taking part; you may close this connection.",
    1: "Nothing was stored. Connect again with the same command to take part.",
    3: "Your answers so far are stored. Connect again with the same command to continue.",
}
BROWSER_FAREWELL = {
    0: "The study is finished. Thank you for taking part; you may close this tab.",
    1: "Nothing was stored. Open your link again to take part.",
    3: "Your answers so far are stored. Open your link again to continue.",
}


def _browser() -> dict[str, Any] | None:
    """What the host says about the participant's browser (family, display_hz), or None."""
    import json

    raw = os.environ.pop(BROWSER_VAR, "")
    if not raw:
        return None
    try:
        info = json.loads(raw)
    except ValueError:
        return None
    return info if isinstance(info, dict) else None


def _notes() -> TextIO | None:
    try:
        fd = int(os.environ.pop(NOTES_FD_VAR, ""))
        os.fstat(fd)
    except (ValueError, OSError):
        return None
    return os.fdopen(fd, "w", encoding="utf-8", buffering=1)


def _remote_app_class(
    notes: TextIO | None, browser: dict[str, Any] | None = None
) -> type[StudyApp]:
    from uxlab.tui import study_app

    class RemoteStudyApp(study_app.StudyApp):
        """The study app with its timing warnings logged for the researcher, not shown
        (also those the on-screen timing check finds)."""

        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            if browser is not None:
                from uxlab.environment import display_warning
                from uxlab.session import shortest_gap_ms
                from uxlab.tui.browser_marks import enable_paint_marks

                self.environment["browser"] = browser
                warning = display_warning(browser.get("display_hz"), shortest_gap_ms(self.study))
                if browser.get("display_hz"):
                    browser["display_keeps_gaps"] = warning is None
                if warning is not None:
                    self.warnings.append(warning)
                enable_paint_marks(self)

        async def show_warnings(self, warnings: list[str]) -> None:
            for line in warnings:  # kept in self.environment["timing_warnings"] too
                _note(notes, f"timing warning: {' '.join(line.split())}")

    return RemoteStudyApp


def _note(notes: TextIO | None, line: str) -> None:
    if notes is not None:
        with suppress(OSError):
            notes.write(line + "\n")


def main(argv: list[str]) -> int:
    study, db, participant = argv
    with suppress(OSError):  # we are a session leader (the host starts a new session)
        fcntl.ioctl(0, termios.TIOCSCTTY, 0)
    notes = _notes()
    browser = _browser()
    from uxlab.cli import main as uxlab_main
    from uxlab.tui import study_app, terminal_run

    remote_app = _remote_app_class(notes, browser)
    # replaced on purpose (a class, so setattr): `uxlab run` imports it when it runs ...
    setattr(study_app, "StudyApp", remote_app)  # noqa: B010
    if hasattr(terminal_run, "StudyApp"):  # ... or, should it import it at the top, from there
        terminal_run.StudyApp = remote_app
    closing = io.StringIO()
    with redirect_stdout(closing):  # the app draws on stderr; the closing lines are stdout
        status = uxlab_main(
            ["run", study, "--db", db, "--participant", participant, "--off-screen-check"]
        )
    for line in closing.getvalue().splitlines():
        _note(notes, line)
    with suppress(OSError):  # the connection may be gone (SIGHUP): the data is stored
        farewell = FAREWELL if browser is None else BROWSER_FAREWELL
        if status in farewell:
            print(farewell[status], flush=True)
    return status


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main(sys.argv[1:]))
