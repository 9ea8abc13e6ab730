"""Running a Textual app from a command so that a crash is one line, like every command's.

Textual prints an unhandled exception as a full traceback with local variables after it
restores the terminal. `run_app` keeps that print back and raises the exception instead,
so `uxlab.cli.main` says it in one line (exit status 3) and `--debug` shows the traceback.
A terminal left raw by an earlier session's kill -9 is put back to line mode first
(`uxlab.tui.terminal_modes`), so this app restores a usable terminal when it ends.
"""

from __future__ import annotations

import contextlib
import sys
from typing import TYPE_CHECKING, Any, TypeVar

from uxlab.tui.terminal_modes import cook_raw_terminal

if TYPE_CHECKING:
    from textual.app import App

Result = TypeVar("Result")


def run_app(app: App[Result], **run_kwargs: Any) -> Result | None:
    """`app.run(**run_kwargs)`; re-raises the exception that stopped the app, if any."""
    if not run_kwargs.get("headless"):  # the descriptor Textual's driver saves and restores
        with contextlib.suppress(AttributeError, ValueError, OSError):  # no standard input
            cook_raw_terminal(sys.__stdin__.fileno())  # type: ignore[union-attr]
    renderables = getattr(app, "_exit_renderables", None)
    if isinstance(renderables, list) and hasattr(app, "_print_error_renderables"):
        insides: Any = app  # Textual's own print of the error, outside its typed API
        insides._print_error_renderables = renderables.clear  # not printed: raised below
    result = app.run(**run_kwargs)
    error = getattr(app, "_exception", None)
    if isinstance(error, Exception) and app.return_code:
        raise error
    return result
