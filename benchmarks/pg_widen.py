"""How long the first open of an older uxlab's PostgreSQL database holds its tables locked.

    uv run python benchmarks/pg_widen.py [--rows 100000,1000000] [--repeats 3]

For each size, a database is made the way uxlab made it before migration statements headed
by a comment were rewritten (32-bit `integer`/`real` columns in the tables of schema
versions 5 to 8, `uxlab.store.widen`), with that many rows of `browser_paints` (one row per
chunk painted in a browser: the only one of those tables that grows with a study; `events`
was always 64-bit and is not rewritten). Then `Store.open` widens it. Reported:

- widen: the widening transaction (`widen_narrow_columns`), for which the widened tables
  are locked (ACCESS EXCLUSIVE) and every host's writes wait on the store's write lock;
- rewrite: the baseline of the same run, `VACUUM FULL browser_paints` (PostgreSQL rewriting
  the same table and its index without changing a type) on the widened database;
- open: a later `Store.open` of the widened database (nothing to widen: one catalogue read).

Medians over the repeats. The ratio widen/rewrite travels between machines; the times do
not. A temporary cluster from the OS packages with `fsync=on`, as the tests start it.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import psycopg

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

from helpers.postgres import PostgresCluster  # noqa: E402

from uxlab.store import Store, dialect  # noqa: E402
from uxlab.store import store as store_module  # noqa: E402
from uxlab.store.widen import widen_narrow_columns  # noqa: E402
from uxlab.study import load_study  # noqa: E402

GOOD = ROOT / "tests" / "data" / "bad_studies" / "good.toml"


def old_database(url: str, rows: int) -> None:
    """A database as the older uxlab made it, with `rows` painted chunks."""
    saved = dialect._DDL, store_module.widen_narrow_columns
    dialect._DDL = re.compile(r"\s*(CREATE|ALTER)\b", re.IGNORECASE)
    store_module.widen_narrow_columns = lambda store: []
    dialect.to_postgres.cache_clear()
    try:
        with Store.open(url) as store:
            session = store.start_or_resume_session(load_study(GOOD), "P-BENCH")
    finally:
        dialect._DDL, store_module.widen_narrow_columns = saved
        dialect.to_postgres.cache_clear()
    with psycopg.connect(url) as conn, conn.cursor() as cur:
        with cur.copy("COPY browser_paints FROM STDIN") as copy:
            for k in range(rows):
                copy.write_row((session.id, k // 100, k % 100, 300.0 + k * 0.017, 0.5, 3.25))
        cur.execute("ANALYZE")


def run(cluster: PostgresCluster, rows: int) -> tuple[float, float, float]:
    url = cluster.database()
    old_database(url, rows)
    took: list[float] = []

    def timed(store: Store) -> object:
        t0 = time.perf_counter()
        widened = widen_narrow_columns(store)
        took.append(time.perf_counter() - t0)
        return widened

    store_module.widen_narrow_columns = timed
    try:
        Store.open(url).close()
    finally:
        store_module.widen_narrow_columns = widen_narrow_columns
    with psycopg.connect(url, autocommit=True) as conn:
        assert conn.execute(
            "SELECT data_type FROM information_schema.columns WHERE table_name = "
            "'browser_paints' AND column_name = 'painted_ms'"
        ).fetchone() == ("double precision",)
        t0 = time.perf_counter()
        conn.execute("VACUUM FULL browser_paints")
        rewrite = time.perf_counter() - t0
    t0 = time.perf_counter()
    Store.open(url).close()
    reopen = time.perf_counter() - t0
    return took[0], rewrite, reopen


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rows", default="100000,1000000")
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    print(f"date {datetime.now(UTC):%Y-%m-%d %H:%M} UTC")
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())
    folder = Path(tempfile.mkdtemp(prefix="uxlab-widen-"))
    cluster = PostgresCluster.start(folder, fsync=True)
    try:
        print(f"{'rows':>9} {'widen s':>8} {'rewrite s':>9} {'widen/rewrite':>13} {'open s':>7}")
        for rows in (int(r) for r in args.rows.split(",")):
            runs = [run(cluster, rows) for _ in range(args.repeats)]
            widen, rewrite, reopen = (statistics.median(x) for x in zip(*runs, strict=True))
            print(
                f"{rows:>9} {widen:>8.3f} {rewrite:>9.3f} {widen / rewrite:>13.2f} {reopen:>7.3f}"
            )
    finally:
        cluster.stop()
        shutil.rmtree(folder, ignore_errors=True)
    print("uptime:", subprocess.run(["uptime"], capture_output=True, text=True).stdout.strip())


if __name__ == "__main__":
    main()
