"""The shaping profile's command-line options (`uxlab shape`, `replay`, `serve`).

`add_profile_arguments` registers them; `profile_from_args` reads them into a
`uxlab.shaping.Profile`, each error naming the option (`--itl: ...`).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from uxlab.cli.options import add_seed_option

if TYPE_CHECKING:
    from uxlab.shaping.profile import Profile


def profile_from_args(args: argparse.Namespace) -> Profile:
    """Read the options registered by `add_profile_arguments`; errors name the option."""
    # imported here: the shaping distributions bring scipy, which `uxlab --help` never needs
    from uxlab.shaping.distributions import ITL_KINDS, TTFT_KINDS, parse_dist
    from uxlab.shaping.profile import (
        RECORDED,
        Profile,
        check_rho_fits,
        parse_chunk,
        parse_error_at,
        parse_headers,
        parse_rho,
        parse_stalls,
    )

    kwargs: dict[str, Any] = {}
    if getattr(args, "ttft", None) is not None:
        kwargs["ttft"] = parse_dist(args.ttft, "--ttft", TTFT_KINDS)
    if getattr(args, "headers_ms", None) is not None:
        kwargs["headers_ms"] = parse_headers(args.headers_ms, "--headers-ms")
    if getattr(args, "itl", None) is not None:
        kwargs["itl"] = parse_dist(args.itl, "--itl", ITL_KINDS)
    if getattr(args, "rho", None) is not None:
        kwargs["rho"] = parse_rho(args.rho, "--rho")
    if getattr(args, "chunk", None) is not None:
        kwargs["chunk"] = parse_chunk(args.chunk, "--chunk")
    stalls = getattr(args, "stalls", None)
    if stalls:
        kwargs["stalls"] = parse_stalls(list(stalls), "--stalls")
    if getattr(args, "error_at", None) is not None:
        kwargs["error_at"] = parse_error_at(args.error_at, "--error-at")
    check_rho_fits(kwargs.get("itl", RECORDED), kwargs.get("rho", 0.0), "--rho")
    return Profile(**kwargs)


def add_profile_arguments(parser: argparse.ArgumentParser) -> None:
    """Register --ttft --headers-ms --itl --rho --chunk --stalls --error-at --seed."""
    g = parser.add_argument_group(
        "shaping profile",
        "Re-time streams. Distributions: constant:MS | uniform:mean=M,j=J | "
        "normal:mean=M,sd=S | lognormal:median=M,sigma=S | gamma:mean=M,cv=C | "
        "pareto:median=M,alpha=A. Unset options keep the recording's timing.",
    )
    g.add_argument(
        "--ttft",
        metavar="SPEC",
        help="time to first token: MS | recorded | scale:F | a distribution "
        "(e.g. lognormal:median=800,sigma=0.3)",
    )
    g.add_argument("--headers-ms", metavar="MS", help="when response headers arrive (ms)")
    g.add_argument(
        "--itl",
        metavar="SPEC",
        help="inter-token gaps: recorded | scale:F | rate:TOKENS_PER_S | "
        "constant:MS | a distribution | empirical:PATH[,block=B]",
    )
    g.add_argument("--rho", metavar="R", help="lag-1 correlation of successive gaps (-1..1)")
    g.add_argument("--chunk", metavar="K", help="tokens per event: K | uniform:MIN,MAX")
    g.add_argument(
        "--stalls",
        metavar="SPEC",
        action="append",
        help="at=TOKENS:MS,... | poisson:rate_per_s=R,ms=DIST (repeatable)",
    )
    g.add_argument(
        "--error-at",
        metavar="N[:TYPE]",
        help="end with an error after N tokens (default type overloaded_error)",
    )
    add_seed_option(g)
