"""`uxlab serve`: an OpenAI/Anthropic-compatible server answering with shaped recordings
(`uxlab.live.serve`), a study participant's trials (`--study`) or a real model re-timed
(`--upstream`)."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from uxlab.cli.profile_options import add_profile_arguments
from uxlab.cli.serve_options import (
    PROFILE_OPTIONS,
    add_guard_arguments,
    add_study_arguments,
    add_upstream_arguments,
)

if TYPE_CHECKING:
    from uxlab.live.serve.config import ServeConfig


def register(subparsers: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    p = subparsers.add_parser(
        "serve",
        help="serve a corpus as an OpenAI/Anthropic-compatible streaming API",
        description="Answer /v1/chat/completions, /v1/messages and /v1/models with "
        "recordings from CORPUS played on a shaped schedule (request i uses seed SEED+i), "
        "or with a study participant's trials in order (--study, --participant), so any "
        "chat UI can be studied under controlled TTFT and jitter.",
    )
    p.add_argument(
        "corpus",
        metavar="CORPUS",
        nargs="?",
        help="a replay file or a folder of them (not with --study)",
    )
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any free)")
    p.add_argument(
        "--token",
        help="require this bearer token (Authorization: Bearer T or "
        "x-api-key: T); default: no token",
    )
    add_study_arguments(p)
    add_guard_arguments(p)
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="N server processes sharing the port, one per core for many concurrent streams "
        "(default 1; not with --study, whose trial counter is one participant's)",
    )
    p.add_argument("--quiet", action="store_true", help="no line per request on stderr")
    add_upstream_arguments(p)
    add_profile_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from uxlab.cli import CliError
    from uxlab.live.serve_run import Listening, serve
    from uxlab.live.serve_setup import guard_settings

    if args.workers < 1:
        raise CliError(f"--workers {args.workers}: must be >= 1 (e.g. 2, one per core)")
    if args.workers > 1 and args.study:
        raise CliError(
            f"--workers {args.workers} with --study: a study plays one participant's trials "
            "in order from one counter, which one process keeps; serve it with --workers 1"
        )
    config, what = served_config(args)
    config.cors_origins = list(args.cors)
    config.guard = guard_settings(
        args.host,
        allow_host=args.allow_host,
        cors=args.cors,
        max_body_mb=args.max_body_mb,
        header_timeout_s=args.header_timeout_s,
        max_connections=args.max_connections,
        max_slow_per_client=args.max_slow_per_client,
    )
    listening = Listening(
        args.host,
        args.port,
        token=args.token,
        workers=args.workers,
        max_connections=args.max_connections,
        header_timeout_s=args.header_timeout_s,
        max_slow_per_client=args.max_slow_per_client,
        quiet=args.quiet,
    )
    return serve(config, listening, what)


def served_config(args: argparse.Namespace) -> tuple[ServeConfig, str]:
    """What the server plays, from the options: a real model (`--upstream`), a study's
    trials (`--study`) or a corpus; and the banner's words for it."""
    from uxlab.cli import CliError
    from uxlab.cli.profile_options import profile_from_args
    from uxlab.live.serve_setup import corpus_config, upstream_config

    if args.upstream:
        if args.corpus or args.study:
            raise CliError("--upstream answers from the upstream: give no CORPUS or --study")
        return upstream_config(
            args.upstream,
            api=args.upstream_api,
            profile=profile_from_args(args),
            named_profiles=args.named_profile,
            key_env=args.upstream_key_env,
            record_dir=args.record,
            seed=args.seed,
            token=args.token,
        )
    if args.study:
        from uxlab.study.serve_picker import study_serve_config

        if args.corpus:
            raise CliError("give CORPUS or --study, not both (the study names its corpus)")
        given = [f"--{o.replace('_', '-')}" for o in PROFILE_OPTIONS if getattr(args, o)]
        if given:
            raise CliError(
                f"{', '.join(given)}: with --study the profile comes from the "
                "study file ([profile] and its factors)"
            )
        if not args.participant:
            raise CliError("--study needs --participant ID (whose trial list to play)")
        return study_serve_config(args.study, args.participant, args.participant_number, args.token)
    if not args.corpus:
        raise CliError("give a CORPUS (a replay file or folder) or --study FILE")
    return corpus_config(args.corpus, profile_from_args(args), args.seed, args.token)
