"""A small study-runner stand-in for the store's crash tests (run as a subprocess).

    python tests/store_kill_child.py DB STUDY PARTICIPANT [MAX_TRIALS]
    python tests/store_kill_child.py --fork DB STUDY PARTICIPANT

Starts or resumes the participant's session and commits trials in a loop, printing
`RESUMED <interrupted indexes> <next index>`, then `BEGIN i` once trial i is in flight and
`COMMIT i` once it is committed, flushing each line, so the parent can kill it at known points.

With `--fork` the process imports uxlab once, then for every `RUN` line on stdin forks a
fresh worker process that prints `PID <pid>` and runs the loop above; when the worker ends
(or is killed) it prints `EXIT <status>`. The test kills the worker with SIGKILL: a real,
separate process, without paying Python's start-up for each of many kills.
"""

from __future__ import annotations

import os
import sys

from uxlab.store import Store
from uxlab.study import load_study


def say(line: str) -> None:
    """Write one whole line in one system call: a print is two writes (the text, then the
    newline) when Python's output is unbuffered (PYTHONUNBUFFERED=1), and a SIGKILL between
    them left `COMMIT 32` and the parent's `EXIT ...` on one line."""
    os.write(sys.stdout.fileno(), f"{line}\n".encode())


def run(db: str, study_path: str, participant: str, max_trials: int = 10**9) -> int:
    study = load_study(study_path)
    store = Store.open(db)
    session = store.sessions.start_or_resume(study, participant, environment={"term": "test"})
    interrupted = ",".join(map(str, session.interrupted)) or "-"
    say(f"RESUMED {interrupted} {session.next_index}")
    if session.state == "created":
        store.sessions.set_state(session, "consented")
    store.sessions.set_state(session, "running")
    for trial in session.trials[session.next_index :][:max_trials]:
        store.trials.begin(session, trial.index)
        say(f"BEGIN {trial.index}")
        events = [
            {"kind": "chunk", "t_ms": 300.0 + 20.0 * k, "scheduled_ms": 300.0 + 20.0 * k}
            for k in range(40)
        ]
        store.trials.commit(
            session,
            trial.index,
            "completed",
            {"shown_first_ms": 301.0, "shown_last_ms": 1080.0, "scheduled_end_ms": 1080.0},
            {"acceptable": ("yes", 900.0 + trial.index)},
            events,
        )
        say(f"COMMIT {trial.index}")
    if session.next_index >= len(session.trials):
        store.sessions.set_state(session, "completed")
        say("DONE")
    store.close()
    return 0


def fork_server(db: str, study_path: str, participant: str) -> int:
    if db.startswith("postgresql://"):  # its driver too is imported once, not per worker
        import uxlab.store.postgres  # noqa: F401
    for line in sys.stdin:
        if line.strip() != "RUN":
            break
        pid = os.fork()
        if pid == 0:  # the worker: opens its own connection after the fork
            say(f"PID {os.getpid()}")
            os._exit(run(db, study_path, participant))
        _, status = os.waitpid(pid, 0)
        say(f"EXIT {status}")
    return 0


def main() -> int:
    if sys.argv[1] == "--fork":
        return fork_server(*sys.argv[2:5])
    db, study_path, participant = sys.argv[1:4]
    max_trials = int(sys.argv[4]) if len(sys.argv) > 4 else 10**9
    return run(db, study_path, participant, max_trials)


if __name__ == "__main__":
    sys.exit(main())
