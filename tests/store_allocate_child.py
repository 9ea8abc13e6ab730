"""Two study hosts that start many participants at once (run as a subprocess).

    python tests/store_allocate_child.py DB STUDY N THREADS

Imports uxlab once, then forks two host processes, HOST1 and HOST2 (separate processes
with their own connections, as two machines have; forking saves a second interpreter
start). Each opens THREADS stores, prints `READY`, waits for a line on stdin (so both go
at once) and starts participants HOSTk-000 ... from THREADS threads, each thread with its
own store: `store.groups.allocate` then `store.sessions.start_or_resume`. Each prints `DONE <n>`.
"""

from __future__ import annotations

import os
import sys
from concurrent.futures import ThreadPoolExecutor

from uxlab.store import Store
from uxlab.study import load_study


def say(line: str) -> None:
    """One line in one write: the two hosts share stdout (`print` may split a line)."""
    os.write(1, (line + "\n").encode())


def host(db: str, study_path: str, prefix: str, n: int, threads: int, go: int) -> int:
    study = load_study(study_path)
    stores = [Store.open(db) for _ in range(threads)]
    say("READY")
    os.read(go, 1)  # both hosts wait for the same byte stream

    def start(k: int) -> str:
        store = stores[k % threads]
        participant = f"{prefix}-{k:03d}"
        group = store.groups.allocate(study, participant)
        store.sessions.start_or_resume(study, participant)
        return group.id

    # a thread per store: each store is used by one thread at a time
    with ThreadPoolExecutor(threads) as pool:
        groups = [
            g
            for chunk in pool.map(
                lambda t: [start(k) for k in range(t, n, threads)], range(threads)
            )
            for g in chunk
        ]
    for store in stores:
        store.close()
    say(f"DONE {len(groups)}")
    return 0


def main(db: str, study_path: str, n: int, threads: int) -> int:
    if db.startswith("postgresql://"):
        import uxlab.store.postgres  # noqa: F401 - its driver imported once, before the fork
    go_read, go_write = os.pipe()
    children = []
    for prefix in ("HOST1", "HOST2"):
        pid = os.fork()
        if pid == 0:
            os.close(go_write)
            code = 1
            try:
                code = host(db, study_path, prefix, n, threads, go_read)
            finally:
                os._exit(code)
        children.append(pid)
    os.close(go_read)
    sys.stdin.readline()
    os.write(go_write, b"GO")  # one byte for each host
    status = 0
    for pid in children:
        _, code = os.waitpid(pid, 0)
        status |= code
    return 0 if status == 0 else 1


if __name__ == "__main__":
    db, study_path, n, threads = sys.argv[1:5]
    sys.exit(main(db, study_path, int(n), int(threads)))
