"""`uxlab check-timing STUDY.toml [--fps N] [--glass [--terminal NAME]] [--off-screen]`.

Plays a short test schedule at the study's shortest gap in the study's own view, on this
terminal (`uxlab.tui.calibration`: the same check `uxlab run` makes before the first
trial), judges it by the tolerance the trials are flagged by, and says what to do when the
machine is too busy. `--glass` measures at the glass of an X terminal window: this one, or
a new window of `--terminal` (xterm, alacritty, kitty); where it cannot, it says why and
measures on screen. `--off-screen` (or no terminal) plays it without a screen (hand-off
only). Exit status 0 when the timing is kept, 1 when it is not.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from uxlab.study.spec import Study
    from uxlab.timing_check import TimingCheck


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "check-timing",
        help="check that this machine can keep a study's shortest gaps (before recruiting)",
        description="Play a short test schedule at the study's shortest gap in the study's "
        "own view on this terminal, measure how late chunks reach the screen (at the glass of "
        "an X terminal window with --glass), read the load and CPU steal, and say whether "
        "this machine can keep the study's timing tolerance ([timing] max_late_p99_ms) right "
        "now. `uxlab run` makes the same check before the first trial.",
    )
    parser.add_argument("study", metavar="STUDY.toml", help="the study file")
    parser.add_argument(
        "--fps", type=int, metavar="N", help="terminal frame cap (default 240, or UXLAB_FPS)"
    )
    parser.add_argument(
        "--glass",
        action="store_true",
        help="measure when the terminal window shows each chunk (needs an X display)",
    )
    parser.add_argument(
        "--terminal",
        metavar="NAME",
        help="with --glass: open a new window of this emulator (xterm, alacritty, kitty) at "
        "80x24 and check there, instead of in this terminal",
    )
    parser.add_argument(
        "--off-screen",
        action="store_true",
        help="play the test schedule without a screen (the event loop's hand-off only)",
    )
    parser.add_argument("--result-json", help=argparse.SUPPRESS)
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.cli import CliError

    if args.fps is not None:
        if args.fps < 1:
            raise CliError(f"--fps {args.fps}: the frame cap must be >= 1 (e.g. --fps 240)")
        os.environ["UXLAB_FPS"] = str(args.fps)
    if args.terminal and not args.glass:
        raise CliError("--terminal opens a window to check at the glass: add --glass")
    from uxlab.study import load_study

    study = load_study(args.study)
    if args.glass and args.terminal:
        from uxlab.glass.emulators import GlassRunError, check_in_new_window

        try:
            result = check_in_new_window(args.terminal, args.study, fps=args.fps)
        except GlassRunError as exc:
            print(f"glass: {exc}; checking on screen here instead.")
            return _check_here(study, args, glass=False)
        return _print(result)
    return _check_here(study, args, glass=args.glass)


def _check_here(study: Study, args: argparse.Namespace, glass: bool) -> int:
    from uxlab.environment import multiplexer
    from uxlab.tui import frame_cap

    note = None
    if glass:
        from uxlab.tui.glass_session import GlassUnavailable, check_glass

        try:
            check_glass()
        except GlassUnavailable as exc:
            note = f"{exc}; measured on screen instead"
            glass = False
    if args.off_screen or not (sys.stdout.isatty() and sys.stdin.isatty()):
        from uxlab.timing_check import check_timing

        if not args.off_screen:
            print("no terminal to play on: the check plays off-screen (hand-off only)")
        check = check_timing(study, frame_cap_fps=frame_cap(), multiplexer=multiplexer())
    else:
        from uxlab.tui.app_runner import run_app
        from uxlab.tui.calibration import CalibrationApp

        app = CalibrationApp(
            study, glass=glass, frame_cap_fps=frame_cap(), multiplexer=multiplexer()
        )
        played = run_app(app)
        if played is None:  # quit before it ended
            print("the timing check was stopped before it ended")
            return 1
        check = played
    if note is not None:
        check.glass_note = note
    result = _result(check)
    if args.result_json:
        with open(args.result_json, "w", encoding="utf-8") as out:
            json.dump(result, out)
    return _print(result)


def _result(check: TimingCheck) -> dict[str, Any]:
    return {
        "summary": check.summary(),
        "tolerance": check.tolerance.describe(),
        "warning": check.warning(),
        "cautions": list(check.cautions),
        "glass_note": check.glass_note,
        "check": check.to_environment(),
    }


def _print(result: dict[str, Any]) -> int:
    if result.get("glass_note"):
        print(f"glass: {result['glass_note']}")
    print(result["summary"])
    print(f"tolerance: {result['tolerance']}")
    if result["warning"] is None:
        print("ok: this machine keeps the study's timing right now.")
        for caution in result["cautions"]:
            print(f"note: {caution}; other work may still delay some trials (they are marked)")
        return 0
    print(result["warning"])
    return 1
