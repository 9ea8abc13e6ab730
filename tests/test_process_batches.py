"""Batches on several processes (`uxlab.streams.process_batches`): forked helpers on Linux
when this process has one thread, a process pool otherwise; results in batch order either
way, a helper's exception raised, a helper's silent death made good.

A pytest-xdist worker runs threads of its own, so the forked path is checked in a fresh
interpreter (as `uxlab inspect` runs it)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

from uxlab.streams.process_batches import can_fork, run_batches

ROOT = Path(__file__).resolve().parents[1]

LINUX = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="forks on Linux only")


HELPER_STARTED = """
import os, time, tempfile
from uxlab.streams.process_batches import can_fork, run_batches
home, marks = os.getpid(), tempfile.mkdtemp()

def helper_started():
    # In a helper: say so. Here: wait until a helper has taken a batch (not a race).
    if os.getpid() != home:
        open(os.path.join(marks, str(os.getpid())), "w").close()
        return True
    deadline = time.monotonic() + 60
    while not os.listdir(marks) and time.monotonic() < deadline:
        time.sleep(0.002)
    return False
"""


def fresh(script: str) -> str:
    """What `script` prints, run in a fresh interpreter (one thread: helpers are forked),
    after `HELPER_STARTED`."""
    done = subprocess.run(
        [sys.executable, "-c", HELPER_STARTED + textwrap.dedent(script)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


@LINUX
def test_forked_helpers_share_the_batches_and_give_them_back_in_order():
    out = fresh(
        """
        assert can_fork()
        def work(k):
            helper_started()
            return (k * k, os.getpid())
        done = run_batches(work, 24, 3)
        print([v for v, _ in done] == [k * k for k in range(24)], {p for _, p in done} - {home})
        """
    )
    same, helpers = out.split(" ", 1)
    assert same == "True"
    assert helpers != "set()"  # a helper did batches (which ones: whoever took them first)


@LINUX
def test_a_helpers_exception_is_raised_here_and_no_helper_is_left():
    out = fresh(
        """
        def work(k):
            if helper_started():
                raise ValueError(f"batch {k} is bad")
            return k
        try:
            run_batches(work, 8, 2)
        except ValueError as exc:
            print("raised:", exc)
        try:
            os.waitpid(-1, os.WNOHANG)
            print("a child is left")
        except ChildProcessError:
            print("no child left")
        """
    )
    raised, left = out.splitlines()
    assert raised.startswith("raised: batch ") and raised.endswith(" is bad")
    assert left == "no child left"


@LINUX
def test_a_helper_that_dies_without_a_word_leaves_its_batches_to_this_process():
    out = fresh(
        """
        def work(k):
            if helper_started():
                os._exit(9)  # killed, out of memory, ...
            return k + 100
        print(run_batches(work, 6, 2) == [k + 100 for k in range(6)])
        """
    )
    assert out == "True"


@LINUX
def test_when_no_helper_can_be_forked_this_process_does_every_batch():
    out = fresh(
        """
        def refuse():
            raise BlockingIOError(11, "Resource temporarily unavailable")
        os.fork = refuse  # as under a process limit (ulimit -u)
        print(run_batches(lambda k: k * 3, 5, 4) == [0, 3, 6, 9, 12])
        """
    )
    assert out == "True"


def test_with_another_thread_running_a_pool_does_it_with_the_same_results():
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert not can_fork()  # forking here would copy a lock the other thread may hold
        assert run_batches(abs, 5, 2) == [0, 1, 2, 3, 4]
    finally:
        stop.set()
        other.join()


class _CountedWork:
    """A batch's work that counts how often this process pickles it."""

    pickled = 0

    def __call__(self, k: int) -> int:
        time.sleep(0.02)  # long enough for the helpers to take batches too
        return k * 2

    def __getstate__(self) -> dict:
        type(self).pickled += 1
        return {}


def test_a_pool_gets_the_work_once_per_helper_not_with_every_batch():
    """The work holds every batch's file names (`inspect_load._Batch`): sent with each of
    20 batches it was pickled 20 times; now once per helper at most (none when forked)."""
    stop = threading.Event()
    other = threading.Thread(target=stop.wait)
    other.start()
    try:
        assert run_batches(_CountedWork(), 20, 3) == [k * 2 for k in range(20)]
    finally:
        stop.set()
        other.join()
    assert _CountedWork.pickled <= 2


def test_one_process_or_one_batch_runs_here():
    here = os.getpid()
    assert run_batches(lambda k: (k, os.getpid()), 3, 1) == [(0, here), (1, here), (2, here)]
    assert run_batches(lambda k: os.getpid(), 1, 4) == [here]
