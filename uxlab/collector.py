"""Keep the cyclic garbage collector's long pauses out of the streams a participant watches.

CPython's collector runs a *full* collection (generation 2) now and then; over the study
runner's heap (Textual, the store, the study, every screen so far) one takes tens of ms,
and it runs whenever the allocation counters say so, also while a stream plays: it held
the event loop and a chunk reached the screen that much late (measured in
docs/explanation/timing.md, "Garbage collection").

`CollectorPacing` moves that work to where nothing is timed:

- `settle()` (after start-up and between trials): one full collection, then
  `gc.freeze()`, so the objects alive now are never scanned again by automatic
  collections. Each `settle()` first unfreezes, so what died since the last one (a trial
  screen's widget cycles) is found and freed: nothing leaks;
- `hold()` (a stream starts): only the youngest generation is collected automatically
  (sub-millisecond: it scans objects made since the last young collection); the middle
  and oldest wait;
- `release()` (the stream is over and painted): what survived the young collections
  meanwhile is collected at once (generation 1, a few ms at most, before the questions
  appear), then the collector's own thresholds hold again.

The `gc` module is injected so the logic can be tested without it.
"""

from __future__ import annotations

import gc
import time
from typing import Protocol

HELD_THRESHOLD = 1_000_000_000
"""A collection threshold no counter reaches during a trial: 'not automatically'."""


class GcLike(Protocol):
    """The parts of the `gc` module pacing uses (tests pass a fake)."""

    def collect(self, generation: int = 2) -> int: ...
    def freeze(self) -> None: ...
    def unfreeze(self) -> None: ...
    def get_threshold(self) -> tuple[int, int, int]: ...
    def set_threshold(
        self, threshold0: int, threshold1: int = ..., threshold2: int = ...
    ) -> None: ...
    def isenabled(self) -> bool: ...


class CollectorPacing:
    """Full collections between trials, only young ones during a stream (see module doc)."""

    def __init__(self, collector: GcLike | None = None) -> None:
        self.gc: GcLike = collector if collector is not None else gc
        self._thresholds: tuple[int, int, int] | None = None
        self.settles = 0
        """How many times `settle()` ran."""
        self.last_settle_ms: float | None = None
        """How long the last `settle()` took (ms): a pause where nothing is timed."""

    @property
    def holding(self) -> bool:
        """True between `hold()` and `release()`."""
        return self._thresholds is not None

    def settle(self) -> None:
        """Collect everything now and freeze the survivors (between trials only)."""
        if self.holding:
            self.release()
        started = time.perf_counter_ns()
        self.gc.unfreeze()
        self.gc.collect()
        self.gc.freeze()
        self.last_settle_ms = (time.perf_counter_ns() - started) / 1e6
        self.settles += 1

    def hold(self) -> None:
        """A stream starts: from now on only the youngest generation is collected."""
        if self.holding or not self.gc.isenabled():
            return
        self._thresholds = self.gc.get_threshold()
        self.gc.set_threshold(self._thresholds[0], HELD_THRESHOLD, HELD_THRESHOLD)

    def release(self) -> None:
        """The stream is over: the collector's own thresholds again."""
        if self._thresholds is None:
            return
        thresholds, self._thresholds = self._thresholds, None
        self.gc.collect(1)
        self.gc.set_threshold(*thresholds)
