"""What a host bounds: code guessing, and the terminal size a participant may ask for.

Each failed code waits `delay_s`, doubled for every further `budget` failures seen by the
whole host in the last `window_s` seconds (capped at `max_delay_s`); a connection is closed
after `per_connection` failures. The clock is injectable, so tests need no sleeping.

`clamp_size` keeps a terminal within `MAX_COLS` x `MAX_ROWS` (a 10000x3000 terminal asked for
over SSH made the program draw 290 MB of screen); the browser host and the SSH host alike.
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

MAX_COLS, MAX_ROWS = 300, 120
"""The largest terminal a participant's program is given (a study needs far less)."""


def clamp_size(cols: Any, rows: Any, min_cols: int = 1, min_rows: int = 1) -> tuple[int, int]:
    """`cols` x `rows` kept within `min_*` .. `MAX_*` (a value that is not a number: 80x24)."""

    def clamp(value: Any, low: int, high: int, default: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int | float) or value != value:
            return default
        return max(low, min(high, int(value)))

    return clamp(cols, min_cols, MAX_COLS, 80), clamp(rows, min_rows, MAX_ROWS, 24)


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
