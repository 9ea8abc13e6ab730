"""Drift-free playback of a schedule to a sink, with a log of what was shown when.

A `Player` walks a schedule (any `Recording` with chunk times) and hands each chunk to a
`Sink` at its absolute deadline ``t0 + chunk.t_ms`` on one monotonic clock; a late wake-up
delays that chunk only, never the ones after it. `cancel()` is abandonment: playback stops
at once and the log says when. For every chunk the log keeps the scheduled time, the time
it was handed to the sink and, when the sink can tell (the terminal view's paint probe),
when the frame holding it was queued and when its bytes were flushed to the terminal.

No Textual here: the terminal view, the SSE server and the headless test sink are sinks.

The protocols, each small and explicit (nothing is forwarded by attribute lookup):

- `Sink`: `apply`, `finish`, `cancel`; a `MetaSink` also takes meta events (`apply_meta`);
- `PaintReporter` / `GlassReporter`: a sink that can tell when chunks reached the screen /
  the glass;
- `Playback`: what plays one schedule for a trial (`play`, `cancel`, `log`): a `Player`, or
  a trial kind's own player made of several (one per part of a trial held after steps).

A player that plays part of a trial (the part between two holds) numbers its chunks
on from `first_index` and, with `ends_stream=False`, leaves the sink unfinished at the end of
its schedule; `on_chunk` sees each chunk just before the sink does (a trial run moves from
waiting to streaming there).
"""

from __future__ import annotations

import asyncio
import itertools
import statistics
from collections.abc import AsyncIterator, Callable, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

from uxlab.clock import Clock, MonotonicClock, VirtualClock
from uxlab.errors import UxlabError
from uxlab.glass.matching import GlassPaint
from uxlab.streams.metrics import is_output
from uxlab.streams.recording import Chunk, End, ErrorEvent, Event, Meta

__all__ = [
    "ChunkTiming",
    "GlassReporter",
    "HeadlessSink",
    "LearntSchedule",
    "MetaSink",
    "MonotonicClock",
    "PaintReporter",
    "Playback",
    "PlaybackError",
    "PlaybackLog",
    "Player",
    "Schedule",
    "Sink",
    "VirtualClock",
    "fill_glass_paints",
]


class PlaybackError(UxlabError):
    """A schedule that cannot be played (e.g. chunks without times)."""


class Schedule(Protocol):
    """What a `Player` plays: a `Recording` with chunk times, or a schedule learnt while it
    plays (`LearntSchedule`, e.g. `uxlab.live.live_schedule.LiveSchedule`)."""

    @property
    def id(self) -> str: ...

    @property
    def events(self) -> list[Event]: ...

    @property
    def chunks(self) -> list[Chunk]: ...

    @property
    def end(self) -> End | None: ...


@runtime_checkable
class LearntSchedule(Protocol):
    """A schedule that learns its events while it plays: the player awaits each one."""

    def known(self, i: int) -> bool:
        """Event `i` is released, or the schedule is over (so it never will be)."""
        ...

    async def wait_event(self, i: int) -> Event | None:
        """Event `i` once it is released; None when the schedule ended before it."""
        ...


@runtime_checkable
class Sink(Protocol):
    """Where chunks go: a terminal view, an SSE response, a test recorder."""

    def apply(self, index: int, chunk: Chunk) -> None:
        """Show one chunk now (O(1); must not block)."""
        ...

    def finish(self, end: End | None, error: ErrorEvent | None) -> None:
        """The stream ended normally (`end`) or with an error event (`error`)."""
        ...

    def cancel(self) -> None:
        """The participant abandoned the stream: stop showing more."""
        ...


@runtime_checkable
class MetaSink(Protocol):
    """A sink that also shows meta events (optional): a role prelude, a tool call's start
    with its name, at their times. Sinks without `apply_meta` never see them."""

    def apply_meta(self, meta: Meta) -> None:
        """Show one meta event now (O(1); must not block)."""
        ...


@runtime_checkable
class PaintReporter(Protocol):
    """A sink that can tell when applied chunks reached the screen (optional)."""

    def paint_times_ms(self) -> dict[int, tuple[float | None, float | None]]:
        """Chunk index -> (frame queued, bytes flushed), absolute ms on the player's clock."""
        ...

    async def wait_painted(self, index: int, timeout_ms: float) -> bool:
        """Wait until chunk `index` (and all before it) has been painted; False on timeout."""
        ...


