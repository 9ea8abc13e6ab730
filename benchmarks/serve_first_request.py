"""Timing check: is `uxlab serve`'s first request as punctual as the ones after it?

Starts `uxlab serve` as a fresh process (a new Python, nothing imported or used yet) on the
bundled chat corpus with a known profile, waits for its banner (no request of any kind
before the measured one), then records K streaming requests in a row with the live
recorder over loopback and compares each one's first content chunk with its schedule,
rebuilt with `shape()` (request i: recording i mod n, seed SEED+i). Repeats that with R
fresh processes and prints the first request's lateness beside the later requests'.

Lateness is measured by the client: recorded arrival (from the client's send) minus the
scheduled time (from the server's read of the request), so it includes the constant
send-to-read offset (~1 ms on loopback) and any first-use cost on the server's path.

    python benchmarks/serve_first_request.py [--runs 5] [--requests 4] [--wire openai]
"""

from __future__ import annotations

import argparse
import asyncio
import re
import subprocess
import sys
from pathlib import Path

import httpx
import numpy as np
from loopback import pct

from uxlab.live.clients import Prompt
from uxlab.live.record import record_stream
from uxlab.shaping import Profile, shape
from uxlab.streams import Recording, load_corpus
from uxlab.study import design_trials, load_study
from uxlab.study.stimulus import trial_schedule

CORPUS = Path(__file__).resolve().parent.parent / "replays" / "chat"
TTFT = "constant:300"
PARTICIPANT = "p-bench"
ITL = "constant:20"
SEED = 11


def start_server(args: argparse.Namespace) -> tuple[subprocess.Popen, str]:
    """A fresh `uxlab serve` process and its base URL (read from the banner)."""
    cmd = [sys.executable, "-m", "uxlab", "serve", "--port", "0", "--quiet"]
    if args.study:
        cmd += ["--study", args.study, "--participant", PARTICIPANT]
    else:
        cmd += [str(CORPUS), "--ttft", args.ttft, "--itl", ITL, "--seed", str(SEED)]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    banner = proc.stderr.readline() if proc.stderr else ""
    match = re.search(r"(http://127\.0\.0\.1:\d+/v1)", banner)
    if match is None:
        proc.terminate()
        sys.exit(f"uxlab serve did not start: {banner!r}")
    return proc, match.group(1)


def served_schedules(args: argparse.Namespace, n_requests: int) -> list[Recording]:
    """What the server plays for requests 0..n-1, rebuilt here."""
    if args.study:
        study = load_study(args.study)
        trials = design_trials(study, PARTICIPANT, 1)
        return [trial_schedule(study, trials[i % len(trials)]) for i in range(n_requests)]
    sources = load_corpus(CORPUS).recordings
    profile = Profile.from_table({"ttft": args.ttft, "itl": ITL})
    return [shape(sources[i % len(sources)], profile, seed=SEED + i) for i in range(n_requests)]


async def first_chunk_lateness_ms(
    base: str, args: argparse.Namespace, n_requests: int
) -> list[float]:
    """Per request: recorded minus scheduled time of its first content chunk."""
    schedules = served_schedules(args, n_requests)
    out = []
    async with httpx.AsyncClient() as client:
        for i, served in enumerate(schedules):
            result = await record_stream(
                client, args.wire, base, "m", Prompt([{"role": "user", "content": "go"}]), None, "r"
            )
            if not result.ok:
                sys.exit(f"request {i}: {result.message}")
            got = next(c.t_ms for c in result.recording.chunks if c.text)
            want = next(c.t_ms for c in served.chunks if c.text)
            out.append(got - want)
    return out


async def warm_client(args: argparse.Namespace) -> None:
    """Use the recorder once against a throwaway server, so the client's own first-use
    costs (imports, httpx set-up) are not charged to the measured server."""
    proc, base = start_server(args)
    try:
        await first_chunk_lateness_ms(base, args, 1)
    finally:
        proc.terminate()
        proc.wait(timeout=10)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5, help="fresh server processes")
    parser.add_argument("--requests", type=int, default=4, help="requests per process")
    parser.add_argument("--wire", choices=["openai", "anthropic"], default="openai")
    parser.add_argument("--ttft", default=TTFT, help=f"profile TTFT (default {TTFT})")
    parser.add_argument("--study", help="serve this study file (participant p-bench) instead")
    args = parser.parse_args()
    asyncio.run(warm_client(args))
    first, later = [], []
    for run in range(args.runs):
        proc, base = start_server(args)
        try:
            lateness = asyncio.run(first_chunk_lateness_ms(base, args, args.requests))
        finally:
            proc.terminate()
            proc.wait(timeout=10)
        print(f"  run {run}: " + "  ".join(f"{x:7.2f}" for x in lateness) + " ms")
        first.append(lateness[0])
        later.extend(lateness[1:])
    print(
        f"first content chunk, recorded - scheduled ({args.wire} wire, {args.runs} fresh "
        f"servers x {args.requests} requests, "
        + (f"study {args.study}):" if args.study else f"ttft={args.ttft} itl={ITL}):")
    )
    print(f"  request 0:      {pct(first, width=7)}")
    print(f"  requests 1..{args.requests - 1}:  {pct(later, width=7)}")
    ratio = np.median(first) / max(np.median(later), 1e-6) if later else float("nan")
    print(f"  median ratio first / later: {ratio:.1f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
