"""Slowing down code guessing: a delay after every failed code, growing with recent failures.

Each failed code waits `delay_s`, doubled for every further `budget` failures seen by the
whole host in the last `window_s` seconds (capped at `max_delay_s`); a connection is closed
after `per_connection` failures. The clock is injectable, so tests need no sleeping.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class FailureLimiter:
    """Counts failed codes host-wide and says how long to wait after the next one."""

    delay_s: float = 1.0
    budget: int = 20
    window_s: float = 60.0
    max_delay_s: float = 30.0
    per_connection: int = 3
    clock: Callable[[], float] = time.monotonic
    _failures_s: deque[float] = field(default_factory=deque)

    def failed(self) -> float:
        """Record a failed code; returns the delay (s) to wait before answering it."""
        now = self.clock()
        self._failures_s.append(now)
        while self._failures_s and self._failures_s[0] < now - self.window_s:
            self._failures_s.popleft()
        doublings = (len(self._failures_s) - 1) // self.budget
        return min(self.max_delay_s, self.delay_s * 2.0**doublings)

    def recent_failures(self) -> int:
        """Failures within the window (as of the last one recorded)."""
        return len(self._failures_s)