@runtime_checkable
class GlassReporter(Protocol):
    """A sink that can tell when chunks reached the glass (optional; `uxlab.glass`)."""

    def glass_paints(self) -> Mapping[int, GlassPaint]:
        """Chunk index -> its paint at the glass (absolute ms on the player's clock)."""
        ...


class Playback(Protocol):
    """What plays one schedule for a trial: a `Player`, or a player made of several."""

    @property
    def log(self) -> PlaybackLog | None:
        """The log of the play (None before it began)."""
        ...

    async def play(
        self, t0_ms: float | None = None, stop_at_ms: float | None = None
    ) -> PlaybackLog:
        """Play from `t0_ms` (absolute; default now), stopping at `stop_at_ms` (from t0)."""
        ...

    def cancel(self) -> None:
        """Abandon now (also before the play began: it then returns at once)."""
        ...


@dataclass
class ChunkTiming:
    """When one chunk was due and when it was handed out and shown (ms from t0)."""

    index: int
    scheduled_ms: float
    handed_ms: float
    queued_ms: float | None = None
    """The frame that holds the chunk was composed and queued for output."""
    flushed_ms: float | None = None
    """That frame's bytes were flushed to the terminal (None where no terminal exists)."""
    channel: str = "content"
    n_chars: int = 0
    painted_ms: float | None = None
    """The terminal window showed that frame (the glass probe; None where none ran)."""
    shared_repaint: bool | None = None
    """The glass first showed that frame together with a later one (None: not measured)."""

    @property
    def shown_ms(self) -> float:
        """Best available 'on screen' time: flushed, else queued, else handed."""
        if self.flushed_ms is not None:
            return self.flushed_ms
        if self.queued_ms is not None:
            return self.queued_ms
        return self.handed_ms


@dataclass
class PlaybackLog:
    """Everything the player saw while playing one schedule; times are ms from t0."""

    schedule_id: str
    t0_ms: float
    """The send instant, absolute on `clock`."""
    clock: str
    records: list[ChunkTiming] = field(default_factory=list)
    cancelled_at_ms: float | None = None
    finished_ms: float | None = None
    error_at_ms: float | None = None
    error: dict[str, Any] | None = None
    scheduled_end_ms: float | None = None

    @property
    def completed(self) -> bool:
        return self.finished_ms is not None

    def _visible(self) -> list[ChunkTiming]:
        return [r for r in self.records if is_output(r.channel, r.n_chars)]

    def measured_ttft_ms(self) -> float | None:
        """When the first non-empty content or reasoning chunk was shown (None if none)."""
        visible = self._visible()
        return visible[0].shown_ms if visible else None

    def measured_itl_ms(self) -> float | None:
        """Median gap between successive shown content chunks (None with < 2 chunks)."""
        gaps_ms = self.shown_gaps_ms()
        return statistics.median(gaps_ms) if gaps_ms else None

    def shown_gaps_ms(self) -> list[float]:
        """Gaps between the shown times of successive non-empty content chunks."""
        shown = [r.shown_ms for r in self.records if r.n_chars > 0 and r.channel == "content"]
        return [b - a for a, b in itertools.pairwise(shown)]

    def to_dict(self) -> dict[str, Any]:
        """JSON-serialisable form (records as a list of plain dicts)."""
        return asdict(self)


class HeadlessSink:
    """A sink that only remembers what it was given (tests, benchmarks, simulation)."""

    def __init__(self, clock: Clock | None = None) -> None:
        self.clock = clock
        self.applied: list[tuple[int, Chunk]] = []
        self.applied_at_ms: list[float] = []
        self.end: End | None = None
        self.error: ErrorEvent | None = None
        self.finished = False
        self.cancelled = False

    def apply(self, index: int, chunk: Chunk) -> None:
        self.applied.append((index, chunk))
        if self.clock is not None:
            self.applied_at_ms.append(self.clock.now_ms())

    def finish(self, end: End | None, error: ErrorEvent | None) -> None:
        self.finished = True
        self.end = end
        self.error = error

    def cancel(self) -> None:
        self.cancelled = True

    @property
    def text(self) -> str:
        """The content-channel text shown so far."""
        return "".join(c.text for _, c in self.applied if c.channel == "content")


