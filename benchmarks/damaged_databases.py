"""Damaged study databases: does every command refuse in one line, or is there a traceback?

Simulates a small study into a database (`uxlab simulate`, 6 participants of the
quickstart study), then makes N damaged copies, each with B random bits flipped anywhere
after the 100-byte file header (seeded: copy k uses seed k), and runs `uxlab export`,
`uxlab verify` and `uxlab run`'s store opening (`Store.open`) on each, in this process
through the same `main()` the command line uses. Printed: per command, how many copies it
refused with a clean one-line error (exit 2), how many `verify` reported as mismatches
(exit 1), how many it read without complaint (the flipped bits fell where nothing it
reads looks: free space, unchecked values), and how many raised anything else (a
traceback: should be 0).

Usage:
    uv run python benchmarks/damaged_databases.py                 # 100 copies, 40 bits each
    uv run python benchmarks/damaged_databases.py --copies 300 --bits 10
"""

from __future__ import annotations

import argparse
import contextlib
import io
import os
import random
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from uxlab.cli import main as uxlab
from uxlab.errors import UxlabError
from uxlab.store import Store

STUDY = Path(__file__).resolve().parents[1] / "studies" / "quickstart.toml"


def damage(src: Path, dst: Path, seed: int, bits: int) -> None:
    shutil.copy(src, dst)
    data = bytearray(dst.read_bytes())
    rng = random.Random(seed)
    for _ in range(bits):
        data[rng.randrange(100, len(data))] ^= 1 << rng.randrange(8)
    dst.write_bytes(bytes(data))


def outcome(call) -> str:
    out = io.StringIO()
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(out):
            status = call()
    except BaseException as exc:  # what the benchmark counts: anything but a clean refusal
        return f"traceback ({type(exc).__name__})"
    if status == 0:
        return "read without complaint"
    if status == 1:
        return "reported mismatches (exit 1)"
    return "refused in one line" if len(out.getvalue().strip().splitlines()) <= 1 else "other"


def open_store(db: Path) -> int:
    try:
        Store.open(db).close()
    except UxlabError as exc:
        print(exc)
        return 2
    return 0


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--copies", type=int, default=100)
    ap.add_argument("--bits", type=int, default=40)
    args = ap.parse_args()
    counts: dict[str, Counter[str]] = {"Store.open": Counter(), "export": Counter()}
    counts["verify"] = Counter()
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        src = root / "study.sqlite"
        with contextlib.redirect_stdout(io.StringIO()):
            assert uxlab(["simulate", str(STUDY), "-n", "6", "--db", str(src)]) == 0
        size_kb = src.stat().st_size // 1024
        for k in range(args.copies):
            db = root / f"copy{k}.sqlite"
            damage(src, db, k, args.bits)
            counts["export"][
                outcome(lambda db=db: uxlab(["export", str(db), "-o", str(root / "out")]))
            ] += 1
            counts["verify"][outcome(lambda db=db: uxlab(["verify", str(db)]))] += 1
            counts["Store.open"][outcome(lambda db=db: open_store(db))] += 1
            for p in root.glob(f"copy{k}.sqlite*"):
                p.unlink()
    print(
        f"{args.copies} copies of a {size_kb:,} KB study database, {args.bits} random "
        f"bits flipped in each; load average {os.getloadavg()[0]:.1f}; "
        f"{time.strftime('%Y-%m-%d')}; {time.perf_counter() - started:.0f} s"
    )
    for command, c in counts.items():
        print(f"  {command:11} " + ", ".join(f"{n} {what}" for what, n in c.most_common()))


if __name__ == "__main__":
    main()
