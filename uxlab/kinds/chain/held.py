"""Holding a chain for questions after chosen steps.

`HeldChainPlayer` plays the flattened schedule as consecutive `Player`s, one per segment
between holds, and *holds* after chosen steps while an `ask(step)` coroutine runs (the
participant answers). The clock of the next step restarts when the last answer is given, as
an agent UI that waits for its user would: every later step is shifted by the time the hold
took (`ChainHold.offset_ms`, real minus scheduled time), while the schedule's own times, the
timeout included, exclude the answering time. Giving up works during a hold too. Its merged
log reads back with `step_logs` like any.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from uxlab.clock import Clock
from uxlab.errors import UxlabError
from uxlab.kinds.chain.schedule import chain_steps, step_marker
from uxlab.kinds.chain.steps import ChainFormatError
from uxlab.player import ChunkTiming, PlaybackLog, Player, Sink
from uxlab.streams.recording import Chunk, End, Event, Recording


@dataclass(frozen=True)
class ChainSegment:
    """The steps played between two holds, as a schedule on the chain's own timeline."""

    first_step: int
    start_ms: float
    """The first step's scheduled start, ms from the send (schedule time)."""
    schedule: Recording
    """The segment's events at their chain times; its end is the held step's end."""
    hold_after: int | None
    """The step after which the chain holds (None: the last segment, ending the chain)."""


def split_at_steps(schedule: Recording, after_steps: Sequence[int]) -> list[ChainSegment]:
    """Cut a chain's flattened schedule (`ChainSchedule.to_recording`) after `after_steps`.

    Steps that are not working steps of this schedule (its final answer, or beyond it) are
    ignored; without any, the one segment is the whole schedule.
    """
    steps = chain_steps(schedule)
    if steps is None:
        raise ChainFormatError(schedule.id, None, "not a chain schedule (no chain steps)")
    holds = sorted({int(s) for s in after_steps if 0 <= int(s) < len(steps) - 1})
    groups: list[list[Event]] = [[] for _ in range(len(holds) + 1)]
    position = 0
    for event in schedule.events:
        marker = step_marker(event) if isinstance(event, Chunk) else None
        if marker is not None:
            position = marker.position
        groups[sum(position > h for h in holds)].append(event)
    firsts = [0, *(h + 1 for h in holds)]
    out: list[ChainSegment] = []
    for k, (first, events) in enumerate(zip(firsts, groups, strict=True)):
        hold = holds[k] if k < len(holds) else None
        end = schedule.end
        if hold is not None:
            end = End(t_ms=float(steps[hold]["end_ms"]), finish_reason="hold")
        part = Recording(dataclasses.replace(schedule.header), events, end)
        out.append(ChainSegment(first, float(steps[first]["start_ms"]), part, hold))
    return out


@dataclass
class ChainHold:
    """One hold of a chain for questions; times are ms from the send (real time)."""

    step: int
    """The step (position) after which the chain held."""
    asked_ms: float
    """The held step was over and the questions were put."""
    resumed_ms: float | None = None
    """The last answer was given: the next step's clock restarted here (None if given up)."""
    offset_ms: float | None = None
    """Real minus scheduled time of every later step (the hold's time and any lateness)."""

    @property
    def held_ms(self) -> float | None:
        """How long the participant took over the questions."""
        return None if self.resumed_ms is None else self.resumed_ms - self.asked_ms

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step,
            "asked_ms": round(self.asked_ms, 3),
            "resumed_ms": None if self.resumed_ms is None else round(self.resumed_ms, 3),
            "held_ms": None if self.held_ms is None else round(self.held_ms, 3),
            "offset_ms": None if self.offset_ms is None else round(self.offset_ms, 3),
        }


def offset_at_ms(holds: Sequence[ChainHold], t_ms: float) -> float:
    """Real minus scheduled time at `t_ms` (ms from the send) given the holds before it."""
    offset = 0.0
    for hold in holds:
        if hold.resumed_ms is not None and hold.offset_ms is not None and hold.resumed_ms <= t_ms:
            offset = hold.offset_ms
    return offset


AskStep = Callable[[int], Awaitable[None]]


