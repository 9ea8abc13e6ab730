"""A process that holds a participant's session (run as a subprocess by the lease tests).

    python tests/store_lease_child.py DB STUDY PARTICIPANT

Starts the participant's session, begins trial 0 and prints `HOLD <session id>`; then, for
every line on stdin: `COMMIT` commits trial 0 with an answer and prints `COMMITTED`, `EXIT`
closes the store (giving the lease back) and ends.
"""

from __future__ import annotations

import sys

from uxlab.store import Store
from uxlab.study import load_study


def main(db: str, study_path: str, participant: str) -> int:
    study = load_study(study_path)
    store = Store.open(db)
    session = store.sessions.start_or_resume(study, participant, environment={"term": "test"})
    store.sessions.set_state(session, "consented")
    store.sessions.set_state(session, "running")
    store.trials.begin(session, 0)
    print(f"HOLD {session.id}", flush=True)
    for line in sys.stdin:
        if line.strip() == "COMMIT":
            store.trials.commit(
                session,
                0,
                "completed",
                {"shown_first_ms": 300.0, "shown_last_ms": 900.0, "scheduled_end_ms": 900.0},
                {"acceptable": ("yes", 1200.0)},
                [{"kind": "chunk", "t_ms": 300.0}],
            )
            print("COMMITTED", flush=True)
        elif line.strip() == "EXIT":
            break
    store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:4]))
