"""Live studies: a live model's answer re-timed to a trial's profile while it arrives.

A *live schedule* is the playable counterpart of `shape()` for a stream that does not exist
yet. Its timing is drawn up front from the profile and the trial seed; its text comes from
the live chunks as they arrive:

1. *Units*: the live chunks as they are; when the profile re-chunks (`chunk = 3`), each
   live chunk's text split into token-like pieces (`split_pieces`, as `shape` does), all
   arriving with their chunk. Positions (stalls, `error_at`) count one token per unit.
2. *Due times*: `shape()` applied to a placeholder of one-token chunks with the profile
   minus its chunking gives unit *u* its due time `T[u]` (TTFT, gaps, `rho`, stalls and
   an injected error, from the same random streams as `shape`).
3. *Events*: with `chunk`, units are grouped k at a time (k from shaping's chunk-size
   stream), never across a channel change or a meta/error event; an event is due with its
   last unit, shifted so the first event comes at the TTFT, as `shape` does.
4. *Shown*: each event is released to the player when it is complete, due at
   ``shown_ms = max(due_ms, arrival_ms)``. When the live model is slower than the schedule,
   `violation_ms = arrival_ms - due_ms` is that event's schedule violation.

The `Player` plays a `LiveSchedule` on its one path with absolute deadlines: it awaits each
event (`wait_event(i)`) and sleeps until ``t0 + shown_ms``; the request that feeds it is
`uxlab.live.live_request`. All times are ms from t0. Live timing needs a sampled TTFT and
ITL: a live stream has no recorded timing to keep.
"""

from __future__ import annotations

import asyncio
import copy
import dataclasses
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from uxlab.errors import UxlabError
from uxlab.live.clients import APIS
from uxlab.shaping import Profile, shape
from uxlab.shaping.retime import RNG_CHUNK
from uxlab.shaping.tokens import split_pieces
from uxlab.streams.recording import Chunk, End, ErrorEvent, Event, Header, Meta, Recording

TEMPLATE_UNITS = 2048
"""Units in the first timing template; it doubles when a live answer is longer."""
SOURCE_DEPENDENT = ("recorded", "scale", "rate")


class LiveScheduleError(UxlabError):
    """A profile that cannot time a live stream, or a live endpoint that is not usable."""


def live_profile_problem(profile: Profile) -> str | None:
    """Why `profile` cannot time a live stream (None when it can)."""
    if profile.ttft.kind in SOURCE_DEPENDENT:
        return (
            f"ttft {profile.ttft.to_spec()!r} keeps a recorded timing, and a live stream has "
            "none to keep: give a TTFT (e.g. ttft = 800, or a ttft_ms factor)"
        )
    itl = profile.itl
    if itl.kind in SOURCE_DEPENDENT or (itl.kind == "empirical" and itl["source"] == "self"):
        return (
            f"itl {itl.to_spec()!r} keeps recorded gaps, and a live stream has none to keep: "
            'give a sampled ITL (e.g. itl = "lognormal:median=30,sigma=0.5")'
        )
    return None


@dataclass(frozen=True)
class LiveEndpoint:
    """Where a live study sends its prompts. The key is read from `api_key_env` at send
    time and never kept."""

    api: str
    url: str
    model: str
    api_key_env: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.api not in APIS:
            raise LiveScheduleError(f"live api {self.api!r} is not one of {', '.join(APIS)}")

    def to_dict(self) -> dict[str, Any]:
        """What is stored with a trial (no key: only the variable's name)."""
        return {
            "api": self.api,
            "url": self.url,
            "model": self.model,
            "api_key_env": self.api_key_env,
        }


@dataclass
class ShownChunk:
    """One released event of a live schedule: when it was due, arrived and shown."""

    index: int
    channel: str
    n_chars: int
    n_units: int
    due_ms: float
    arrival_ms: float
    shown_ms: float
    """max(due, arrival): the deadline the player was given."""
    violation_ms: float
    """arrival - due when the live model was late, else 0."""


@dataclass
class Arrival:
    """One live event as it arrived (ms from t0): a chunk, meta, error or the end."""

    t_ms: float
    kind: str
    channel: str | None = None
    n_chars: int = 0


@dataclass
class _UnitTimes:
    due_ms: np.ndarray
    error_unit: int | None
    error_ms: float | None
    error: dict[str, Any] | None


def unit_times(profile: Profile, seed: int, n_units: int) -> _UnitTimes:
    """Due times of `n_units` one-token units under `profile` (its chunking left out)."""
    problem = live_profile_problem(profile)
    if problem is not None:
        raise LiveScheduleError(problem)
    chunks: list[Event] = [Chunk(t_ms=float(i), text="x", n_tokens=1) for i in range(n_units)]
    placeholder = Recording(
        Header(id="live-template"), chunks, End(t_ms=float(n_units - 1), finish_reason="stop")
    )
    template = shape(placeholder, dataclasses.replace(profile, chunk=None), seed=seed)
    due = np.array([c.t_ms for c in template.chunks], dtype=float)
    errors = template.errors
    if errors:
        return _UnitTimes(due, len(due), errors[0].t_ms, dict(errors[0].error))
    return _UnitTimes(due, None, None, None)


