"""`uxlab serve`'s option groups: serving a study participant's trials, who may call the
server and how much it takes, and forwarding to a real model (`--upstream`)."""

from __future__ import annotations

import argparse

PROFILE_OPTIONS = ("ttft", "headers_ms", "itl", "rho", "chunk", "stalls", "error_at")
"""The shaping options' names (`uxlab.cli.profile_options`), refused with `--study`."""


def add_study_arguments(p: argparse.ArgumentParser) -> None:
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


def add_guard_arguments(p: argparse.ArgumentParser) -> None:
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


def add_upstream_arguments(p: argparse.ArgumentParser) -> None:
    """Studying your own product: forwarding to a real model, re-timed."""
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
