"""`uxlab serve`: an OpenAI/Anthropic-compatible server answering with shaped recordings."""

from __future__ import annotations

import argparse
import functools
import gc
import os
import socket
import sys
from collections.abc import Callable

_PROFILE_OPTIONS = ("ttft", "headers_ms", "itl", "rho", "chunk", "stalls", "error_at")


def register(subparsers: argparse._SubParsersAction) -> None:
    from uxlab.cli.profile_options import add_profile_arguments

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
    _add_study_arguments(p)
    _add_guard_arguments(p)
    p.add_argument(
        "--workers",
        type=int,
        default=1,
        metavar="N",
        help="N server processes sharing the port, one per core for many concurrent streams "
        "(default 1; not with --study, whose trial counter is one participant's)",
    )
    p.add_argument("--quiet", action="store_true", help="no line per request on stderr")
    _add_upstream_arguments(p)
    add_profile_arguments(p)
    p.set_defaults(func=run)


def _add_study_arguments(p: argparse.ArgumentParser) -> None:
    """Serving a study participant's trial list instead of a corpus."""
    p.add_argument(
        "--study",
        metavar="FILE",
        help="serve a study: request i plays trial i "
        "of --participant's trial list (profile and seeds from the study file)",
    )
    p.add_argument(
        "--participant",
        metavar="ID",
        help="pseudonymous participant id whose trial list --study plays",
    )
    p.add_argument(
        "--participant-number",
        type=int,
        default=1,
        metavar="N",
        help="the participant's number (Latin-square row; default 1)",
    )


def _add_guard_arguments(p: argparse.ArgumentParser) -> None:
    """Who may call the server and how much it takes (`uxlab.live.serve_guard`)."""
    p.add_argument(
        "--cors",
        action="append",
        default=[],
        metavar="ORIGIN",
        help="let a web page from ORIGIN call the server directly (CORS; repeatable; * for "
        "any); requests from other web pages (an Origin header) are refused with 403",
    )
    p.add_argument(
        "--allow-host",
        action="append",
        default=[],
        metavar="NAME",
        help="also accept requests whose Host header names NAME (repeatable; * for any); "
        "default: loopback names and the address bound",
    )
    p.add_argument(
        "--max-body-mb",
        type=float,
        default=4.0,
        metavar="MB",
        help="largest request body accepted (default 4; larger: HTTP 413)",
    )
    p.add_argument(
        "--max-connections",
        type=int,
        default=256,
        metavar="N",
        help="connections served at once (default 256; beyond: HTTP 503)",
    )
    p.add_argument(
        "--header-timeout-s",
        type=float,
        default=10.0,
        metavar="S",
        help="close a connection that sends no complete request head within S seconds (default 10)",
    )
    p.add_argument(
        "--max-slow-per-client",
        type=int,
        default=16,
        metavar="N",
        help="connections one client address may keep sending its request slowly (still "
        "sending 1 s after it began; default 16): beyond, they are closed, so one machine "
        "trickling bodies cannot hold --max-connections; requests sent at network speed, "
        "even hundreds at once, never count",
    )


