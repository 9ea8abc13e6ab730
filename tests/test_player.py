"""Player scheduling logic, checked on a VirtualClock (no real sleeps)."""

from __future__ import annotations

import asyncio

import pytest

from uxlab.errors import UxlabError
from uxlab.player import (
    ChunkTiming,
    HeadlessSink,
    MonotonicClock,
    PlaybackError,
    Player,
    VirtualClock,
)
from uxlab.streams.recording import Chunk, End, ErrorEvent, Header, Meta, Recording


def make_schedule(
    times_ms: list[float], end_ms: float | None = None, text: str = "w "
) -> Recording:
    events = [Chunk(t_ms=t, text=f"{text}{i} ") for i, t in enumerate(times_ms)]
    end_t = end_ms if end_ms is not None else (times_ms[-1] if times_ms else 0.0)
    return Recording(Header(id="sched"), events=events, end=End(t_ms=end_t, finish_reason="stop"))


async def test_chunks_are_handed_at_their_absolute_deadlines():
    clock = VirtualClock(start_ms=1000.0)
    sink = HeadlessSink(clock)
    schedule = make_schedule([200.0, 230.0, 260.5, 400.0], end_ms=410.0)
    log = await Player(schedule, sink, clock).play()
    assert log.t0_ms == 1000.0
    assert [r.scheduled_ms for r in log.records] == [200.0, 230.0, 260.5, 400.0]
    assert [r.handed_ms for r in log.records] == [200.0, 230.0, 260.5, 400.0]
    assert sink.applied_at_ms == [1200.0, 1230.0, 1260.5, 1400.0]
    assert [i for i, _ in sink.applied] == [0, 1, 2, 3]
    assert sink.finished and sink.end is schedule.end and sink.error is None
    assert log.finished_ms == 410.0 and log.cancelled_at_ms is None
    assert log.scheduled_end_ms == 410.0


async def test_explicit_t0_sets_the_send_instant():
    clock = VirtualClock(start_ms=50.0)
    log = await Player(make_schedule([10.0, 20.0]), HeadlessSink(), clock).play(t0_ms=45.0)
    # Deadlines are 55 and 65 on the clock; reported relative to t0.
    assert [r.handed_ms for r in log.records] == [10.0, 20.0]
    assert clock.now_ms() == 65.0


async def test_lateness_does_not_accumulate_over_thousands_of_chunks():
    # Every 7th wake-up is 6 ms late, every other one 0.4 ms late. With accumulated
    # sleeps (sleep(gap)) the error would grow to seconds; with absolute deadlines each
    # chunk is at most as late as its own wake-up.
    def late(n: int, deadline_ms: float) -> float:
        return 6.0 if n % 7 == 0 else 0.4

    clock = VirtualClock(lateness_ms=late)
    times_ms = [100.0 + 10.0 * i for i in range(3000)]
    log = await Player(make_schedule(times_ms), HeadlessSink(), clock).play()
    lateness = [r.handed_ms - r.scheduled_ms for r in log.records]
    assert max(lateness) == pytest.approx(6.0)
    assert lateness[-1] == pytest.approx(0.4) or lateness[-1] == pytest.approx(6.0)
    # The second half is no later than the first half: no drift.
    half = len(lateness) // 2
    assert sum(lateness[half:]) / half == pytest.approx(sum(lateness[:half]) / half, abs=0.05)


async def test_a_slow_sink_delays_only_the_chunks_it_overlaps():
    clock = VirtualClock()

    class SlowSink(HeadlessSink):
        def apply(self, index, chunk):
            super().apply(index, chunk)
            if index == 1:
                clock.advance(25.0)  # this apply takes 25 ms

    log = await Player(make_schedule([10.0, 20.0, 30.0, 40.0, 80.0]), SlowSink(), clock).play()
    # Chunks 2 and 3 were due during the slow apply: handed at once after it, late.
    # Chunk 4 is back on schedule: nothing carried over.
    assert [r.handed_ms for r in log.records] == [10.0, 20.0, 45.0, 45.0, 80.0]


async def test_cancel_mid_stream_stops_at_once_and_logs_where():
    clock = VirtualClock()
    sink = HeadlessSink(clock)
    player = Player(make_schedule([10.0 * i for i in range(1, 11)], end_ms=120.0), sink, clock)

    class Abandoner(HeadlessSink):
        def apply(self, index, chunk):
            sink.apply(index, chunk)
            if index == 3:
                clock.advance(2.0)
                player.cancel()

        def cancel(self):
            sink.cancel()

    player.sink = Abandoner()
    log = await player.play()
    assert [i for i, _ in sink.applied] == [0, 1, 2, 3]
    assert sink.cancelled and not sink.finished
    assert log.cancelled_at_ms == 42.0
    assert log.finished_ms is None and not log.completed
    assert len(log.records) == 4
    player.cancel()  # a second cancel is harmless
    assert log.cancelled_at_ms == 42.0