class LiveSchedule:
    """A schedule learnt while it plays (see the module docstring).

    Feed it with `add_chunk`, `add_meta`, `add_error` and `add_end` (arrival times in ms
    from t0, never decreasing); the player takes `wait_event(i)`. `shown`, `arrivals` and
    `violations()` say what happened; `to_recording()` is the schedule as shown.
    """

    def __init__(
        self, profile: Profile, seed: int, header: Header | None = None, n_units: int = 0
    ) -> None:
        self.profile = profile
        self.seed = int(seed)
        source = header if header is not None else Header(id="live")
        self.header = copy.deepcopy(source)
        self.header.id = f"{source.id}~live{self.seed}"
        self.header.retime = {
            "from": source.id,
            "seed": self.seed,
            "profile": profile.to_table(),
            "live": True,
        }
        self._times = unit_times(profile, self.seed, max(n_units, TEMPLATE_UNITS))
        chunking = profile.chunk
        self._sizes: list[int] | None = None
        if chunking is not None:
            self._sizes = self._draw_sizes(len(self._times.due_ms))
        self.events: list[Event] = []
        self.end: End | None = None
        self.closed = False
        self.cut_by_profile = False
        """True when the profile's `error_at` ended the stream (later arrivals are ignored)."""
        self.shown: list[ShownChunk] = []
        self.arrivals: list[Arrival] = []
        self._open: list[tuple[str, str]] = []  # (text, channel) of the group being filled
        self._open_tool: int | None = None  # the tool call (`tool_index`) of the open group
        self._units_done = 0
        self._shift_ms: float | None = None
        self._last_shown_ms = 0.0
        self._last_arrival_ms = 0.0
        self._waiters: list[asyncio.Future[None]] = []

    def _draw_sizes(self, n: int) -> list[int]:
        """Tokens per event, from shaping's chunk-size random stream (as `shape` draws)."""
        assert self.profile.chunk is not None
        lo, hi = self.profile.chunk.min_tokens, self.profile.chunk.max_tokens
        rng = np.random.default_rng([self.seed, RNG_CHUNK])
        return (rng.integers(lo, hi + 1, size=n) if hi > lo else np.full(n, lo)).tolist()

    def _size(self, event_index: int) -> int:
        assert self._sizes is not None
        if event_index >= len(self._sizes):
            self._sizes = self._draw_sizes(2 * len(self._sizes))
        return self._sizes[event_index]

    # -- what the player sees -------------------------------------------------------------
    @property
    def id(self) -> str:
        return self.header.id

    @property
    def chunks(self) -> list[Chunk]:
        return [e for e in self.events if isinstance(e, Chunk)]

    def known(self, i: int) -> bool:
        """Event `i` is released, or the schedule is over (so it never will be)."""
        return i < len(self.events) or self.closed

    @property
    def awaited(self) -> bool:
        """True while a reader (the player) waits in `wait_event` for an event not yet released."""
        return bool(self._waiters)

    async def wait_event(self, i: int) -> Event | None:
        """Event `i` once it is released; None when the schedule ended before it."""
        while not self.known(i):
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            await waiter
        return self.events[i] if i < len(self.events) else None

    def _wake(self) -> None:
        waiters, self._waiters = self._waiters, []
        for w in waiters:
            if not w.done():
                w.set_result(None)

    # -- feeding ----------------------------------------------------------------------------
    def _arrived(self, t_ms: float, kind: str, channel: str | None = None, n: int = 0) -> float:
        t_ms = max(float(t_ms), self._last_arrival_ms)
        self._last_arrival_ms = t_ms
        self.arrivals.append(Arrival(round(t_ms, 3), kind, channel, n))
        return t_ms

    def _due_ms(self, unit: int) -> float:
        due = self._times.due_ms
        while unit >= len(due):  # a long answer: a longer template (its prefix is the same)
            self._times = unit_times(self.profile, self.seed, 2 * len(due))
            due = self._times.due_ms
        return float(due[unit])

    def add_chunk(
        self,
        text: str,
        arrival_ms: float,
        channel: str = "content",
        n_tokens: int | None = None,
        tool_index: int | None = None,
    ) -> None:
        """A live chunk arrived at `arrival_ms` (from t0); a tool call's argument chunk
        names its call (`tool_index`), and a group never spans two calls."""
        t = self._arrived(arrival_ms, "chunk", channel, len(text))
        if self.closed or not text:
            return
        pieces = [text] if self._sizes is None else split_pieces(text, n_tokens)
        error_unit = self._times.error_unit
        for piece in pieces:
            if self._open and (self._open[-1][1] != channel or self._open_tool != tool_index):
                self._release(t)
            if error_unit is not None and self._units_done + len(self._open) >= error_unit:
                self._profile_error(t)
                return
            self._open.append((piece, channel))
            self._open_tool = tool_index
            target = 1 if self._sizes is None else self._size(len(self.shown))
            if len(self._open) >= target:
                self._release(t)
        self._wake()

    def add_meta(self, data: dict[str, Any], arrival_ms: float) -> None:
        """A meta event (role prelude, ping, tool-call start) arrived; it closes a group."""
        t = self._arrived(arrival_ms, "meta")
        if self.closed:
            return
        self._release(t)
        self.events.append(Meta(t_ms=round(max(t, self._last_shown_ms), 3), data=dict(data)))
        self._wake()

    def add_error(self, error: dict[str, Any], arrival_ms: float) -> None:
        """The live stream failed (HTTP error, mid-stream error, cut, timeout, truncation)."""
        t = self._arrived(arrival_ms, "error")
        if self.closed:
            return
        self._release(t)
        self._close_with_error(max(t, self._last_shown_ms), dict(error))

    def add_end(
        self, arrival_ms: float, finish_reason: str | None = None, usage: Any = None
    ) -> None:
        """The live stream ended normally at `arrival_ms`."""
        t = self._arrived(arrival_ms, "end")
        if self.closed:
            return
        self._release(t)
        self.end = End(
            t_ms=round(max(t, self._last_shown_ms), 3), finish_reason=finish_reason, usage=usage
        )
        self.closed = True
        self._wake()

    def _release(self, complete_ms: float) -> None:
        """Turn the open group into an event, complete (arrived) at `complete_ms`."""
        if not self._open:
            return
        last_unit = self._units_done + len(self._open) - 1
        if self._shift_ms is None:  # the first event comes at the TTFT, as in shape()
            self._shift_ms = self._due_ms(last_unit) - self._due_ms(0)
        due = max(self._due_ms(last_unit) - self._shift_ms, 0.0)
        shown = max(due, complete_ms, self._last_shown_ms)
        text = "".join(p for p, _ in self._open)
        channel = self._open[0][1]
        index = len(self.shown)
        self.shown.append(
            ShownChunk(
                index=index,
                channel=channel,
                n_chars=len(text),
                n_units=len(self._open),
                due_ms=round(due, 3),
                arrival_ms=round(complete_ms, 3),
                shown_ms=round(shown, 3),
                violation_ms=round(max(complete_ms - due, 0.0), 3),
            )
        )
        n_tokens = len(self._open) if self._sizes is not None else None
        chunk = Chunk(t_ms=round(shown, 3), text=text, channel=channel, n_tokens=n_tokens)
        if self._open_tool is not None:
            chunk.extra["tool_index"] = self._open_tool
        self.events.append(chunk)
        self._units_done += len(self._open)
        self._last_shown_ms = shown
        self._open = []

    def _profile_error(self, t_ms: float) -> None:
        """The profile's `error_at` token is reached: the shown stream ends with its error."""
        self._release(t_ms)
        assert self._times.error_ms is not None and self._times.error is not None
        due = self._times.error_ms - (self._shift_ms or 0.0)
        self.cut_by_profile = True
        self._close_with_error(max(due, self._last_shown_ms), dict(self._times.error))

    def _close_with_error(self, t_ms: float, error: dict[str, Any]) -> None:
        t_ms = round(t_ms, 3)
        self.events.append(ErrorEvent(t_ms=t_ms, error=error))
        self.end = End(t_ms=t_ms, finish_reason="error")
        self.closed = True
        self._wake()

    def feed(self, event: Event, arrival_ms: float) -> None:
        """Add one mapped live event (chunk, meta or error) that arrived at `arrival_ms`."""
        if isinstance(event, Chunk):
            tool_index = event.extra.get("tool_index") if event.channel == "tool" else None
            self.add_chunk(event.text, arrival_ms, event.channel, event.n_tokens, tool_index)
        elif isinstance(event, Meta):
            self.add_meta(event.data, arrival_ms)
        elif isinstance(event, ErrorEvent):
            self.add_error(event.error, arrival_ms)

    # -- what happened -------------------------------------------------------------------------
    def violations(self) -> dict[str, float | int]:
        """`violations_n` (events shown late because they arrived late), the max and sum
        of their lateness in ms (0 when none)."""
        late = [s.violation_ms for s in self.shown if s.violation_ms > 0]
        return {
            "violations_n": len(late),
            "violation_max_ms": max(late) if late else 0.0,
            "violation_sum_ms": round(sum(late), 3),
        }

    def to_recording(self) -> Recording:
        """The schedule as released so far (times = shown times), as a Recording."""
        return Recording(copy.deepcopy(self.header), list(self.events), self.end)