def _add_upstream_arguments(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group(
        "study your own product (--upstream)",
        "Forward each request to a real model and re-time its stream onto the profile "
        "(give --ttft and --itl). A model name may pick a profile: MODEL@NAME "
        "(--named-profile) or MODEL@ttft=1500;itl=constant:60.",
    )
    g.add_argument("--upstream", metavar="URL", help="the real endpoint's base URL (…/v1)")
    g.add_argument(
        "--upstream-api",
        choices=("openai", "anthropic"),
        default="openai",
        help="the upstream's wire (default openai: Chat Completions)",
    )
    g.add_argument(
        "--upstream-key-env",
        metavar="VAR",
        help="environment variable holding the upstream key (default OPENAI_API_KEY or "
        "ANTHROPIC_API_KEY; when unset, the client's own key header is passed on)",
    )
    g.add_argument(
        "--named-profile",
        action="append",
        default=[],
        metavar="NAME:KEY=VALUE;...",
        help="a profile clients pick with MODEL@NAME, over the base profile (repeatable), "
        "e.g. 'slow:ttft=2500;itl=constant:80'",
    )
    g.add_argument(
        "--record",
        metavar="DIR",
        help="save each exchange: the upstream stream as received and the stream as served",
    )


def _upstream_config(args: argparse.Namespace):  # -> (ServeConfig, str)
    from pathlib import Path

    from uxlab.cli import CliError
    from uxlab.cli.profile_options import profile_from_args
    from uxlab.live.record import _origin
    from uxlab.live.serve import ServeConfig
    from uxlab.live.upstream import (
        UpstreamConfig,
        UpstreamProxy,
        default_key_env,
        parse_named_profile,
    )

    if args.corpus or args.study:
        raise CliError("--upstream answers from the upstream: give no CORPUS or --study")
    profile = profile_from_args(args)
    named = dict(parse_named_profile(spec, profile) for spec in args.named_profile)
    upstream = UpstreamConfig(
        url=args.upstream,
        api=args.upstream_api,
        profile=profile,
        named=named,
        key_env=args.upstream_key_env,
        record_dir=Path(args.record) if args.record else None,
        seed=args.seed,
    )
    proxy = UpstreamProxy(upstream, server_token=args.token)
    config = ServeConfig(
        recordings=[], shape=lambda r, s: r, seed=args.seed, token=args.token, upstream=proxy
    )
    names = "".join(f"; @{n}: {p.describe()}" for n, p in named.items())
    key_env = args.upstream_key_env or default_key_env(args.upstream_api)
    if args.upstream_key_env and not os.environ.get(args.upstream_key_env):
        raise CliError(
            f"--upstream-key-env {args.upstream_key_env}: that variable is not set; "
            "export it, or leave the option out to pass on each client's own key"
        )
    fallback = (
        "no key if unset (the client's header holds --token)"
        if args.token
        else ("else the client's header")
    )
    what = (
        f"{args.upstream_api} upstream {_origin(args.upstream)} re-timed "
        f"(profile: {profile.describe()}"
        f"{names}; key from ${key_env}, {fallback}"
        f"{'; recording to ' + args.record if args.record else ''})"
    )
    return config, what


def _config(args: argparse.Namespace):  # -> ServeConfig
    from uxlab.cli import CliError
    from uxlab.cli.profile_options import profile_from_args
    from uxlab.live.serve import ServeConfig
    from uxlab.player import PlaybackError
    from uxlab.shaping import shape
    from uxlab.streams import load_corpus

    if getattr(args, "upstream", None):
        return _upstream_config(args)
    if args.study:
        from uxlab.study import design_trials, load_study
        from uxlab.study.serve_picker import study_picker

        if args.corpus:
            raise CliError("give CORPUS or --study, not both (the study names its corpus)")
        given = [f"--{o.replace('_', '-')}" for o in _PROFILE_OPTIONS if getattr(args, o)]
        if given:
            raise CliError(
                f"{', '.join(given)}: with --study the profile comes from the "
                "study file ([profile] and its factors)"
            )
        if not args.participant:
            raise CliError("--study needs --participant ID (whose trial list to play)")
        study = load_study(args.study)
        trials = design_trials(study, args.participant, args.participant_number)
        config = ServeConfig(
            recordings=list(study.corpus.recordings),
            shape=lambda r, s: r,
            token=args.token,
            picker=study_picker(study, trials),
        )
        what = (
            f"study {study.id!r}: {len(trials)} trials of participant number "
            f"{args.participant_number}, in order"
        )
        return config, what
    if not args.corpus:
        raise CliError("give a CORPUS (a replay file or folder) or --study FILE")
    profile = profile_from_args(args)
    corpus = load_corpus(args.corpus)
    for err in corpus.errors:
        print(f"skipped: {err}", file=sys.stderr)
    if not corpus.recordings:
        raise CliError(f"{args.corpus}: no playable replay files")
    for rec in corpus.recordings:  # fail now, not on the first request
        untimed = [c for c in shape(rec, profile, seed=args.seed).chunks if c.t_ms is None]
        if untimed:
            raise PlaybackError(
                f"{rec.id}: {len(untimed)} chunk(s) have no time; give "
                "--ttft and --itl to serve text-only recordings"
            )
    config = ServeConfig(
        recordings=corpus.recordings,
        shape=lambda rec, seed: shape(rec, profile, seed=seed),
        seed=args.seed,
        token=args.token,
    )
    what = (
        f"{len(corpus.recordings)} recording(s) from {args.corpus} (profile: "
        f"{profile.describe()}; request i uses seed {args.seed}+i)"
    )
    return config, what


def _log_exchange(exchange) -> None:
    """One line per proxied exchange: how it ended and how late the upstream was."""
    v = exchange.violations
    late = (
        f"upstream late for {v['violations_n']} event(s), max {v['violation_max_ms']:.0f} ms "
        "(the schedule waited)"
        if v["violations_n"]
        else "on schedule"
    )
    how = exchange.message or f"HTTP {exchange.status}"
    saved = f"; saved {', '.join(p.name for p in exchange.saved)}" if exchange.saved else ""
    print(
        f"request {exchange.request_index} done: {exchange.model} @{exchange.profile_name}: "
        f"{late}; {how}{saved}",
        file=sys.stderr,
        flush=True,
    )


KEEP_ALIVE_S = 5.0
"""An idle keep-alive connection is closed after this time."""


def uvicorn_config(
    app: object,
    max_connections: int,
    header_timeout_s: float,
    max_slow_per_client: int = 16,
):
    """uvicorn's settings for `uxlab serve`: the connection cap (503 beyond it), the
    keep-alive timeout and the request-head timeout (`serve_guard.guarded_h11_protocol`)."""
    import uvicorn

    from uxlab.live.serve_guard import guarded_h11_protocol

    return uvicorn.Config(
        app,
        log_level="warning",
        access_log=False,
        lifespan="off",
        ws="none",  # no WebSocket routes: nothing to import (wsproto took ~100 ms at start)
        loop="asyncio",  # the loop the timing was measured on, not whichever is installed
        http=guarded_h11_protocol(header_timeout_s, max_slow_per_client),
        limit_concurrency=max_connections,
        timeout_keep_alive=KEEP_ALIVE_S,
    )


def guard_settings(args: argparse.Namespace):  # -> GuardSettings
    """Allowed Host names and the body limit from the options (origins: `--cors`)."""
    from uxlab.cli import CliError
    from uxlab.live.serve_guard import LOOPBACK_HOSTS, GuardSettings

    if not args.max_body_mb > 0:
        raise CliError(f"--max-body-mb {args.max_body_mb:g}: must be > 0 (e.g. 4)")
    if not args.header_timeout_s > 0:
        raise CliError(f"--header-timeout-s {args.header_timeout_s:g}: must be > 0 (e.g. 10)")
    if args.max_connections < 1:
        raise CliError(f"--max-connections {args.max_connections}: must be >= 1 (e.g. 256)")
    if args.max_slow_per_client < 1:
        raise CliError(f"--max-slow-per-client {args.max_slow_per_client}: must be >= 1 (e.g. 16)")
    hosts = set(LOOPBACK_HOSTS) | {h.strip().lower() for h in args.allow_host}
    if args.host not in ("0.0.0.0", "::", ""):
        hosts.add(f"[{args.host.lower()}]" if ":" in args.host else args.host.lower())
    return GuardSettings(
        allowed_hosts=hosts,
        cors_origins=list(args.cors),
        max_body_bytes=int(args.max_body_mb * 1024 * 1024),
    )


def listen_socket(host: str, port: int, reuse_port: bool = False) -> socket.socket:
    """A TCP socket bound to (host, port) whose connections send each write at once.

    Created with `IPPROTO_TCP` (asyncio sets `TCP_NODELAY` on accepted connections only
    for such sockets) and with `TCP_NODELAY` itself, which accepted connections inherit:
    without it Nagle's algorithm holds a chunk written less than one delayed ACK (~40 ms)
    after the response headers or the previous chunk, so a short TTFT or a fast stream
    arrives up to 40 ms late. `reuse_port`: `SO_REUSEPORT`, for `--workers` (each worker
    listens on its own socket on the same port).
    """
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        if reuse_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEPORT, 1)
        sock.bind((host, port))
    except OSError:
        sock.close()
        raise
    return sock


