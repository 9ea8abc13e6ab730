"""`uxlab run STUDY.toml [--participant ID] [--db PATH] [--pilot] [--fps N] [--seed N]`.

Runs one participant's session of a study in the terminal (see `uxlab/tui/study_app.py`),
stores it in the study's SQLite database (`results/<study id>.sqlite` by default) and says
at exit where the data is and how to export it. The same command with the same participant
id resumes an interrupted session. Before the first trial it plays a short test schedule
off-screen (`uxlab check-timing`) and warns the researcher when this machine cannot keep
the study's shortest gaps; at exit it says how many trials were shown outside the
study's timing tolerance (`[timing]`).
"""

from __future__ import annotations

import argparse
import os
from pathlib import Path
from typing import Any

from uxlab.cli.options import add_db_option, db_name


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "run",
        help="run a study for one participant in the terminal",
        description="Run a study for one participant in the terminal: participant id, consent, "
        "instructions, practice, trials with breaks, questions, end. Every answer is stored "
        "before the next screen; Ctrl+Q twice quits and the same command resumes.",
    )
    parser.add_argument("study", metavar="STUDY.toml", help="the study file")
    parser.add_argument(
        "--participant", metavar="ID", help="pseudonymous participant id (default: asked)"
    )
    add_db_option(parser)
    parser.add_argument(
        "--pilot", action="store_true", help="mark the session as a pilot (kept apart in analysis)"
    )
    parser.add_argument(
        "--fps", type=int, metavar="N", help="terminal frame cap (default 240, or UXLAB_FPS)"
    )
    parser.add_argument(
        "--seed", type=int, metavar="N", help="seed of the trial list (default: the study's)"
    )
    parser.add_argument(
        "--nice",
        type=int,
        metavar="N",
        help="raise the runner's scheduling priority by N (niceness -N; needs root or "
        "CAP_SYS_NICE), so other programs delay chunks less",
    )
    parser.add_argument(
        "--no-timing-check",
        action="store_true",
        help="skip the timing check before the first trial (see `uxlab check-timing`)",
    )
    parser.add_argument(
        "--off-screen-check",
        action="store_true",
        help="make the timing check off-screen (hand-off only), without the test stream on "
        "the screen: what the SSH and browser hosts do, whose participants sit at the screen",
    )
    parser.add_argument(
        "--glass",
        action="store_true",
        help="also time each chunk as the terminal window shows it (an X display: xterm, "
        "alacritty, kitty); stored with the trial. A one-cell marker flickers in the "
        "bottom-right corner",
    )
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.cli import CliError

    if args.fps is not None:
        if args.fps < 1:
            raise CliError(f"--fps {args.fps}: the frame cap must be >= 1 (e.g. --fps 240)")
        os.environ["UXLAB_FPS"] = str(args.fps)  # read when uxlab.tui is first imported
    if args.seed is not None and args.seed < 0:
        raise CliError(f"--seed {args.seed}: must be a whole number >= 0")

    from uxlab.cli.app_runner import run_app
    from uxlab.cli.hints import command
    from uxlab.environment import collect_environment, timing_warnings
    from uxlab.session import shortest_gap_ms
    from uxlab.store import Store, check_participant_id, default_db_path
    from uxlab.study import load_study
    from uxlab.tui import frame_cap
    from uxlab.tui.study_app import StudyApp

    study = load_study(args.study)
    if args.participant is not None:
        check_participant_id(args.participant)
    if args.fps is not None and frame_cap() != args.fps:
        raise CliError(f"--fps {args.fps}: Textual was already loaded with {frame_cap()} fps")
    db = args.db if args.db is not None else default_db_path(study)
    if args.nice:
        from uxlab.machine import raise_priority

        try:
            raise_priority(args.nice)
        except (PermissionError, ValueError) as exc:
            raise CliError(
                f"--nice {args.nice}: cannot raise the priority ({exc}); run it as "
                f"`sudo nice -n -{abs(args.nice)} {command('run', args.study)}` or leave "
                "--nice out"
            ) from None
    if args.glass:
        from uxlab.tui.glass_session import GlassUnavailable, check_glass

        try:
            check_glass()
        except GlassUnavailable as exc:
            raise CliError(f"--glass: {exc}; leave --glass out to run without it") from None
    env = collect_environment(frame_cap())
    warnings = timing_warnings(env, shortest_gap_ms(study))
    on_screen_check = not (args.no_timing_check or args.off_screen_check)
    if args.off_screen_check and not args.no_timing_check:  # before the app: hand-off only
        from uxlab.timing_check import check_timing

        check = check_timing(study, frame_cap_fps=frame_cap(), multiplexer=env["multiplexer"])
        env["timing_check"] = check.to_environment()
        if check.warning() is not None:
            warnings.append(check.warning())
    store = Store.open(db, busy_timeout_s=5.0)  # then the participant sees why, and r retries
    app = None
    try:
        app = StudyApp(
            study,
            store,
            participant=args.participant,
            seed=args.seed,
            pilot=args.pilot,
            environment=env,
            warnings=warnings,
            # on screen, in the study's own view, before the first screen: the researcher
            # sees what it finds
            timing_check=on_screen_check,
            glass=args.glass,
        )
        result = run_app(app)
    finally:  # a server away (quit on the reconnecting screen): close without waiting for it
        store.close(server_away=app is not None and app.store_away)
    try:
        status = report(result, db, args)
        if app.session is not None and app.session.fidelity_note():
            print(wrapped("timing:  ", app.session.fidelity_note()))
        return status
    except OSError:  # the terminal is gone (closed window, SIGHUP): the data is stored
        from uxlab.cli import EXIT_PARTIAL

        return EXIT_PARTIAL  # the session ended before the end of the study