class HeldChainPlayer:
    """Plays a chain's flattened schedule, holding after `after_steps` while `ask(step)` runs.

    A `uxlab.player.Playback` like `Player` (`play`, `cancel`, `log`): one merged log with
    times from the send in real time (records' `scheduled_ms` shifted by the holds), and
    `holds` saying when each hold began and ended. `stop_at_ms` (the trial timeout) is on the
    chain's own timeline: answering time does not count.
    """

    def __init__(
        self,
        schedule: Recording,
        sink: Sink,
        clock: Clock,
        after_steps: Sequence[int],
        ask: AskStep,
        paint_timeout_ms: float = 500.0,
        *,
        on_chunk: Callable[[Chunk], None] | None = None,
    ) -> None:
        self.schedule = schedule
        self.sink = sink
        self.clock = clock
        self.ask = ask
        self.paint_timeout_ms = paint_timeout_ms
        self.on_chunk = on_chunk
        self.segments = split_at_steps(schedule, after_steps)
        self.holds: list[ChainHold] = []
        self.log: PlaybackLog | None = None
        self._player: Player | None = None
        self._ask_task: asyncio.Future[Any] | None = None
        self._cancelled_abs_ms: float | None = None
        self._done = False

    @property
    def holding(self) -> bool:
        """The chain is held for questions now."""
        return self._ask_task is not None

    def cancel(self) -> None:
        """Give up now, while a step plays or during a hold."""
        if self._cancelled_abs_ms is not None or self._done:
            return
        self._cancelled_abs_ms = self.clock.now_ms()
        if self._player is not None:
            self._player.cancel()
        elif self.log is not None:
            self.sink.cancel()
            if self._ask_task is not None:
                self._ask_task.cancel()

    async def play(
        self, t0_ms: float | None = None, stop_at_ms: float | None = None
    ) -> PlaybackLog:
        """Play every segment, holding between them (see the class docstring)."""
        if self.log is not None:
            raise UxlabError(f"recording {self.schedule.id!r}: a player plays only once")
        clock = self.clock
        t0 = clock.now_ms() if t0_ms is None else float(t0_ms)
        end = self.schedule.end
        log = PlaybackLog(self.schedule.id, t0, type(clock).__name__)
        log.scheduled_end_ms = end.t_ms if end is not None else None
        self.log = log
        if self._cancelled_abs_ms is not None:
            log.cancelled_at_ms = 0.0
            self._done = True
            return log
        seg_t0 = t0  # the absolute instant of schedule time 0 for the running segment
        try:
            for k, seg in enumerate(self.segments):
                offset = seg_t0 - t0
                player = Player(
                    seg.schedule,
                    self.sink,
                    clock,
                    self.paint_timeout_ms,
                    first_index=len(log.records),  # chunk numbers go on over the segments
                    ends_stream=seg.hold_after is None,  # a hold is not the stream's end
                    on_chunk=self.on_chunk,
                )
                self._player = player
                if self._cancelled_abs_ms is not None:
                    player.cancel()
                part = await player.play(seg_t0, stop_at_ms=stop_at_ms)
                self._player = None
                log.records.extend(_shifted_timing(r, offset) for r in part.records)
                if end is not None and end.t_ms is not None:
                    log.scheduled_end_ms = end.t_ms + offset
                if part.error_at_ms is not None:
                    log.error_at_ms, log.error = part.error_at_ms + offset, part.error
                    break
                if part.cancelled_at_ms is not None:
                    log.cancelled_at_ms = part.cancelled_at_ms + offset
                    break
                if seg.hold_after is None:
                    if part.finished_ms is not None:
                        log.finished_ms = part.finished_ms + offset
                    break
                hold = ChainHold(seg.hold_after, clock.now_ms() - t0)
                self.holds.append(hold)
                task = asyncio.ensure_future(self.ask(seg.hold_after))
                self._ask_task = task
                try:
                    await asyncio.wait({task})
                finally:
                    if not task.done():
                        task.cancel()
                    self._ask_task = None
                if self._cancelled_abs_ms is not None or task.cancelled():
                    at_ms = self._cancelled_abs_ms
                    log.cancelled_at_ms = (clock.now_ms() if at_ms is None else at_ms) - t0
                    break
                error = task.exception()
                if error is not None:
                    raise error
                now = clock.now_ms()
                seg_t0 = now - self.segments[k + 1].start_ms  # the next step starts now
                hold.resumed_ms, hold.offset_ms = now - t0, seg_t0 - t0
        finally:
            self._done = True
            self._player = None
        return log


def _shifted_timing(r: ChunkTiming, offset_ms: float) -> ChunkTiming:
    def move(t: float | None) -> float | None:
        return None if t is None else t + offset_ms

    return dataclasses.replace(
        r,
        scheduled_ms=r.scheduled_ms + offset_ms,
        handed_ms=r.handed_ms + offset_ms,
        queued_ms=move(r.queued_ms),
        flushed_ms=move(r.flushed_ms),
        painted_ms=move(r.painted_ms),
    )
