"""What `uxlab serve` is configured with and what it records of each request."""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from uxlab.errors import UxlabError
from uxlab.live.serve_guard import GuardSettings
from uxlab.player import PlaybackLog, Schedule
from uxlab.streams.recording import Recording

SERVED_KEPT = 1000

GIL_SWITCH_S = 0.0005
"""The server's interpreter switch interval (default 5 ms): while a thread shapes a
schedule, the event loop gets the interpreter back within 0.5 ms instead of 5
(docs/performance.md, "Shaping off the event loop")."""


class ServeError(UxlabError):
    """A corpus or profile the server cannot play."""


@dataclass
class Served:
    """One answered request: its index, the seed, the wire and the schedule played."""

    request_index: int
    seed: int
    wire: str
    schedule: Schedule
    """The schedule played: a recording, or (`uxlab serve --upstream`) a live schedule
    learnt while it played."""
    t0_ms: float
    replay_id: str = ""
    labels: dict[str, str] = field(default_factory=dict)
    log: PlaybackLog | None = None
    """The player's log once a stream is over (handed times; `cancelled_at_ms` when the
    client went away)."""


@dataclass
class Pick:
    """What one request gets: its schedule, the seed it was drawn with, and labels."""

    schedule: Recording
    seed: int
    replay_id: str
    labels: dict[str, str] = field(default_factory=dict)
    """Extra response headers (`x-uxlab-<name>`), e.g. the study trial and condition."""


Picker = Callable[[int, "str | None"], Pick]
"""(request index, last user message or None) -> Pick."""


@dataclass
class ServeConfig:
    """What the server plays and how: recordings, a shaping function, seed and token.

    `picker` replaces the default choice (prompt match, else cycle; seed + index), e.g. to
    play a study participant's trial list.
    """

    recordings: list[Recording]
    shape: Callable[[Recording, int], Recording]
    """(recording, seed) -> schedule; e.g. `lambda r, s: shape(r, profile, seed=s)`."""
    seed: int = 0
    token: str | None = None
    cors_origins: list[str] = field(default_factory=list)
    """Browser origins allowed to call the server directly (CORS), e.g. `["*"]`."""
    clock: Any = None
    shape_off_loop: bool = True
    """Choose and shape each request's schedule in a worker thread, not on the event loop
    (False: on the loop, as before; the benchmarks' A/B)."""
    request_index_start: int = 0
    request_index_step: int = 1
    """Request indices are start, start + step, ...: with `--workers N` worker k numbers
    its requests k, k + N, k + 2N, so indices (and seeds) are unique across workers."""
    picker: Picker | None = None
    on_served: Callable[[Served], None] | None = None
    """Called once per request as soon as its schedule is chosen (e.g. to log it)."""
    served: deque[Served] = field(default_factory=lambda: deque(maxlen=SERVED_KEPT))
    upstream: Any = None
    """An `uxlab.live.upstream.UpstreamProxy`: answer from a real model, re-timed."""
    guard: GuardSettings = field(default_factory=GuardSettings)
    """Allowed Host names, body size and time limits (`uxlab.live.serve_guard`); the
    allowed Origins are `cors_origins`."""