async def test_cancel_wakes_a_sleeping_player_on_the_real_clock():
    clock = MonotonicClock()
    sink = HeadlessSink()
    # The first chunk is due in 60 s: only cancel() can end this quickly.
    player = Player(make_schedule([60_000.0]), sink, clock)
    task = asyncio.create_task(player.play())
    while not player.playing:
        await asyncio.sleep(0)
    await asyncio.sleep(0.01)
    player.cancel()
    log = await asyncio.wait_for(task, timeout=5)
    assert log.records == [] and sink.cancelled
    assert log.cancelled_at_ms is not None and log.cancelled_at_ms < 60_000.0


async def test_cancel_from_outside_the_player_still_propagates():
    player = Player(make_schedule([60_000.0]), HeadlessSink(), MonotonicClock())
    task = asyncio.create_task(player.play())
    await asyncio.sleep(0.01)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_error_event_ends_the_stream_with_the_error():
    events = [
        Meta(t_ms=1.0, data={"role": "assistant"}),
        Chunk(t_ms=5.0, text="Hel"),
        ErrorEvent(t_ms=9.0, error={"type": "overloaded_error"}),
        Chunk(t_ms=12.0, text="lo"),
    ]
    rec = Recording(Header(id="err"), events=events, end=End(t_ms=13.0))
    clock = VirtualClock()
    sink = HeadlessSink()
    log = await Player(rec, sink, clock).play()
    assert sink.text == "Hel"
    assert sink.finished and sink.error is events[2] and sink.end is None
    assert log.error_at_ms == 9.0 and log.error == {"type": "overloaded_error"}
    assert log.finished_ms is None


async def test_untimed_recording_is_refused_with_a_clear_error():
    rec = Recording(Header(id="plain"), events=[Chunk(t_ms=None, text="x")], end=End(t_ms=None))
    with pytest.raises(PlaybackError, match="'plain': chunk 0 has no t_ms") as info:
        Player(rec, HeadlessSink(), VirtualClock())
    assert isinstance(info.value, UxlabError)


async def test_a_player_plays_once():
    player = Player(make_schedule([1.0]), HeadlessSink(), VirtualClock())
    await player.play()
    with pytest.raises(PlaybackError):
        await player.play()


class PaintingSink(HeadlessSink):
    """Pretends every chunk is queued 3 ms and flushed 3.5 ms after it is applied."""

    def __init__(self, clock):
        super().__init__(clock)
        self.times = {}

    def apply(self, index, chunk):
        super().apply(index, chunk)
        now = self.clock.now_ms()
        self.times[index] = (now + 3.0, now + 3.5)

    def paint_times_ms(self):
        return self.times

    async def wait_painted(self, index, timeout_ms):
        return index in self.times


async def test_paint_times_from_the_sink_land_in_the_log_relative_to_t0():
    clock = VirtualClock(start_ms=500.0)
    log = await Player(make_schedule([10.0, 40.0]), PaintingSink(clock), clock).play()
    assert [(r.queued_ms, r.flushed_ms) for r in log.records] == [(13.0, 13.5), (43.0, 43.5)]
    assert log.measured_ttft_ms() == 13.5
    assert log.measured_itl_ms() == 30.0
    assert log.shown_gaps_ms() == [30.0]


async def test_a_part_of_a_trial_numbers_on_and_leaves_the_sink_unfinished():
    # a chain's later segment: its chunks are the sink's 5th and 6th, and the paint times
    # are read under those numbers; the segment's end is a hold, not the stream's end
    clock = VirtualClock(start_ms=0.0)
    sink, seen = PaintingSink(clock), []
    player = Player(
        make_schedule([10.0, 40.0]), sink, clock, first_index=4, ends_stream=False,
        on_chunk=lambda chunk: seen.append((chunk.text, len(sink.applied))),
    )  # fmt: skip
    log = await player.play()
    assert [i for i, _ in sink.applied] == [4, 5] and [r.index for r in log.records] == [4, 5]
    assert [(r.queued_ms, r.flushed_ms) for r in log.records] == [(13.0, 13.5), (43.0, 43.5)]
    assert seen == [("w 0 ", 0), ("w 1 ", 1)]  # each chunk seen just before the sink has it
    assert log.finished_ms == 40.0 and not sink.finished


