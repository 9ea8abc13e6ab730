"""Run numbered batches of work on several processes, results in batch order.

`uxlab inspect` reads thousands of files in batches on one process per core. On Linux the
helpers are forked straight from this process (`os.fork`) and every process, this one
included, takes the next batch number from one pipe until none is left: a slow batch holds
no one up, and nothing is imported to do it. `concurrent.futures.ProcessPoolExecutor` did
the same job for a tenth of `inspect`'s CPU beyond its work (importing it alone costs ~30 ms,
then its threads and queues); it is still used where forking is unsafe: another platform,
or another thread running in this process (a forked child holds only the thread that
forked, and a lock another thread held stays locked in it).

A helper sends its results when it is done (pickled, through its own pipe). One that fails
sends its exception, which is raised here as `ProcessPoolExecutor` would; one that dies
without a word (killed, out of memory) leaves its batches to this process.
"""

from __future__ import annotations

import os
import pickle
import signal
import sys
import threading
from collections.abc import Callable
from typing import Any, TypeVar

R = TypeVar("R")

MAX_BATCHES = 255
"""Batch numbers travel as one byte each through the pipe every process takes them from."""


def run_batches(work: Callable[[int], R], n_batches: int, jobs: int) -> list[R]:
    """`[work(0), ..., work(n_batches - 1)]`, computed on `jobs` processes (this one and
    `jobs - 1` helpers). `work` runs in the helpers as they are (forked) or, elsewhere,
    pickled: a function of the module level, or a `functools.partial` of one."""
    if jobs <= 1 or n_batches <= 1:
        return [work(k) for k in range(n_batches)]
    if can_fork() and n_batches <= MAX_BATCHES:
        return _forked(work, n_batches, jobs)
    return _pooled(work, n_batches, jobs)


def can_fork() -> bool:
    """Whether helpers may be forked from this process: Linux, and no other thread."""
    return sys.platform.startswith("linux") and threading.active_count() == 1


def _forked(work: Callable[[int], R], n_batches: int, jobs: int) -> list[R]:
    take_from, put = os.pipe()
    os.write(put, bytes(range(n_batches)))  # every number at once: far below a pipe's 64 KB
    os.close(put)

    def next_batch() -> int | None:
        got = os.read(take_from, 1)  # one byte: whichever process reads it owns that batch
        return got[0] if got else None

    helpers: list[tuple[int, int]] = []  # (pid, the read end of its results pipe)
    try:
        for _ in range(jobs - 1):
            read_end, write_end = os.pipe()
            try:
                pid = os.fork()
            except OSError:  # no more processes allowed: those there are do the batches
                os.close(read_end)
                os.close(write_end)
                break
            if pid == 0:  # the helper: never returns, never runs this process's exit code
                os.close(read_end)
                _helper(work, next_batch, write_end)
            os.close(write_end)
            helpers.append((pid, read_end))
        results: dict[int, Any] = {}
        while (k := next_batch()) is not None:
            results[k] = work(k)
        while helpers:
            pid, read_end = helpers.pop(0)
            sent = _receive(read_end, pid)
            if isinstance(sent, BaseException):
                raise sent
            results.update(sent or {})
    finally:
        os.close(take_from)
        for pid, read_end in helpers:  # only when this process failed: stop the helpers
            os.close(read_end)
            _stop(pid)
    # What a helper that died silently had taken: done here.
    return [results[k] if k in results else work(k) for k in range(n_batches)]


def _helper(work: Callable[[int], Any], next_batch: Callable[[], int | None], out: int) -> None:
    """A forked helper's whole life: batches until none is left, then its results (or its
    exception) down `out`, then `os._exit` (no `atexit`, no flush of inherited buffers)."""
    code = 1
    try:
        signal.signal(signal.SIGINT, signal.SIG_DFL)  # Ctrl+C: the helper just stops
        results: dict[int, Any] = {}
        done: dict[int, Any] | BaseException = results
        try:
            while (k := next_batch()) is not None:
                results[k] = work(k)
        except Exception as exc:  # sent, and raised by the parent
            done = exc
        with os.fdopen(out, "wb") as stream:
            try:
                pickle.dump(done, stream, protocol=pickle.HIGHEST_PROTOCOL)
            except Exception as exc:  # an exception that cannot be pickled: its words
                pickle.dump(RuntimeError(f"in a helper process: {exc!r}"), stream)
        code = 0
    finally:
        os._exit(code)


def _receive(read_end: int, pid: int) -> dict[int, Any] | BaseException | None:
    """What helper `pid` sent (None when it died before sending), once it has exited."""
    with os.fdopen(read_end, "rb") as stream:
        data = stream.read()
    os.waitpid(pid, 0)
    if not data:
        return None
    try:
        sent: dict[int, Any] | BaseException = pickle.loads(data)
    except Exception:  # cut short (killed while sending)
        return None
    return sent


def _stop(pid: int) -> None:
    try:
        os.kill(pid, signal.SIGKILL)
        os.waitpid(pid, 0)
    except (ProcessLookupError, ChildProcessError):
        pass


_POOL_WORK: Callable[[int], Any] | None = None
"""`work`, in a pool's helper: sent once per helper (its initializer), not with every batch."""


def _pool_helper_takes(work: Callable[[int], Any]) -> None:
    global _POOL_WORK
    _POOL_WORK = work


def _pool_batch(k: int) -> Any:
    assert _POOL_WORK is not None
    return _POOL_WORK(k)


def _pooled(work: Callable[[int], R], n_batches: int, jobs: int) -> list[R]:
    from concurrent.futures import ProcessPoolExecutor

    results: list[Any] = [None] * n_batches
    done = [False] * n_batches
    helpers = ProcessPoolExecutor(
        max_workers=jobs - 1, initializer=_pool_helper_takes, initargs=(work,)
    )
    with helpers as pool:
        futures = [pool.submit(_pool_batch, k) for k in range(n_batches)]
        # The helpers take the batches from the front; this process, which would only wait,
        # takes those none has started from the back.
        for k in reversed(range(n_batches)):
            if futures[k].cancel():
                results[k], done[k] = work(k), True
        for k, future in enumerate(futures):
            if not done[k]:
                results[k] = future.result()
    return results
