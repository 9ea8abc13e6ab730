"""How long committing a huge trial stalls the UI's event loop, on the loop and off it.

A trial of N chunk events (default 100,000: a long answer streamed chunk by chunk) is
committed through `StudySession.commit` into a real study database (WAL,
synchronous=FULL), twice: once called on the event loop, as `uxlab run` did before, and
once in a worker thread (`asyncio.to_thread`), as `StudyApp` now does. Meanwhile a ticker
task on the loop asks to wake every 1 ms; the gaps between its wake-ups are what a key
press or a repaint would have waited. Printed: the commit's wall time, the ticker's
largest gap and p99 during the commit, and the ratio of the largest gaps.

Usage:
    uv run python benchmarks/commit_off_loop.py               # 100,000 events, 3 repeats
    uv run python benchmarks/commit_off_loop.py --events 20000 --repeat 5

Other work on the machine stretches every figure: the load average is printed with them.
"""

from __future__ import annotations

import argparse
import asyncio
import math
import os
import statistics
import tempfile
import time
from pathlib import Path

from uxlab.player import ChunkTiming, PlaybackLog
from uxlab.session import StudySession, TrialRun
from uxlab.store import Store
from uxlab.study import load_study

STUDY = Path(__file__).resolve().parents[1] / "studies" / "quickstart.toml"


def huge_run(ss: StudySession, n_events: int) -> TrialRun:
    """The next trial, begun, sent, streamed as `n_events` chunks and answered."""
    trial = ss.next_trial()
    assert trial is not None
    run = ss.begin(trial)
    t0 = run.send()
    records = [
        ChunkTiming(
            i, 300.0 + i * 0.5, 300.2 + i * 0.5, 300.5 + i * 0.5, 301.0 + i * 0.5, "content", 4
        )
        for i in range(n_events)
    ]
    run.log = PlaybackLog(
        run.schedule.id, t0, "monotonic", records, finished_ms=records[-1].shown_ms
    )
    run.phase = "over"
    for q in run.questions:
        value = {"yesno": "yes", "likert": 3, "text": "fine"}.get(
            q.type, q.options[0] if q.options else None
        )
        run.answer(q.id, value, 900.0)
    return run


async def measure(
    commit_on_loop: bool, ss: StudySession, run: TrialRun
) -> tuple[float, list[float]]:
    """(commit wall ms, ticker gaps in ms while it ran)."""
    gaps: list[float] = []
    done = False

    async def ticker() -> None:
        last = time.perf_counter()
        while not done:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append((now - last) * 1000.0)
            last = now

    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.02)  # the ticker is running
    gaps.clear()
    start = time.perf_counter()
    if commit_on_loop:
        ss.commit(run)
    else:
        await asyncio.to_thread(ss.commit, run)
    took_ms = (time.perf_counter() - start) * 1000.0
    await asyncio.sleep(0.005)  # the gap that ends after the commit is counted
    done = True
    await task
    return took_ms, gaps


def p99(values: list[float]) -> float:
    """Nearest-rank 99th percentile (never above the largest value)."""
    ranked = sorted(values)
    return ranked[max(0, math.ceil(0.99 * len(ranked)) - 1)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--events", type=int, default=100_000)
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    study = load_study(STUDY)
    results: dict[str, list[tuple[float, float, float]]] = {"on the loop": [], "off the loop": []}
    with tempfile.TemporaryDirectory() as tmp:
        store = Store.open(Path(tmp) / "bench.sqlite")
        for k in range(args.repeat):
            for mode in results:
                ss = StudySession.open(study, store, f"P-BENCH{k}{mode[:2].upper()}")
                ss.accept_consent()
                ss.start_running()
                run = huge_run(ss, args.events)
                took_ms, gaps = asyncio.run(measure(mode == "on the loop", ss, run))
                results[mode].append((took_ms, max(gaps), p99(gaps)))
        store.close()
    load = os.getloadavg()[0]
    print(
        f"commit of one trial with {args.events:,} chunk events, {args.repeat} repeats, "
        f"load average {load:.1f}, {time.strftime('%Y-%m-%d')}"
    )
    print(f"{'':14} {'commit ms (median)':>19} {'loop max stall ms':>18} {'ticker p99 ms':>14}")
    for mode, rows in results.items():
        med = [statistics.median(col) for col in zip(*rows, strict=True)]
        print(f"{mode:14} {med[0]:19.0f} {med[1]:18.1f} {med[2]:14.1f}")
    on = statistics.median(r[1] for r in results["on the loop"])
    off = statistics.median(r[1] for r in results["off the loop"])
    print(f"largest loop stall, on / off the loop: {on / off:.0f}x")


if __name__ == "__main__":
    main()
