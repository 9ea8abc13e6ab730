"""`uxlab check-timing STUDY.toml [--fps N]`: can this machine keep the study's timing now?

Plays a short test schedule at the study's shortest gap off-screen (`uxlab.timing_check`),
the same check `uxlab run` makes before the first trial, and says what to do when the
machine is too busy. Exit status 0 when it keeps the timing, 1 when it does not.
"""

from __future__ import annotations

import argparse
import os
from typing import Any


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "check-timing",
        help="check that this machine can keep a study's shortest gaps (before recruiting)",
        description="Play a short test schedule at the study's shortest gap off-screen, "
        "measure how late chunks are handed out, read the load and CPU steal, and say "
        "whether this machine can keep the study's timing tolerance ([timing] "
        "max_late_p99_ms) right now. `uxlab run` makes the same check before the first trial.",
    )
    parser.add_argument("study", metavar="STUDY.toml", help="the study file")
    parser.add_argument(
        "--fps", type=int, metavar="N", help="terminal frame cap (default 240, or UXLAB_FPS)"
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.cli import CliError

    if args.fps is not None:
        if args.fps < 1:
            raise CliError(f"--fps {args.fps}: the frame cap must be >= 1 (e.g. --fps 240)")
        os.environ["UXLAB_FPS"] = str(args.fps)
    from uxlab.environment import multiplexer
    from uxlab.study import load_study
    from uxlab.timing_check import check_timing
    from uxlab.tui import frame_cap

    study = load_study(args.study)
    check = check_timing(study, frame_cap_fps=frame_cap(), multiplexer=multiplexer())
    print(check.summary())
    print(f"tolerance: {check.tolerance.describe()}")
    warning = check.warning()
    if warning is None:
        print("ok: this machine keeps the study's timing right now.")
        for caution in check.cautions:
            print(f"note: {caution}; other work may still delay some trials (they are marked)")
        return 0
    print(warning)
    return 1
