"""Expensive test data built once per test run, however many pytest-xdist workers ask for it.

A module-scoped fixture runs once per worker that runs a test of its module: with `-n 4`
a 40 s simulation could run four times. `built_once` runs the build in the first worker
to ask, under a file lock, pickles what it returns beside the files it wrote, and hands the
other workers the unpickled copy. (xdist's own `--dist loadgroup` would keep a module on one
worker, but does not group on pytest >= 9.2: pytest-dev/pytest-xdist#1386.)
"""

from __future__ import annotations

import fcntl
import os
import pickle
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import TypeVar

import pytest

T = TypeVar("T")


def built_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, build: Callable[[Path], T]
) -> T:
    """`build(folder)`'s result, built once in this test run into a folder shared by workers.

    `build` writes whatever files it needs into `folder` and returns a picklable value (paths
    into `folder` stay valid for every worker). A build that raises leaves nothing behind, so
    the next worker to ask tries again and fails the same way.
    """
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # this run's folder, shared by its workers
    folder, done = root / f"built-once-{name}", root / f"built-once-{name}.pickle"
    with (root / f"built-once-{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # released when the file closes
        if done.is_file():
            return pickle.loads(done.read_bytes())
        shutil.rmtree(folder, ignore_errors=True)  # what a failed build left
        folder.mkdir()
        result = build(folder)
        done.write_bytes(pickle.dumps(result))
        return result
