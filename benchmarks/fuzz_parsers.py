"""The long fuzz run: thousands of mutated inputs through every parser, counting verdicts.

Each parser (`tests/helpers/fuzz.py`: the replay reader, `inspect`, thirteen importers, the
study file, the trial table, the report's analysis, the SSE parser) gets N mutations of its
valid seed files (1 to 3 of: bit flips, deletions, duplications, truncation, numbers swapped
for NaN / Infinity / 1e400 / 1e308 / -1 / 10**30 / 5,000-digit integers, values swapped for
other types, nesting 70 to 60,000 deep, keys renamed, lines duplicated, dropped, swapped or
200,000 characters long). Every run ends in one verdict:

    accepted   the parser returned, and the result is within the reading rules
    clean      refused with the parser's own one-line error
    silent     returned something out of range (time past a day, NaN, 10**30 tokens, ...)
    traceback  any other exception
    hang       still running after --timeout seconds (SIGALRM)

The goal: 0 tracebacks, 0 hangs and 0 silent acceptances over at least 5,000 inputs.

Usage:
    uv run python benchmarks/fuzz_parsers.py               # 500 per parser, seed 1
    uv run python benchmarks/fuzz_parsers.py --n 100 --seed 7 --only replay aiperf
"""

from __future__ import annotations

import argparse
import collections
import datetime
import os
import random
import signal
import sys
import tempfile
import time
import warnings
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))

from helpers.fuzz import Verdict, judge, mutate, targets

KINDS = ("accepted", "clean", "silent", "traceback", "hang")


class _Hang(BaseException):
    """Raised by the alarm; a BaseException so no parser's `except Exception` swallows it."""


def _alarm(signum: int, frame: object) -> None:
    raise _Hang


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=500, help="mutated inputs per parser")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--timeout", type=float, default=10.0, help="seconds before a hang")
    ap.add_argument("--only", nargs="*", help="parser names (default: all)")
    args = ap.parse_args()
    warnings.simplefilter("ignore")  # numpy's "mean of empty slice" on tiny tables
    signal.signal(signal.SIGALRM, _alarm)
    print(f"# fuzz_parsers  {datetime.date.today()}  seed {args.seed}  {args.n} per parser")
    print(f"# load average {' '.join(f'{x:.2f}' for x in os.getloadavg())}, {os.cpu_count()} cores")
    print(f"{'parser':<22}{'inputs':>7}" + "".join(f"{k:>11}" for k in KINDS) + f"{'s':>8}")
    totals: collections.Counter[str] = collections.Counter()
    examples: list[str] = []
    for target in targets():
        if args.only and target.name not in args.only:
            continue
        rng = random.Random(f"{args.seed}-{target.name}")
        counts: collections.Counter[str] = collections.Counter()
        start = time.perf_counter()
        with tempfile.TemporaryDirectory() as folder:
            for _ in range(args.n):
                data = mutate(rng.choice(target.seeds), rng, rng.randint(1, 3))
                signal.setitimer(signal.ITIMER_REAL, args.timeout)
                try:
                    verdict = judge(target, Path(folder), data)
                except _Hang:
                    verdict = Verdict("hang", f"{len(data)} bytes")
                finally:
                    signal.setitimer(signal.ITIMER_REAL, 0)
                counts[verdict.kind] += 1
                if verdict.kind in ("silent", "traceback", "hang") and len(examples) < 20:
                    examples.append(f"{target.name}: {verdict.kind}: {verdict.detail[:160]}")
        totals.update(counts)
        seconds = time.perf_counter() - start
        print(
            f"{target.name:<22}{args.n:>7}"
            + "".join(f"{counts[k]:>11}" for k in KINDS)
            + f"{seconds:>8.1f}"
        )
    n_total = sum(totals.values())
    print(f"{'all':<22}{n_total:>7}" + "".join(f"{totals[k]:>11}" for k in KINDS))
    for line in examples:
        print("  " + line)
    bad = totals["silent"] + totals["traceback"] + totals["hang"]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
