"""A temporary PostgreSQL cluster from the OS packages, for the tests and the benchmark.

`PostgresCluster.start(folder)` runs `initdb` and `pg_ctl` (found with `pg_config --bindir`
or under /usr/lib/postgresql/*/bin) into `folder`, listening on a free loopback port and a
unix socket in the folder. PostgreSQL refuses to run as root, so as root (CI) the cluster
runs as the unprivileged user `nobody` (`runuser`), in a folder it owns. `database()`
makes a fresh empty database and returns its URL; `restart()` stops the server at once
(`-m immediate`: as a crash or a failover does) and starts it again.
"""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

import psycopg

RUN_AS = "nobody"


def bindir() -> Path:
    """The folder of `initdb` and `pg_ctl` (the OS package's), or a clear error."""
    candidates = []
    pg_config = shutil.which("pg_config")
    if pg_config:
        out = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True)
        candidates.append(out.stdout.strip())
    candidates += sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True)
    for folder in candidates:
        if folder and (Path(folder) / "initdb").exists() and (Path(folder) / "pg_ctl").exists():
            return Path(folder)
    raise RuntimeError(
        "PostgreSQL's server binaries (initdb, pg_ctl) were not found: install the OS package "
        "`postgresql` (it is on .ci/run's OS_PACKAGES line)"
    )


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@dataclass
class PostgresCluster:
    folder: Path
    port: int
    bin: Path
    as_root: bool

    @classmethod
    def start(cls, folder: Path, fsync: bool = False) -> PostgresCluster:
        """initdb into `folder`/data and start the server; `fsync` off unless asked (tests).

        As root, `folder` must be reachable by `nobody` (a fresh `tempfile.mkdtemp()`)."""
        folder.mkdir(parents=True, exist_ok=True)
        cluster = cls(folder, free_port(), bindir(), os.geteuid() == 0)
        if cluster.as_root:
            shutil.chown(folder, RUN_AS)
            os.chmod(folder, 0o700)
        cluster._run(
            "initdb", "-D", str(cluster.data), "-A", "trust", "-U", "postgres",
            "--no-sync", "-E", "UTF8", "--locale", "C",
        )  # fmt: skip
        options = [
            f"-c fsync={'on' if fsync else 'off'}",
            "-c synchronous_commit=on",
            "-c full_page_writes=" + ("on" if fsync else "off"),
            "-c listen_addresses=127.0.0.1",
            f"-p {cluster.port}",
            f"-k {folder}",
            "-c max_connections=200",
        ]
        cluster._options = " ".join(options)
        cluster._pg_ctl("start")
        return cluster

    @property
    def data(self) -> Path:
        return self.folder / "data"

    @property
    def url(self) -> str:
        return f"postgresql://postgres@127.0.0.1:{self.port}/postgres"

    def database(self, name: str | None = None) -> str:
        """Create a fresh database; its URL."""
        name = name or "t_" + uuid.uuid4().hex[:12]
        with psycopg.connect(self.url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}"')
        return f"postgresql://postgres@127.0.0.1:{self.port}/{name}"

    def stop_now(self) -> None:
        """Stop the server at once, as a crash or a failover does (`-m immediate`)."""
        self._pg_ctl("stop", "-m", "immediate")

    def start_again(self) -> None:
        self._pg_ctl("start")

    def stop(self) -> None:
        self._pg_ctl("stop", "-m", "fast")

    def terminate_backends(self, database: str) -> int:
        """Drop every connection to `database` (pg_terminate_backend); how many."""
        with psycopg.connect(self.url, autocommit=True) as conn:
            rows = conn.execute(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                "WHERE datname = %s AND pid <> pg_backend_pid()",
                (database,),
            ).fetchall()
        return len(rows)

    # ---

    _options: str = ""

    def _pg_ctl(self, *args: str) -> None:
        extra = ["-o", self._options] if args[0] == "start" else []
        self._run("pg_ctl", *args, "-D", str(self.data), "-w", "-t", "60", "-s",
                  "-l", str(self.folder / "server.log"), *extra)  # fmt: skip

    def _run(self, program: str, *args: str) -> None:
        command = [str(self.bin / program), *args]
        if self.as_root:
            command = ["runuser", "-u", RUN_AS, "--", *command]
        done = subprocess.run(command, capture_output=True, text=True, cwd=self.folder)
        if done.returncode != 0:
            log = self.folder / "server.log"
            tail = log.read_text()[-2000:] if log.exists() else ""
            raise RuntimeError(f"{program} {' '.join(args)} failed:\n{done.stderr}\n{tail}")


def wait_until(predicate, timeout_s: float = 30.0) -> None:
    """Poll `predicate` until true (a test's deadline, not a timing assertion)."""
    deadline = time.monotonic() + timeout_s
    while not predicate():
        if time.monotonic() > deadline:
            raise TimeoutError("condition not met in time")
        time.sleep(0.02)


# --- pytest fixtures (import them into a test module: `from helpers.postgres import ...`) ---

import tempfile  # noqa: E402

import pytest  # noqa: E402

BACKENDS = ("sqlite", "postgresql")


@pytest.fixture(scope="session")
def postgres_cluster():
    """One PostgreSQL server per test session (per xdist worker), in a temporary folder."""
    folder = Path(tempfile.mkdtemp(prefix="uxlab-pg-"))
    cluster = PostgresCluster.start(folder)
    try:
        yield cluster
    finally:
        cluster.stop_now()  # no shutdown checkpoint: the folder is deleted next
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture
def postgres_db(postgres_cluster) -> str:
    """A fresh, empty PostgreSQL database's URL."""
    return postgres_cluster.database()


@pytest.fixture(params=BACKENDS)
def db(request, tmp_path):
    """A fresh database of each backend: a SQLite path, or a PostgreSQL URL."""
    if request.param == "sqlite":
        return tmp_path / "results" / "study.sqlite"
    return request.getfixturevalue("postgres_cluster").database()


def query(db, sql: str, params: tuple = ()) -> list[tuple]:
    """Rows of one statement in the store's SQL, read straight from either backend (a
    SQLite file is checked with `PRAGMA integrity_check` first)."""
    if isinstance(db, str):
        from uxlab.store.dialect import to_postgres

        with psycopg.connect(db, autocommit=True) as pg:
            cur = pg.execute(to_postgres(sql), tuple(params))
            return cur.fetchall() if cur.description is not None else []
    import sqlite3

    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        with conn:
            return conn.execute(sql, params).fetchall()
    finally:
        conn.close()
