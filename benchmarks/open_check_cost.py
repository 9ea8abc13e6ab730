"""What `PRAGMA integrity_check` costs when a study database is opened, against
`PRAGMA quick_check` (the baseline, the check before it), on a big simulated file.

    uv run python benchmarks/open_check_cost.py [--participants 1000] [--repeat 5]

N simulated participants of `studies/quickstart.toml` are run into a fresh SQLite file
(`uxlab simulate`'s path), then each check is timed alternately on a fresh connection, as
`Store.open` runs it. Printed: the file's size, trials and events, the median wall and CPU
time of each check over `--repeat` runs, and their ratio, with the load average before and
after (other work on a shared machine slows every figure; the ratio travels better).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

from uxlab.simulate import simulate_cohort
from uxlab.store import Store
from uxlab.study import load_study

ROOT = Path(__file__).resolve().parents[1]


def timed(db: Path, pragma: str) -> tuple[float, float]:
    conn = sqlite3.connect(db)
    try:
        wall, cpu = time.perf_counter(), time.process_time()
        assert conn.execute(f"PRAGMA {pragma}(5)").fetchall() == [("ok",)]
        return time.perf_counter() - wall, time.process_time() - cpu
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=1000)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--study", type=Path, default=ROOT / "studies" / "quickstart.toml")
    args = parser.parse_args()
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {os.getloadavg()}")
    with tempfile.TemporaryDirectory() as tmp:
        db = Path(tmp) / "big.sqlite"
        with Store.open(db, durable=False) as store:
            simulate_cohort(load_study(args.study), store, args.participants, seed=0)
        conn = sqlite3.connect(db)
        n_trials, n_events = conn.execute(
            "SELECT (SELECT COUNT(*) FROM trials), (SELECT COUNT(*) FROM events)"
        ).fetchone()
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        print(
            f"{args.study.name}: {args.participants} participants, {n_trials} trials, "
            f"{n_events} events, {db.stat().st_size / 1e6:.0f} MB"
        )
        runs: dict[str, list[tuple[float, float]]] = {"quick_check": [], "integrity_check": []}
        for _ in range(args.repeat):  # alternated, so a change in load hits both
            for pragma in runs:
                runs[pragma].append(timed(db, pragma))
        med = {k: [statistics.median(x[i] for x in v) for i in (0, 1)] for k, v in runs.items()}
        for k, (wall, cpu) in med.items():
            print(f"  {k:>15}: wall {wall:.3f} s, CPU {cpu:.3f} s (median of {args.repeat})")
        q, i = med["quick_check"], med["integrity_check"]
        print(f"  ratio integrity/quick: wall {i[0] / q[0]:.2f}, CPU {i[1] / q[1]:.2f}")
    print(f"load average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