class Player:
    """Plays one schedule to one sink; see the module docstring.

    `paint_timeout_ms` bounds how long `play()` waits, after the last chunk, for a
    paint-reporting sink to report when that chunk reached the screen. `first_index` is the
    sink's number of the first chunk (the log's records carry the same numbers);
    `ends_stream=False` leaves the sink unfinished when the schedule ends (an error still
    finishes it); `on_chunk` is called with each chunk just before the sink gets it.
    """

    def __init__(
        self,
        schedule: Schedule,
        sink: Sink,
        clock: Clock | None = None,
        paint_timeout_ms: float = 500.0,
        *,
        first_index: int = 0,
        ends_stream: bool = True,
        on_chunk: Callable[[Chunk], None] | None = None,
    ) -> None:
        untimed = [i for i, c in enumerate(schedule.chunks) if c.t_ms is None]
        if untimed:
            raise PlaybackError(
                f"recording {schedule.id!r}: chunk {untimed[0]} has no t_ms "
                f"({len(untimed)} untimed chunks); shape it with a profile first "
                "(e.g. `uxlab replay FILE --itl 30`)"
            )
        self.schedule = schedule
        self.sink = sink
        self.clock: Clock = clock if clock is not None else MonotonicClock()
        self.paint_timeout_ms = paint_timeout_ms
        self.first_index = first_index
        self.ends_stream = ends_stream
        self.on_chunk = on_chunk
        self.log: PlaybackLog | None = None
        self._task: asyncio.Task[Any] | None = None
        self._sleeping = False
        self._woken_by_cancel = False
        self._cancelled = False
        self._done = False

    @property
    def playing(self) -> bool:
        return self.log is not None and not self._done and not self._cancelled

    def cancel(self) -> None:
        """Abandon the stream now: the sink is told at once and nothing more is handed.

        Before `play()` has started, the play is called off: it returns at once with an
        empty log (cancelled at 0 ms) and never touches the sink.
        """
        if self._cancelled or self._done:
            return
        self._cancelled = True
        if self.log is None:
            return
        self.log.cancelled_at_ms = self.clock.now_ms() - self.log.t0_ms
        self.sink.cancel()
        task = self._task
        if task is not None and self._sleeping and task is not asyncio.current_task():
            self._woken_by_cancel = True
            task.cancel()

    def _absorb_own_cancel(self) -> bool:
        """After a CancelledError: True when `cancel()` woke the sleep (the task is
        un-cancelled and plays on to its end), False when the cancel came from outside."""
        if not self._woken_by_cancel:
            return False
        self._woken_by_cancel = False
        task = asyncio.current_task()
        if task is not None:
            task.uncancel()
        return True

    async def _wait_until(self, deadline_ms: float) -> None:
        self._sleeping = True
        try:
            await self.clock.sleep_until(deadline_ms)
        except asyncio.CancelledError:
            if not self._absorb_own_cancel():
                raise
        finally:
            self._sleeping = False

    async def _events(self, t0: float, stop_at_ms: float | None) -> AsyncIterator[Event]:
        """The schedule's events in order.

        A live schedule (one with `wait_event(i)` and `known(i)`, see
        `uxlab.live.live_schedule`) learns its events while playing: each is awaited until
        it is known (None: there are no more). The wait ends early on `cancel()` and at
        `stop_at_ms`, so a silent live model still times out.
        """
        learnt = self.schedule
        if not isinstance(learnt, LearntSchedule):
            for event in self.schedule.events:
                yield event
            return
        i = 0
        while not self._cancelled:
            waiter = asyncio.ensure_future(learnt.wait_event(i))
            timer = None
            if stop_at_ms is not None and not learnt.known(i):
                timer = asyncio.ensure_future(self._stop_at(t0 + stop_at_ms))
            self._sleeping = True
            try:
                await asyncio.wait({waiter} if timer is None else {waiter, timer},
                                   return_when=asyncio.FIRST_COMPLETED)  # fmt: skip
            except asyncio.CancelledError:
                if not self._absorb_own_cancel():
                    waiter.cancel()
                    raise
            finally:
                self._sleeping = False
                if timer is not None and not timer.done():
                    timer.cancel()
            if self._cancelled or not waiter.done():
                waiter.cancel()
                return
            learnt_event = waiter.result()
            if learnt_event is None:
                return
            yield learnt_event
            i += 1

    async def _stop_at(self, deadline_ms: float) -> None:
        """Wait for the stop instant and call the play off there (unless already over)."""
        await self._wait_until(deadline_ms)
        self.cancel()

    async def play(
        self, t0_ms: float | None = None, stop_at_ms: float | None = None
    ) -> PlaybackLog:
        """Play the whole schedule (or until `cancel()`); returns the log.

        `t0_ms` is the send instant on this player's clock (default: now); every chunk is
        due at ``t0_ms + chunk.t_ms``. `stop_at_ms` (ms from t0) cancels the play at that
        instant if it is still running (a trial timeout, a simulated give-up): on the same
        clock and without a second task, so it also holds on a `VirtualClock`.
        """
        if self.log is not None:
            raise PlaybackError(f"recording {self.schedule.id!r}: a Player plays only once")
        t0 = self.clock.now_ms() if t0_ms is None else float(t0_ms)
        end = self.schedule.end
        log = PlaybackLog(
            schedule_id=self.schedule.id,
            t0_ms=t0,
            clock=type(self.clock).__name__,
            scheduled_end_ms=end.t_ms if end is not None else None,
        )
        self.log = log
        if self._cancelled:  # called off before it started
            log.cancelled_at_ms = 0.0
            self._done = True
            return log
        self._task = asyncio.current_task()
        try:
            if await self._hand_events(log, t0, stop_at_ms):
                await self._reach_end(log, t0, stop_at_ms)
        finally:
            self._task = None
            self._done = True
        await self._collect_paint_times(log)
        return log

    async def _hand_events(self, log: PlaybackLog, t0: float, stop_at_ms: float | None) -> bool:
        """Hand each event to the sink at its instant, logging chunks; False if the play
        ended before the schedule did (cancelled, stopped at `stop_at_ms`, or an error)."""
        clock, sink, on_chunk = self.clock, self.sink, self.on_chunk
        # Optional for sinks: e.g. a tool call's name arrives as a meta event.
        apply_meta = sink.apply_meta if isinstance(sink, MetaSink) else None
        index = self.first_index
        async for event in self._events(t0, stop_at_ms):
            if self._cancelled:
                return False
            if event.t_ms is None:
                continue
            if stop_at_ms is not None and event.t_ms > stop_at_ms:
                # Any event due after the stop (a meta too) ends the play at the stop.
                await self._stop_at(t0 + stop_at_ms)
                return False
            if isinstance(event, Meta):
                if apply_meta is not None:
                    await self._wait_until(t0 + event.t_ms)
                    if not self._cancelled:
                        apply_meta(event)
                continue
            await self._wait_until(t0 + event.t_ms)
            if self._cancelled:
                return False
            if isinstance(event, ErrorEvent):
                log.error_at_ms = clock.now_ms() - t0
                log.error = dict(event.error)
                self._done = True
                sink.finish(None, event)
                return False
            log.records.append(
                ChunkTiming(
                    index=index,
                    scheduled_ms=event.t_ms,
                    handed_ms=clock.now_ms() - t0,
                    channel=event.channel,
                    n_chars=len(event.text),
                )
            )
            if on_chunk is not None:
                on_chunk(event)
            sink.apply(index, event)
            index += 1
        return True

    async def _reach_end(self, log: PlaybackLog, t0: float, stop_at_ms: float | None) -> None:
        """After the last event: wait for the schedule's end (or the stop) and finish the sink."""
        end = self.schedule.end  # a live schedule knows its end only now
        log.scheduled_end_ms = end.t_ms if end is not None else None
        if end is not None and end.t_ms is not None and not self._cancelled:
            if stop_at_ms is not None and end.t_ms > stop_at_ms:
                await self._stop_at(t0 + stop_at_ms)
            else:
                await self._wait_until(t0 + end.t_ms)
        if not self._cancelled:
            self._done = True
            log.finished_ms = self.clock.now_ms() - t0
            if self.ends_stream:
                self.sink.finish(end, None)

    async def _collect_paint_times(self, log: PlaybackLog) -> None:
        sink = self.sink
        if not log.records or not isinstance(sink, PaintReporter):
            return
        await sink.wait_painted(log.records[-1].index, self.paint_timeout_ms)
        times = sink.paint_times_ms()
        for rec in log.records:
            queued, flushed = times.get(rec.index, (None, None))
            rec.queued_ms = None if queued is None else queued - log.t0_ms
            rec.flushed_ms = None if flushed is None else flushed - log.t0_ms
        if isinstance(sink, GlassReporter):
            fill_glass_paints(log, sink)


def fill_glass_paints(log: PlaybackLog, reporter: GlassReporter) -> int:
    """Give `log`'s chunks the painted times `reporter` knows now (a glass probe's reports
    can come after the play has ended); returns how many visible chunks still have none."""
    glass = reporter.glass_paints()
    missing = 0
    for rec in log.records:
        paint = glass.get(rec.index)
        if paint is not None:
            rec.painted_ms = paint.painted_ms - log.t0_ms
            rec.shared_repaint = paint.shared
        elif rec.n_chars > 0 and rec.painted_ms is None:
            missing += 1
    return missing