def run(args: argparse.Namespace) -> int:
    from uxlab.cli import CliError
    from uxlab.live.serve import GIL_SWITCH_S, build_app
    from uxlab.live.serve_guard import raise_open_files_limit

    if args.workers < 1:
        raise CliError(f"--workers {args.workers}: must be >= 1 (e.g. 2, one per core)")
    if args.workers > 1 and args.study:
        raise CliError(
            f"--workers {args.workers} with --study: a study plays one participant's trials "
            "in order from one counter, which one process keeps; serve it with --workers 1"
        )
    config, what = _config(args)
    config.cors_origins = list(args.cors)
    config.guard = guard_settings(args)
    if not args.quiet:
        config.on_served = functools.partial(_log_request, many_workers=args.workers > 1)
        if config.upstream is not None:
            config.upstream.config.on_done = _log_exchange
    app = build_app(config)
    sys.setswitchinterval(GIL_SWITCH_S)  # the loop waits less on a shaping thread
    _warm_up(config)
    gc.collect()
    gc.freeze()  # start-up objects out of the collector: no full collection mid-stream
    socks = _listen(args)
    raise_open_files_limit()  # many connections: refused by the cap, not by EMFILE
    server = _prepare(args, config, app, socks)
    _banner(args, what, socks[0].getsockname()[1])  # listening, uvicorn loaded: no race
    return server()


