"""Does shaping a long recording hold up `uxlab serve`'s event loop? On-loop vs thread A/B.

Builds the serve app on a long recording (the bundled chat corpus's longest, repeated to
LENGTH chunks) with a lognormal ITL profile, and sends it R requests (one every GAP ms,
non-streaming with `max_tokens` 1, so each request pays the whole shaping but plays almost
nothing) in memory through the real ASGI app, while a probe task on the same loop sleeps
1 ms at a time and records how late each wake-up is: what any other stream's next chunk
would suffer. Runs it, alternating, with no shaping (control), shaping on the loop (as
before), in a worker thread (`ServeConfig.shape_off_loop`, the default) and in a thread
with a 0.5 ms interpreter switch interval (what `uxlab serve` sets), and prints the
probe's lateness and the shaping time per request for each.

    python benchmarks/serve_shaping_off_loop.py [--length 2000] [--requests 20] [--rounds 3]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np
from loopback import pct

from uxlab.live.serve import ServeConfig, asgi_post, build_app
from uxlab.shaping import Profile, shape
from uxlab.streams import Recording, load_corpus
from uxlab.streams.recording import Chunk

CORPUS = Path(__file__).resolve().parent.parent / "replays" / "chat"
PROFILE = {"ttft": "constant:20", "itl": "lognormal:median=20,sigma=0.5"}


def long_recording(n_chunks: int) -> Recording:
    """The corpus's longest recording, its chunks repeated (times shifted) to `n_chunks`."""
    base = max(load_corpus(CORPUS).recordings, key=lambda r: len(r.chunks))
    chunks = [c for c in base.events if isinstance(c, Chunk)]
    span = max(c.t_ms or 0.0 for c in chunks) + 20.0
    events = [
        replace(chunks[i % len(chunks)], t_ms=(chunks[i % len(chunks)].t_ms or 0.0) + span * k)
        for k, i in ((j // len(chunks), j) for j in range(n_chunks))
    ]
    end = replace(base.end, t_ms=span * (n_chunks // len(chunks) + 1)) if base.end else None
    return replace(base, events=events, end=end)


async def one_round(rec: Recording, off_loop: bool | None, args: argparse.Namespace) -> tuple:
    profile = Profile.from_table(PROFILE)
    shaping_ms: list[float] = []

    def timed_shape(r: Recording, seed: int) -> Recording:
        t = time.perf_counter_ns()
        out = r if off_loop is None else shape(r, profile, seed=seed)
        shaping_ms.append((time.perf_counter_ns() - t) / 1e6)
        return out

    app = build_app(ServeConfig(recordings=[rec], shape=timed_shape, shape_off_loop=bool(off_loop)))
    body = json.dumps(
        {
            "model": "m",
            "stream": False,
            "max_tokens": 1,
            "messages": [{"role": "user", "content": "x"}],
        }
    )
    lateness_ms: list[float] = []
    done = asyncio.Event()

    async def probe() -> None:
        while not done.is_set():
            due = time.perf_counter_ns() / 1e6 + 1.0
            await asyncio.sleep(0.001)
            lateness_ms.append(time.perf_counter_ns() / 1e6 - due)

    async def requests() -> None:
        tasks = []
        for _ in range(args.requests):
            tasks.append(asyncio.create_task(asgi_post(app, "/v1/chat/completions", body)))
            await asyncio.sleep(args.gap_ms / 1000)
        await asyncio.gather(*tasks)
        done.set()

    await asyncio.gather(probe(), requests())
    return lateness_ms, shaping_ms


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--length", type=int, default=2000, help="chunks in the recording")
    parser.add_argument("--requests", type=int, default=20)
    parser.add_argument("--gap-ms", type=float, default=50.0, help="between requests")
    parser.add_argument("--rounds", type=int, default=3, help="A/B rounds, alternating")
    parser.add_argument("--switch-ms", type=float, default=0.5, help="the third arm's interval")
    args = parser.parse_args()
    rec = long_recording(args.length)
    default_switch_s = sys.getswitchinterval()
    arms = (
        ("no shaping (control: the recording as is)", None, default_switch_s),
        ("on loop", False, default_switch_s),
        ("thread", True, default_switch_s),
        (f"thread, GIL switch {args.switch_ms:g} ms", True, args.switch_ms / 1000),
    )
    results: dict[str, tuple[list[float], list[float]]] = {a[0]: ([], []) for a in arms}
    for _ in range(args.rounds):
        for name, off, switch_s in arms:
            sys.setswitchinterval(switch_s)
            late, shaping = asyncio.run(one_round(rec, off, args))
            results[name][0].extend(late)
            results[name][1].extend(shaping)
    sys.setswitchinterval(default_switch_s)
    print(
        f"{len(rec.chunks)}-chunk recording, {args.requests} requests x {args.rounds} rounds, "
        f"one every {args.gap_ms:g} ms; load average {os.getloadavg()[0]:.1f}, "
        f"{os.cpu_count()} CPUs; default GIL switch interval {sys.getswitchinterval() * 1000:g} ms"
    )
    for name, (late, shaping) in results.items():
        a = np.asarray(late)
        print(f"{name}:")
        print(f"  probe wake-up lateness: {pct(a, width=7)}, p99.9 {np.percentile(a, 99.9):.3f}")
        print(f"  wake-ups > 2 ms late:   {np.mean(a > 2.0):.2%} of {a.size}")
        print(f"  shaping per request:    {pct(shaping, width=7)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
