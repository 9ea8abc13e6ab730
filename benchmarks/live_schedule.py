"""Timing check of live studies: a live answer re-timed to a profile while it arrives.

Starts `uxlab serve replays/chat` as its own process on a free 127.0.0.1 port in two set-ups
and plays N live trials against it headless on the real clock, as a trial does (`LiveRun`
started at the send, the `Player` awaiting each event, then its absolute deadline):

- *fast model* (served TTFT 100 ms, 5 ms gaps) under a slower schedule (TTFT 800 ms,
  lognormal gaps median 30 ms): every chunk is buffered before it is due, so there should
  be no violations; prints how late the player handed chunks (handed - shown deadline).
- *slow model* (served TTFT 800 ms, 40 ms gaps) under a faster schedule (TTFT 200 ms,
  10 ms gaps): chunks are shown on arrival; prints the share violated, the lateness, and
  how long an arrived chunk waited before it was handed out (handed - arrival).

Also the gap between the send and the request leaving (`request_sent_ms`).

    python benchmarks/live_schedule.py [--streams 4]
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys

from loopback import free_port, pct, wait_until_serving

from uxlab.clock import MonotonicClock
from uxlab.live.live_request import LiveRun
from uxlab.live.live_schedule import LiveEndpoint, LiveSchedule
from uxlab.player import HeadlessSink, Player
from uxlab.shaping import Profile

SETUPS = {
    "fast model": (
        ["--ttft", "constant:100", "--itl", "constant:5"],
        {"ttft": 800, "itl": "lognormal:median=30,sigma=0.4"},
    ),
    "slow model": (
        ["--ttft", "constant:800", "--itl", "constant:40"],
        {"ttft": 200, "itl": "constant:10"},
    ),
}


async def play_trials(base: str, table: dict, n: int) -> dict[str, list[float]]:
    clock = MonotonicClock()
    out: dict[str, list[float]] = {"late": [], "wait": [], "violation": [], "sent": []}
    n_chunks = n_violated = 0
    for i in range(n):
        live = LiveSchedule(Profile.from_table(table), seed=100 + i)
        run = LiveRun(live, LiveEndpoint("openai", base, "served"), clock)
        await asyncio.sleep(0.2)  # the participant reads the prompt
        t0 = clock.now_ms()
        run.start("benchmark", t0)
        log = await Player(live, HeadlessSink(clock), clock).play(t0_ms=t0)
        result = await run.finish()
        if result is not None and result.request_sent_ms is not None:
            out["sent"].append(result.request_sent_ms)
        for rec, shown in zip(log.records, live.shown, strict=True):
            out["late"].append(rec.handed_ms - shown.shown_ms)
            if shown.violation_ms > 0:
                out["wait"].append(rec.handed_ms - shown.arrival_ms)
                out["violation"].append(shown.violation_ms)
        n_chunks += len(live.shown)
        n_violated += live.violations()["violations_n"]
    out["share"] = [n_violated / max(n_chunks, 1), n_chunks]
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=4)
    args = parser.parse_args()
    for name, (serve_args, table) in SETUPS.items():
        port = free_port()
        cmd = [
            sys.executable,
            "-m",
            "uxlab",
            "serve",
            "replays/chat",
            "--port",
            str(port),
            "--quiet",
            *serve_args,
        ]
        server = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        base = f"http://127.0.0.1:{port}/v1"
        try:
            wait_until_serving(base, server)
            r = asyncio.run(play_trials(base, table, args.streams))
        finally:
            server.terminate()
            server.wait(timeout=10)
        share, n_chunks = r["share"]
        print(f"{name}: serve {' '.join(serve_args)}; schedule {table}")
        print(f"  {args.streams} trials, {int(n_chunks)} chunks, {share:.1%} violated")
        print(f"  player: handed - shown deadline   {pct(r['late'])}")
        print(f"  violated chunks: arrival - due     {pct(r['violation'])}")
        print(f"  violated chunks: handed - arrival  {pct(r['wait'])}")
        print(f"  send -> request out               {pct(r['sent'])}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
