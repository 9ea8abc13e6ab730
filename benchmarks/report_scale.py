"""Scale: `uxlab report` on a simulated study of 200 participants x 300 trials (target < 60 s).

Prints the wall time of each stage (simulate + write the CSV, load, analyse, write the report)
and the total from loading to the written report, which is what a user waits for, with the
CPU time beside it (on a shared machine the wall time includes waiting for a core).

    .venv/bin/python benchmarks/report_scale.py [--participants 200] [--trials 300] [--n-boot 1000]
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from analysis_fixtures import simulate_trial_table, write_export_folder

from analysis.report import ReportOptions, analyse, write_report
from analysis.trial_table import load_trial_table

TTFT_LEVELS = (200, 400, 800, 1600, 3200, 6400)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--participants", type=int, default=200)
    parser.add_argument("--trials", type=int, default=300, help="main trials per participant")
    parser.add_argument("--n-boot", type=int, default=1000)
    args = parser.parse_args()
    reps = max(1, round(args.trials / (2 * len(TTFT_LEVELS))))
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        trials = simulate_trial_table(args.participants, TTFT_LEVELS, reps=reps, seed=0)
        folder = write_export_folder(Path(tmp) / "export", trials)
        t1, cpu1 = time.perf_counter(), time.process_time()
        table = load_trial_table(folder)
        t2 = time.perf_counter()
        data = analyse(table, ReportOptions(n_boot=args.n_boot, seed=0))
        t3 = time.perf_counter()
        write_report(data, Path(tmp) / "report")
        t4, cpu4 = time.perf_counter(), time.process_time()
    print(
        f"study: {args.participants} participants x {len(trials) // args.participants} trials "
        f"= {len(trials)} rows (main {2 * len(TTFT_LEVELS) * reps} per participant, plus "
        f"practice and attention checks); bootstrap B = {args.n_boot}"
    )
    print(f"  simulate + write CSV  {t1 - t0:6.1f} s (not part of the report)")
    print(f"  load + validate       {t2 - t1:6.1f} s")
    print(
        f"  analyse               {t3 - t2:6.1f} s "
        f"({len(data.psychometric.per_participant)} participant fits)"
    )
    print(f"  figures + write       {t4 - t3:6.1f} s")
    total = t4 - t1
    verdict = "ok" if total < 60 else "MISSED"
    print(
        f"report total            {total:6.1f} s wall (target < 60 s: {verdict}), "
        f"{cpu4 - cpu1:.1f} s CPU of this process"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