def test_shown_ms_falls_back_from_flushed_to_queued_to_handed():
    assert ChunkTiming(0, 10.0, 11.0, 12.0, 13.0).shown_ms == 13.0
    assert ChunkTiming(0, 10.0, 11.0, 12.0, None).shown_ms == 12.0
    assert ChunkTiming(0, 10.0, 11.0).shown_ms == 11.0


async def test_ttft_ignores_empty_and_tool_chunks_and_counts_reasoning():
    events = [
        Chunk(t_ms=5.0, text=""),
        Chunk(t_ms=8.0, text='{"a":1}', channel="tool"),
        Chunk(t_ms=20.0, text="hmm", channel="reasoning"),
        Chunk(t_ms=50.0, text="Hi"),
    ]
    rec = Recording(Header(id="r"), events=events, end=End(t_ms=50.0))
    log = await Player(rec, HeadlessSink(), VirtualClock()).play()
    assert log.measured_ttft_ms() == 20.0
    assert log.measured_itl_ms() is None
    row = log.to_dict()
    assert row["records"][2]["channel"] == "reasoning" and row["schedule_id"] == "r"


async def test_monotonic_clock_never_wakes_early():
    clock = MonotonicClock(spin_ms=1.0)
    for offset_ms in (0.0, 0.3, 2.0, 5.0):
        deadline = clock.now_ms() + offset_ms
        await clock.sleep_until(deadline)
        assert clock.now_ms() >= deadline
    with pytest.raises(ValueError):
        MonotonicClock(spin_ms=-1)


async def test_cancel_before_play_calls_the_play_off_without_touching_the_sink():
    sink = HeadlessSink()
    player = Player(make_schedule([10.0, 20.0]), sink, VirtualClock())
    player.cancel()
    log = await player.play()
    assert log.records == [] and log.cancelled_at_ms == 0.0 and log.finished_ms is None
    assert not sink.cancelled and not sink.finished and sink.applied == []


async def test_meta_events_reach_sinks_that_take_them_at_their_time():
    clock = VirtualClock()

    class MetaSink(HeadlessSink):
        def __init__(self):
            super().__init__(clock)
            self.metas = []

        def apply_meta(self, meta):
            self.metas.append((meta.data["name"], clock.now_ms()))

    events = [Meta(t_ms=4.0, data={"kind": "tool_call", "name": "f"}), Chunk(t_ms=6.0, text="x")]
    rec = Recording(Header(id="m"), events=events, end=End(t_ms=6.0))
    sink = MetaSink()
    log = await Player(rec, sink, clock).play()
    assert sink.metas == [("f", 4.0)] and [r.index for r in log.records] == [0]


async def test_a_meta_event_due_after_the_stop_does_not_hold_the_play_past_it():
    """A timeout (`stop_at_ms`) ends the play at the stop even when the next event is a meta
    the sink would take (before, the player waited for the meta's own time first)."""
    from uxlab.player import HeadlessSink, Player, VirtualClock

    class MetaSink(HeadlessSink):
        def __init__(self, clock):
            super().__init__(clock)
            self.metas: list[Meta] = []

        def apply_meta(self, meta: Meta) -> None:
            self.metas.append(meta)

    rec = Recording(
        Header(id="m"),
        [Chunk(100.0, "a"), Meta(5_000.0, {"kind": "tool_call"}), Chunk(5_100.0, "b")],
        End(5_200.0, "stop"),
    )
    clock = VirtualClock()
    sink = MetaSink(clock)
    log = await Player(rec, sink, clock).play(t0_ms=0.0, stop_at_ms=1_000.0)
    assert log.cancelled_at_ms == pytest.approx(1_000.0)
    assert sink.metas == [] and [r.index for r in log.records] == [0]


@pytest.mark.parametrize("wait", ["spin", "block", "timer"])
async def test_every_wait_of_the_monotonic_clock_never_wakes_early(wait):
    clock = MonotonicClock(wait=wait)
    for offset_ms in (0.0, 0.3, 2.0, 5.0):
        deadline = clock.now_ms() + offset_ms
        await clock.sleep_until(deadline)
        assert clock.now_ms() >= deadline
    assert clock.wait == wait and (clock.spin_ms == 0.0) == (wait == "timer")
    with pytest.raises(ValueError):
        MonotonicClock(wait="busy")


def test_the_clock_wait_can_be_chosen_from_the_environment(monkeypatch):
    monkeypatch.setenv("UXLAB_CLOCK_WAIT", "block")
    assert MonotonicClock().wait == "block"
    monkeypatch.setenv("UXLAB_CLOCK_WAIT", "nonsense")
    assert MonotonicClock().wait == "spin"
