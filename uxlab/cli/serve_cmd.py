"""`uxlab serve`: an OpenAI/Anthropic-compatible server answering with shaped recordings."""

from __future__ import annotations

import argparse
import sys


def register(subparsers: argparse._SubParsersAction) -> None:
    from uxlab.shaping import add_profile_arguments

    p = subparsers.add_parser(
        "serve",
        help="serve a corpus as an OpenAI/Anthropic-compatible streaming API",
        description="Answer /v1/chat/completions, /v1/messages and /v1/models with "
        "recordings from CORPUS played on a shaped schedule (request i uses seed SEED+i), "
        "so any chat UI can be studied under controlled TTFT and jitter.",
    )
    p.add_argument("corpus", metavar="CORPUS", help="a replay file or a folder of them")
    p.add_argument(
        "--host", default="127.0.0.1", help="address to bind (default 127.0.0.1: this machine only)"
    )
    p.add_argument("--port", type=int, default=8000, help="port (default 8000; 0 = any free)")
    p.add_argument(
        "--token",
        help="require this bearer token (Authorization: Bearer T or "
        "x-api-key: T); default: no token",
    )
    p.add_argument("--study", metavar="FILE", help="(not available yet) serve a study's conditions")
    add_profile_arguments(p)
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    import socket

    import uvicorn

    from uxlab.cli import CliError
    from uxlab.live.serve import ServeConfig, build_app
    from uxlab.player import PlaybackError
    from uxlab.shaping import Profile, shape
    from uxlab.streams import load_corpus

    if args.study:
        raise CliError(
            "--study is not available yet: shape with profile options instead "
            "(e.g. --ttft 500 --itl constant:30)"
        )
    profile = Profile.from_args(args)
    corpus = load_corpus(args.corpus)
    for err in corpus.errors:
        print(f"skipped: {err}", file=sys.stderr)
    if not corpus.recordings:
        raise CliError(f"{args.corpus}: no playable replay files")
    for rec in corpus.recordings:  # fail now, not on the first request
        schedule = shape(rec, profile, seed=args.seed)
        untimed = [c for c in schedule.chunks if c.t_ms is None]
        if untimed:
            raise PlaybackError(
                f"{rec.id}: {len(untimed)} chunk(s) have no time; give an "
                "--itl and --ttft to serve text-only recordings"
            )
    config = ServeConfig(
        recordings=corpus.recordings,
        shape=lambda rec, seed: shape(rec, profile, seed=seed),
        seed=args.seed,
        token=args.token,
    )
    app = build_app(config)
    with socket.socket() as probe:
        try:
            probe.bind((args.host, args.port))
        except OSError as exc:
            raise CliError(
                f"--port {args.port}: cannot listen on {args.host} ({exc.strerror}); "
                "pick another port"
            ) from None
        port = probe.getsockname()[1]
    print(
        f"serving {len(corpus.recordings)} recording(s) from {args.corpus} on "
        f"http://{args.host}:{port}/v1 (profile: {profile.describe()}; seed {args.seed}+i"
        f"{'; token required' if args.token else ''}). Ctrl-C stops.",
        file=sys.stderr,
    )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"warning: binding {args.host} exposes the server beyond this machine", file=sys.stderr
        )
    uvicorn.run(app, host=args.host, port=port, log_level="warning", access_log=False)
    return 0
