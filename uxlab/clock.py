"""Clocks for playback: one monotonic time base in milliseconds, and absolute deadlines.

`MonotonicClock` is the real clock (``time.perf_counter_ns``, which is CLOCK_MONOTONIC on
Linux). `sleep_until(t_ms)` waits for an *absolute* instant, so lateness on one wait never
shifts the next deadline. `VirtualClock` advances instantly; tests and simulations use it to
check scheduling logic without real sleeps, optionally adding lateness to chosen waits.
"""

from __future__ import annotations

import asyncio
import os
import time
from collections.abc import Callable
from typing import Protocol, runtime_checkable


@runtime_checkable
class Clock(Protocol):
    """A monotonic time base in milliseconds with absolute-deadline sleeps."""

    def now_ms(self) -> float:
        """The current instant, in ms (arbitrary origin, never decreases)."""
        ...

    async def sleep_until(self, t_ms: float) -> None:
        """Return at (or as soon as possible after) the absolute instant `t_ms`."""
        ...


WAITS = ("spin", "block", "timer")
"""How `MonotonicClock` spends the last `spin_ms` before a deadline (see its docstring)."""


def default_wait(fallback: str = "spin") -> str:
    """``UXLAB_CLOCK_WAIT`` when set to one of `WAITS` (the benchmarks' A/B), else `fallback`
    ("spin" for the one stream of a terminal client; `uxlab serve` asks for "timer")."""
    wait = os.environ.get("UXLAB_CLOCK_WAIT", "").strip().lower()
    return wait if wait in WAITS else fallback


class MonotonicClock:
    """The real clock: CLOCK_MONOTONIC in ms, sleeping on absolute deadlines.

    asyncio timers round their timeout up to the selector's 1 ms grain, so the event loop
    sleeps until `spin_ms` before the deadline and `wait` says how the rest is spent:

    - "spin": yielding to the event loop (`asyncio.sleep(0)`) until the deadline; other
      tasks run meanwhile, but the process burns a core for that time;
    - "block": one blocking `time.sleep` of the rest (nanosecond timer, no CPU); the loop
      is held for at most `spin_ms`, so it suits one stream at a time (the terminal
      client), not a server playing many;
    - "timer": nothing more (the asyncio timer alone; up to ~1 ms late, no CPU).

    `spin_ms=0` is the asyncio timer alone whatever `wait` says.
    """

    def __init__(self, spin_ms: float = 1.0, wait: str | None = None) -> None:
        if spin_ms < 0:
            raise ValueError(f"spin_ms must be >= 0, got {spin_ms}")
        wait = default_wait() if wait is None else wait
        if wait not in WAITS:
            raise ValueError(f"wait must be one of {', '.join(WAITS)}, got {wait!r}")
        self.spin_ms = 0.0 if wait == "timer" else float(spin_ms)
        self.wait = wait

    @staticmethod
    def now_ms() -> float:
        return time.perf_counter_ns() / 1e6

    async def sleep_until(self, t_ms: float) -> None:
        now = time.perf_counter_ns() / 1e6
        remaining_ms = t_ms - now
        if remaining_ms > self.spin_ms:
            await asyncio.sleep((remaining_ms - self.spin_ms) / 1000.0)
        if self.wait == "block":
            rest_ms = t_ms - time.perf_counter_ns() / 1e6
            if rest_ms > 0:
                time.sleep(rest_ms / 1000.0)
        while time.perf_counter_ns() / 1e6 < t_ms:
            await asyncio.sleep(0)

    def __repr__(self) -> str:
        return f"MonotonicClock(spin_ms={self.spin_ms}, wait={self.wait!r})"


LatenessFn = Callable[[int, float], float]
"""(sleep number, deadline ms) -> how many ms late that wake-up should be."""


class VirtualClock:
    """A simulated clock: `sleep_until` jumps time forward at once.

    `lateness_ms(n, deadline_ms)` can make the n-th sleep (0-based) wake up late, to check
    that lateness does not accumulate. `advance(ms)` moves time by hand (e.g. a slow sink).
    """

    def __init__(self, start_ms: float = 0.0, lateness_ms: LatenessFn | None = None) -> None:
        self._now_ms = float(start_ms)
        self._lateness_ms = lateness_ms
        self.sleeps = 0
        """How many times `sleep_until` was awaited."""

    def now_ms(self) -> float:
        return self._now_ms

    def advance(self, ms: float) -> None:
        """Move time forward by `ms` (never backwards)."""
        if ms < 0:
            raise ValueError(f"a clock cannot go back ({ms} ms)")
        self._now_ms += ms

    async def sleep_until(self, t_ms: float) -> None:
        late_ms = self._lateness_ms(self.sleeps, t_ms) if self._lateness_ms else 0.0
        self.sleeps += 1
        self._now_ms = max(self._now_ms, t_ms + late_ms)
        await asyncio.sleep(0)  # a real suspension point, as on the real clock

    def __repr__(self) -> str:
        return f"VirtualClock(now_ms={self._now_ms})"