def wrapped(label: str, prose: str, width: int | None = None) -> str:
    """`label` + `prose` folded to the terminal's width (80 by default) under the label, so a
    long note is not cut mid-word by the terminal; commands are never folded."""
    import shutil
    import textwrap

    width = width or shutil.get_terminal_size((80, 24)).columns
    return textwrap.fill(
        prose,
        width=max(40, width - 1),
        initial_indent=label,
        subsequent_indent=" " * len(label),
        break_long_words=False,
        break_on_hyphens=False,
    )


def report(result: Any, db: Path, args: argparse.Namespace) -> int:
    """Print where the data is and what to do next; returns the exit status.

    0 when the participant completed the study or declined consent; 1 (done in part) when
    the session ended before the end of the study, with the command that resumes it.
    """
    from uxlab.cli import EXIT_OK, EXIT_PARTIAL
    from uxlab.cli.hints import after_database, command

    if result is None or result.outcome == "quit":
        start = ["run", args.study] + (["--db", db] if args.db is not None else [])
        print("uxlab run: quit before a session began; nothing was stored.")
        print(f"start:   {command(*start)}")
        for note in getattr(result, "notes", []):
            print(f"note:    {note}")
        return EXIT_PARTIAL
    if result.outcome == "declined":
        print(f"uxlab run: consent declined; only the refusal was counted in {db_name(db)}")
        return EXIT_OK
    n = len(result.committed)
    stored = f"{n} trial{'s' if n != 1 else ''} stored this time"
    lines = []
    if result.outcome == "completed":
        lines.append(f"uxlab run: {result.participant} completed the study; {stored}.")
    else:
        again = ["run", args.study, "--participant", result.participant]
        if args.db is not None:
            again += ["--db", db]
        why = "" if getattr(result, "quit_by", None) in (None, "key") else f" ({result.quit_by})"
        lines.append(f"uxlab run: session of {result.participant} interrupted{why}; {stored}.")
        lines.append(f"resume:  {command(*again)}")
    lines.append(f"data:    {db_name(db)}")
    lines += after_database(db)
    lines += [f"note:    {note}" for note in getattr(result, "notes", [])]
    print("\n".join(lines))
    return EXIT_OK if result.outcome == "completed" else EXIT_PARTIAL
