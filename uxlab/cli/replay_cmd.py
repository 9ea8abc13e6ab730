"""`uxlab replay FILE|DIR [profile options] [--seed N] [--fps N]`: the free-play chat client."""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from uxlab.shaping import Profile


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    parser = subparsers.add_parser(
        "replay",
        help="play recordings, shaped, in a terminal chat client",
        description="Play a recording (or cycle a folder of them) in a terminal chat client, "
        "re-timed by the profile options, and compare the measured TTFT/ITL on screen with the "
        "requested ones. Keys: q quit, r replay, n next, Esc stop, / prompt, s settings, "
        "t thinking/tools.",
    )
    parser.add_argument("path", metavar="FILE|DIR", help="a replay file or a folder of them")
    parser.add_argument(
        "--fps",
        type=int,
        metavar="N",
        help="terminal frame cap (default 240, or UXLAB_FPS); recorded with every play",
    )
    parser.add_argument(
        "--truncated", action="store_true", help="also load streams without an end event"
    )
    parser.add_argument(
        "--glass",
        action="store_true",
        help="time each chunk as the terminal window shows it (an X display: xterm, alacritty, "
        "kitty); a one-cell marker flickers in the bottom-right corner",
    )
    parser.add_argument("--bench-json", type=Path, help=argparse.SUPPRESS)
    from uxlab.cli.profile_options import add_profile_arguments

    add_profile_arguments(parser)
    parser.set_defaults(func=run)


_PROFILE_OPTIONS = {
    "ttft": "ttft",
    "headers_ms": "headers_ms",
    "itl": "itl",
    "rho": "rho",
    "chunk": "chunk",
    "error_at": "error_at",
}


def settings_text(args: argparse.Namespace) -> str:
    """The profile options as the in-app settings line (`ttft=800 itl=constant:30`)."""
    parts = [
        f"{key}={getattr(args, attr)}"
        for key, attr in _PROFILE_OPTIONS.items()
        if getattr(args, attr, None) is not None
    ]
    parts += [f"stalls={s}" for s in getattr(args, "stalls", None) or []]
    return " ".join(parts)


def parse_settings(text: str) -> Profile:
    """`key=value ...` (keys of a [profile] table) -> Profile; ProfileError names the key."""
    from uxlab.cli import CliError
    from uxlab.shaping import Profile

    table: dict[str, Any] = {}
    for part in shlex.split(text):
        key, sep, value = part.partition("=")
        if not sep or not key:
            raise CliError(f"settings: {part!r}: expected key=value, e.g. ttft=800 itl=constant:30")
        if key == "stalls":
            table.setdefault("stalls", []).append(value)
        else:
            table[key] = value
    return Profile.from_table(table, where="settings")


def run(args: argparse.Namespace) -> int:
    from uxlab.cli import CliError

    if args.fps is not None:
        if args.fps < 1:
            raise CliError(f"--fps {args.fps}: the frame cap must be >= 1 (e.g. --fps 240)")
        os.environ["UXLAB_FPS"] = str(args.fps)  # read when uxlab.tui is first imported

    from uxlab.streams.corpus import load_corpus
    from uxlab.tui import frame_cap
    from uxlab.tui.replay_app import ReplayApp

    if args.glass:
        from uxlab.tui.glass_session import GlassUnavailable, check_glass

        try:
            check_glass()
        except GlassUnavailable as exc:
            raise CliError(str(exc)) from exc

    corpus = load_corpus(args.path, allow_truncated=args.truncated)
    if not corpus.recordings:
        if corpus.errors:
            corpus.raise_if_errors()
        raise CliError(f"{args.path}: no replay files (*.jsonl) found")
    for error in corpus.errors:
        print(f"uxlab replay: skipped {error}")

    from uxlab.cli.profile_options import profile_from_args
    from uxlab.shaping import shape

    app = ReplayApp(
        corpus.recordings,
        profile=profile_from_args(args),
        seed=args.seed,
        shaper=shape,
        parse_settings=parse_settings,
        settings_text=settings_text(args),
        bench_json=args.bench_json,
        glass=args.glass,
    )
    if args.fps is not None and frame_cap() != args.fps:
        raise CliError(f"--fps {args.fps}: Textual was already loaded with {frame_cap()} fps")
    from uxlab.cli import EXIT_PARTIAL
    from uxlab.tui.app_runner import run_app

    code = run_app(app) or 0
    return code or (EXIT_PARTIAL if corpus.errors else 0)  # 1: some files were skipped
