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
from typing import TYPE_CHECKING

from uxlab.cli.options import add_db_option, add_seed_option, db_name

if TYPE_CHECKING:
    from uxlab.tui.run_result import RunResult
    from uxlab.tui.terminal_run import TimingCheck


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
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
    add_seed_option(parser, "seed of the trial list (default: the study's)", None, "N")
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

    from uxlab.store import check_participant_id, default_db_path
    from uxlab.study import load_study
    from uxlab.tui import frame_cap
    from uxlab.tui.terminal_run import run_in_terminal

    study = load_study(args.study)
    if args.participant is not None:
        check_participant_id(args.participant)
    if args.fps is not None and frame_cap() != args.fps:
        raise CliError(f"--fps {args.fps}: Textual was already loaded with {frame_cap()} fps")
    db = args.db if args.db is not None else default_db_path(study)
    check: TimingCheck | None = (
        "none" if args.no_timing_check else "off-screen" if args.off_screen_check else None
    )
    done = run_in_terminal(
        study,
        db,
        participant=args.participant,
        seed=args.seed,
        pilot=args.pilot,
        nice=args.nice,
        glass=args.glass,
        timing_check=check or "on-screen",
        resume_words=(args.study,),
    )
    from uxlab.wrapping import wrapped

    try:
        status = report(done.result, db, args)
        if done.fidelity_note:
            print(wrapped("timing:  ", done.fidelity_note))
        return status
    except OSError:  # the terminal is gone (closed window, SIGHUP): the data is stored
        from uxlab.cli import EXIT_PARTIAL

        return EXIT_PARTIAL  # the session ended before the end of the study


def report(result: RunResult | None, db: Path, args: argparse.Namespace) -> int:
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