def _log_request(served, many_workers: bool) -> None:  # served: uxlab.live.serve.Served
    """One line on stderr per request: what was served, with which seed."""
    labels = "".join(f" {k}={v}" for k, v in served.labels.items())
    cut = served.schedule.header.extra.get("served_max_tokens")
    cut_note = f", cut at max_tokens {cut}" if cut is not None else ""
    worker = f" [pid {os.getpid()}]" if many_workers else ""
    print(
        f"request {served.request_index} ({served.wire}){worker}: {served.replay_id} "
        f"seed {served.seed}{labels}{cut_note}",
        file=sys.stderr,
        flush=True,
    )


def _warm_up(config) -> None:  # config: ServeConfig
    """Pay the first request's costs before anyone can send one; in upstream mode on a
    stand-in answer (a warm-up must not reach the upstream)."""
    from dataclasses import replace

    from uxlab.live.serve import warm_up

    if config.upstream is None:
        warm_up(config)
    else:
        from uxlab.live.upstream import warm_up_recording

        warm_up(replace(config, upstream=None, recordings=[warm_up_recording()]))


def _listen(args: argparse.Namespace) -> list[socket.socket]:
    """The bound sockets: one, or one per worker sharing the port (SO_REUSEPORT)."""
    from uxlab.cli import CliError

    try:
        if args.workers > 1:
            from uxlab.live.serve_workers import reuse_port_sockets

            return reuse_port_sockets(
                args.host,
                args.port,
                args.workers,
                lambda h, p: listen_socket(h, p, reuse_port=True),
            )
        return [listen_socket(args.host, args.port)]
    except OSError as exc:
        raise CliError(
            f"--port {args.port}: cannot listen on {args.host} ({exc.strerror}); pick another port"
        ) from None


def _banner(args: argparse.Namespace, what: str, port: int) -> None:
    print(
        f"serving {what} on http://{args.host}:{port}/v1"
        f"{' (token required)' if args.token else ''}"
        f"{f' with {args.workers} worker processes' if args.workers > 1 else ''}. Ctrl-C stops.",
        file=sys.stderr,
        flush=True,
    )
    if args.host not in ("127.0.0.1", "localhost", "::1"):
        print(
            f"warning: binding {args.host} exposes the server beyond this machine; requests "
            "must name it (or an --allow-host NAME) in their Host header",
            file=sys.stderr,
        )


def _prepare(
    args: argparse.Namespace, config, app, socks: list[socket.socket]
) -> Callable[[], int]:
    """Listen and load uvicorn's protocol classes now, so that a request sent as soon as the
    banner appears is neither refused (not yet listening) nor kept waiting by start-up
    imports; returns what serves until stopped (here, or in one forked worker per socket)."""
    import uvicorn

    make_config = functools.partial(
        uvicorn_config,
        max_connections=args.max_connections,
        header_timeout_s=args.header_timeout_s,
        max_slow_per_client=args.max_slow_per_client,
    )
    for s in socks:
        s.listen(128)
    uvicorn_settings = make_config(app)
    uvicorn_settings.load()  # the workers fork from here with it imported
    uvicorn_settings.get_loop_factory()  # imports the loop module
    if args.workers > 1:
        from uxlab.live.serve_workers import run_workers, serve_worker

        return lambda: run_workers(
            socks, lambda k, s: serve_worker(config, k, args.workers, s, make_config)
        )

    def serve() -> int:
        with socks[0]:
            uvicorn.Server(uvicorn_settings).run(sockets=[socks[0]])
        return 0

    return serve
