"""A second process holding a participant's session (`tests/store_lease_child.py`)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

CHILD = Path(__file__).resolve().parents[1] / "store_lease_child.py"


def hold_session(
    db: Path | str, study_path: Path, participant: str
) -> tuple[subprocess.Popen, str]:
    """Start a process that starts (or resumes) the participant's session and holds it until
    told `EXIT` on its stdin; returns it and the session id."""
    child = subprocess.Popen(
        [sys.executable, str(CHILD), str(db), str(study_path), participant],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    line = child.stdout.readline().split()
    assert line[:1] == ["HOLD"], child.stderr.read()
    return child, line[1]


def release(child: subprocess.Popen) -> None:
    """Let the holder close its store and end (killed if it does not)."""
    try:
        if child.poll() is None:
            child.stdin.write("EXIT\n")
            child.stdin.flush()
            assert child.wait(timeout=60) == 0
    finally:
        if child.poll() is None:
            child.kill()
            child.wait()
