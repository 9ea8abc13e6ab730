"""What checking the stored events, and the answers against the audit log, cost `uxlab
verify` on a big simulated study database.

    uv run python benchmarks/verify_speed.py [--participants 60] [--repeat 3]
        [--study studies/ttft-threshold.toml --study studies/agent-chain.toml]

For each study, N simulated participants are run into a fresh SQLite database (`uxlab
simulate`'s path: the session, the player on a virtual clock, the store), then `verify_db`
is timed alternately with the event check (`uxlab.store.verify_events`, what `uxlab verify`
runs) and without it (the baseline: the same verify with the events neither read nor
compared, as before the check existed). A third variant leaves out the answer check
(`uxlab.store.verify_audit`: every committed trial's digest recomputed from its stored rows,
answers and events). Printed: the database's trials and chunk events, the median wall and
CPU time of each over `--repeat` runs, and the ratios.
The ratio travels between machines; the absolute times do not (print `uptime` with them:
other work on a shared machine slows every figure).
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import statistics
import sys
import tempfile
import time
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from unittest import mock

from uxlab.simulate import simulate_cohort
from uxlab.store import Store
from uxlab.store import verify as verify_module
from uxlab.study import load_study

ROOT = Path(__file__).resolve().parents[1]
STUDIES = [ROOT / "studies" / "ttft-threshold.toml", ROOT / "studies" / "agent-chain.toml"]


@contextmanager
def without_event_check():
    """The baseline: verify as it was before the event check (no events read or compared)."""
    with (
        mock.patch.object(verify_module, "_events_by_trial", lambda conn, sid: {}),
        mock.patch.object(verify_module, "event_problems", lambda *a: []),
    ):
        yield


@contextmanager
def without_answer_check():
    """verify without recomputing the trials' digests against the audit log."""
    with mock.patch.object(verify_module, "check_session", lambda *a: 0):
        yield


def timed(db: Path, study: Path) -> tuple[float, float, verify_module.VerifyReport]:
    wall, cpu = time.perf_counter(), time.process_time()
    report = verify_module.verify_db(db, study)
    return time.perf_counter() - wall, time.process_time() - cpu, report


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=60)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--study", type=Path, action="append", help="default: two studies")
    args = parser.parse_args()
    print(f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, load average {os.getloadavg()}")
    for study_path in args.study or STUDIES:
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "big.sqlite"
            t0 = time.perf_counter()
            with Store.open(db, durable=False) as store:
                simulate_cohort(load_study(study_path), store, args.participants, seed=0)
            made_s = time.perf_counter() - t0
            conn = sqlite3.connect(db)
            (n_trials,) = conn.execute("SELECT COUNT(*) FROM trials").fetchone()
            (n_chunks,) = conn.execute(
                "SELECT COUNT(*) FROM events WHERE kind = 'chunk'"
            ).fetchone()
            conn.close()
            size_mb = db.stat().st_size / 1e6
            print(
                f"\n{study_path.name}: {args.participants} participants, {n_trials} trials, "
                f"{n_chunks} chunk events, {size_mb:.0f} MB (simulated in {made_s:.1f} s)"
            )
            runs: dict[str, list[tuple[float, float]]] = {"without": [], "with": [], "no-ans": []}
            for _ in range(args.repeat):  # alternated, so a change in load hits both
                with without_event_check(), without_answer_check():
                    wall, cpu, base = timed(db, study_path)
                runs["without"].append((wall, cpu))
                with without_answer_check():
                    runs["no-ans"].append(timed(db, study_path)[:2])
                wall, cpu, report = timed(db, study_path)
                runs["with"].append((wall, cpu))
                assert base.ok and report.ok, [m.line() for m in report.mismatches][:3]
                assert report.n_chunk_events == n_chunks and report.n_digests == n_trials
            med = {k: tuple(statistics.median(x[i] for x in v) for i in (0, 1))
                   for k, v in runs.items()}  # fmt: skip
            names = {
                "without": "neither the event nor the answer check",
                "no-ans": "the event check only",
                "with": "both (what uxlab verify runs)",
            }
            for k in ("without", "no-ans", "with"):
                print(f"  verify with {names[k]:>38}: wall {med[k][0]:6.2f} s, "
                      f"CPU {med[k][1]:6.2f} s (median of {args.repeat})")  # fmt: skip
            print(
                f"  ratio events/neither: wall {med['no-ans'][0] / med['without'][0]:.2f}, "
                f"CPU {med['no-ans'][1] / med['without'][1]:.2f}; ratio both/events only: "
                f"wall {med['with'][0] / med['no-ans'][0]:.2f}, "
                f"CPU {med['with'][1] / med['no-ans'][1]:.2f}"
            )
    print(f"\nload average after: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
