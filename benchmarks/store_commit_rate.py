"""Commits per second and commit latency of the store, SQLite against PostgreSQL.

    uv run python benchmarks/store_commit_rate.py [--participants 1,10,50] [--trials 400]

For each backend and each number of concurrent simulated participants, every participant
(a thread with its own `Store`, as each participant of `uxlab host` has its own process
and connection) starts a session and commits trials as fast as it can: `store.trials.begin`
then `store.trials.commit` with two answers and 40 events, the size of a typical trial.
Reported: the commits per second over the whole run, and the p50/p99 latency of the commit (the
participant waits for it before the next screen).

Both are durable: SQLite in WAL with `synchronous=FULL` (a file in a temporary folder),
PostgreSQL with `fsync=on` and `synchronous_commit=on` (a temporary cluster started from
the OS packages, as the tests do, on this machine over loopback TCP). Ratios to SQLite with
one participant (the baseline of the same run) travel between machines; absolute figures
do not. Print the date and `uptime` with the figures: the load changes them.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.postgres import PostgresCluster  # noqa: E402

from uxlab.store import Store  # noqa: E402
from uxlab.study import load_study  # noqa: E402

GOOD = ROOT / "tests" / "data" / "bad_studies" / "good.toml"
EVENTS = [{"kind": "chunk", "t_ms": 300.0 + 20.0 * k, "scheduled_ms": 300.0 + 20.0 * k}
          for k in range(40)]  # fmt: skip


def participant(db, study, name: str, n_trials: int, barrier, latencies: list[float]) -> None:
    store = Store.open(db)
    session = store.sessions.start_or_resume(study, name)
    store.sessions.set_state(session, "consented")
    store.sessions.set_state(session, "running")
    barrier.wait()
    for k in range(n_trials):
        index = k % len(session.trials)
        if index == 0 and k:  # a longer run than the trial list: a new session
            session = store.sessions.start_or_resume(study, f"{name}-{k}")
            store.sessions.set_state(session, "consented")
            store.sessions.set_state(session, "running")
        store.trials.begin(session, index)
        t0 = time.perf_counter()
        store.trials.commit(
            session,
            index,
            "completed",
            {"shown_first_ms": 301.0, "shown_last_ms": 1080.0, "scheduled_end_ms": 1080.0},
            {"acceptable": ("yes", 900.0), "speed": (4, 700.0)},
            EVENTS,
        )
        latencies.append(time.perf_counter() - t0)
    store.close()


def run(db, study, n_participants: int, n_commits: int) -> dict[str, float]:
    per = max(1, n_commits // n_participants)
    barrier = threading.Barrier(n_participants + 1)
    latencies: list[list[float]] = [[] for _ in range(n_participants)]
    threads = [
        threading.Thread(
            target=participant, args=(db, study, f"P-B{n_participants}-{i}", per, barrier, lat)
        )
        for i, lat in enumerate(latencies)
    ]
    for t in threads:
        t.start()
    barrier.wait()
    t0 = time.perf_counter()
    for t in threads:
        t.join()
    wall = time.perf_counter() - t0
    flat = np.array([x for lat in latencies for x in lat]) * 1000.0
    return {
        "commits": float(flat.size),
        "per_s": flat.size / wall,
        "p50_ms": float(np.percentile(flat, 50)),
        "p99_ms": float(np.percentile(flat, 99)),
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", default="1,10,50")
    parser.add_argument("--trials", type=int, default=400, help="commits per measurement")
    args = parser.parse_args()
    counts = [int(x) for x in args.participants.split(",")]
    study = load_study(GOOD)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"date: {datetime.now(UTC).isoformat(timespec='minutes')}")
    print(f"load before: {uptime}")
    folder = Path(tempfile.mkdtemp(prefix="uxlab-bench-"))
    pg_folder = Path(tempfile.mkdtemp(prefix="uxlab-bench-pg-"))  # its own: owned by nobody
    cluster = PostgresCluster.start(pg_folder, fsync=True)
    results: dict[tuple[str, int], dict[str, float]] = {}
    try:
        for n in counts:
            sqlite_db = folder / f"bench-{n}.sqlite"
            results["sqlite", n] = run(sqlite_db, study, n, args.trials)
            results["postgresql", n] = run(cluster.database(f"bench_{n}"), study, n, args.trials)
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
        shutil.rmtree(pg_folder, ignore_errors=True)
    uptime = subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip()
    print(f"load after:  {uptime}")
    base = results["sqlite", counts[0]]
    print(f"\nbaseline: SQLite, {counts[0]} participant(s): {base['per_s']:.0f} commits/s")
    print(f"{'backend':<11} {'partic.':>7} {'commits':>7} {'commits/s':>9} {'x base':>6} "
          f"{'p50 ms':>7} {'p99 ms':>7}")  # fmt: skip
    for n in counts:
        for backend in ("sqlite", "postgresql"):
            r = results[backend, n]
            print(
                f"{backend:<11} {n:>7} {r['commits']:>7.0f} {r['per_s']:>9.0f} "
                f"{r['per_s'] / base['per_s']:>6.2f} {r['p50_ms']:>7.1f} {r['p99_ms']:>7.1f}"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
