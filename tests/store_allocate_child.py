"""A study host stand-in that starts many participants at once (run as a subprocess).

    python tests/store_allocate_child.py DB STUDY PREFIX N THREADS

Waits for a line on stdin (so two hosts start together), then starts participants
PREFIX-0 ... PREFIX-(N-1) from THREADS threads, each thread with its own store (as each
participant's process has): `allocate_group` then `start_or_resume_session`. Prints
`DONE <n>` when every start is stored.
"""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

from uxlab.store import Store
from uxlab.study import load_study


def main(db: str, study_path: str, prefix: str, n: int, threads: int) -> int:
    study = load_study(study_path)
    stores = [Store.open(db) for _ in range(threads)]
    print("READY", flush=True)
    sys.stdin.readline()

    def start(k: int) -> str:
        store = stores[k % threads]
        participant = f"{prefix}-{k:03d}"
        group = store.allocate_group(study, participant)
        store.start_or_resume_session(study, participant)
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
    print(f"DONE {len(groups)}", flush=True)
    return 0


if __name__ == "__main__":
    db, study_path, prefix, n, threads = sys.argv[1:6]
    sys.exit(main(db, study_path, prefix, int(n), int(threads)))
