"""Live schedules on injected clocks: due times as shape() draws them, shown = max(due,
arrival), violations, and the one Player path awaiting chunks that have not arrived yet."""

from __future__ import annotations

import asyncio

import pytest
from helpers.recordings import word_stream

from uxlab.live.live_schedule import (
    LiveSchedule,
    LiveScheduleError,
    live_profile_problem,
    unit_times,
)
from uxlab.player import HeadlessSink, Player, VirtualClock
from uxlab.shaping import Profile, shape
from uxlab.streams.recording import Recording

WORDS = ["The", " lighthouse", " keeper", " counted", " ships", ",", " one", " by", " one", "."]


def fed_all_at(schedule: LiveSchedule, texts: list[str], t_ms: float = 0.0) -> None:
    for text in texts:
        schedule.add_chunk(text, t_ms)
    schedule.add_end(t_ms, "stop")


def recording(texts: list[str]) -> Recording:
    return word_stream(texts, rid="words", ttft_ms=0.0, gap_ms=10.0, end_after_ms=10.0)


@pytest.mark.parametrize(
    "table",
    [
        {"ttft": 700, "itl": "lognormal:median=30,sigma=0.5", "rho": 0.3},
        {
            "ttft": "lognormal:median=800,sigma=0.3",
            "itl": "gamma:mean=40,cv=0.5",
            "stalls": "at=4:900",
        },
        {"ttft": 300, "itl": "constant:25", "chunk": "uniform:1,3"},
        {"ttft": 300, "itl": "normal:mean=30,sd=10", "chunk": 2, "headers_ms": 400},
    ],
)
def test_a_stream_that_is_early_shows_exactly_the_shaped_schedule(table):
    """Arriving before every deadline, the live schedule is what shape() makes of the same
    chunks with the same profile and seed: same texts, same times, no violations."""
    profile = Profile.from_table(table)
    shaped = shape(recording(WORDS), profile, seed=11)
    live = LiveSchedule(profile, 11)
    fed_all_at(live, WORDS)
    assert [c.text for c in live.chunks] == [c.text for c in shaped.chunks]
    # equal to the µs the replay format keeps (the template's times are rounded to it)
    assert [c.t_ms for c in live.chunks] == pytest.approx([c.t_ms for c in shaped.chunks], abs=2e-3)
    assert live.violations() == {
        "violations_n": 0,
        "violation_max_ms": 0.0,
        "violation_sum_ms": 0.0,
    }
    assert all(s.shown_ms == s.due_ms for s in live.shown)


def test_seed_decides_the_timing_and_a_longer_template_keeps_its_prefix():
    profile = Profile.from_table({"ttft": 500, "itl": "lognormal:median=30,sigma=0.5", "rho": 0.5})
    a = unit_times(profile, 4, 300).due_ms
    b = unit_times(profile, 4, 1200).due_ms
    assert (a == b[:300]).all()
    assert not (unit_times(profile, 5, 300).due_ms == a).all()
    assert a[0] == 500.0 and (a[1:] >= a[:-1]).all()


def test_late_chunks_are_shown_on_arrival_and_counted_as_violations():
    profile = Profile.from_table({"ttft": 500, "itl": "constant:30"})
    live = LiveSchedule(profile, 0)
    # due: 500, 530, 560, 590, 620
    for text, t_ms in [("a", 100), ("b", 700), ("c", 540), ("d", 700), ("e", 600)]:
        live.add_chunk(text, t_ms)
    live.add_end(800, "stop")
    assert [s.due_ms for s in live.shown] == [500, 530, 560, 590, 620]
    # arrivals never decrease: "c" and "e" were read after "b"/"d" (700 ms)
    assert [s.arrival_ms for s in live.shown] == [100, 700, 700, 700, 700]
    assert [s.shown_ms for s in live.shown] == [500, 700, 700, 700, 700]
    assert [s.violation_ms for s in live.shown] == [0, 170, 140, 110, 80]
    assert all(s.shown_ms >= s.arrival_ms and s.shown_ms >= s.due_ms for s in live.shown)
    assert live.violations() == {
        "violations_n": 4,
        "violation_max_ms": 170.0,
        "violation_sum_ms": 500.0,
    }
    assert live.end is not None and live.end.t_ms == 800


def test_a_late_chunk_delays_only_itself_later_ones_keep_their_deadline():
    live = LiveSchedule(Profile.from_table({"ttft": 200, "itl": "constant:100"}), 0)
    live.add_chunk("a", 450)  # due 200: late by 250
    live.add_chunk("b", 460)  # due 300: late
    live.add_chunk("c", 470)  # due 400: late
    live.add_chunk("d", 480)  # due 500: on time again
    assert [s.shown_ms for s in live.shown] == [450, 460, 470, 500]
    assert [s.violation_ms for s in live.shown][-1] == 0


def test_groups_never_span_a_channel_change_or_a_meta_event():
    live = LiveSchedule(Profile.from_table({"ttft": 100, "itl": "constant:10", "chunk": 3}), 0)
    live.add_chunk("Think", 0, "reasoning")
    live.add_chunk(" hard", 0, "reasoning")
    live.add_chunk("Yes", 5, "content")  # closes the reasoning group at 5 ms
    live.add_meta({"kind": "tool_call", "index": 0, "name": "f"}, 6)
    live.add_chunk("{}", 7, "tool")
    live.add_end(8, "tool_calls")
    texts = [(c.channel, c.text) for c in live.chunks]
    assert texts == [("reasoning", "Think hard"), ("content", "Yes"), ("tool", "{}")]
    assert live.shown[0].arrival_ms == 5  # complete when the next channel began
    kinds = [type(e).__name__ for e in live.events]
    assert kinds == ["Chunk", "Chunk", "Meta", "Chunk"]


def test_profile_error_at_ends_the_shown_stream_at_its_token():
    profile = Profile.from_table({"ttft": 100, "itl": "constant:10", "error_at": 3})
    live = LiveSchedule(profile, 0)
    fed_all_at(live, WORDS)
    assert [c.text for c in live.chunks] == WORDS[:3]
    assert live.cut_by_profile and live.end is not None and live.end.finish_reason == "error"
    assert live.events[-1].t_ms == 130.0  # when the 4th token would have come
    assert len(live.arrivals) == len(WORDS) + 1  # arrivals after the cut are still kept


def test_live_error_ends_the_schedule_with_that_error():
    live = LiveSchedule(Profile.from_table({"ttft": 100, "itl": "constant:10"}), 0)
    live.add_chunk("a", 50)
    live.add_error({"type": "overloaded_error", "message": "Overloaded"}, 300)
    live.add_end(400)  # ignored: the stream is over
    assert live.closed and live.end is not None and live.end.finish_reason == "error"
    assert live.events[-1].t_ms == 300 and live.events[-1].error["type"] == "overloaded_error"


def test_profiles_that_keep_recorded_timing_are_refused_with_the_fix():
    assert live_profile_problem(Profile()) is not None
    problem = live_profile_problem(Profile.from_table({"ttft": 800}))
    assert problem is not None and "itl" in problem and "lognormal" in problem
    with pytest.raises(LiveScheduleError, match="ttft 'recorded'"):
        LiveSchedule(Profile.from_table({"itl": "constant:30"}), 0)
    assert live_profile_problem(Profile.from_table({"ttft": 800, "itl": "constant:30"})) is None


# -- the player, awaiting arrivals on a virtual clock -------------------------------------------
async def scripted_arrivals(
    live: LiveSchedule, clock: VirtualClock, script: list[tuple[float, str]], end_ms: float
) -> None:
    """Deliver chunks at scripted times (ms from t0 = 0): each time the player has run out
    of known events, move the virtual clock to the next arrival (if that is later) and
    push it."""
    for t_ms, text in [*script, (end_ms, "")]:
        while not live.awaited and not live.closed:  # the player is not waiting yet
            await asyncio.sleep(0)
        if clock.now_ms() < t_ms:
            clock.advance(t_ms - clock.now_ms())
        if text:
            live.add_chunk(text, t_ms)
        else:
            live.add_end(t_ms, "stop")


async def test_player_waits_for_each_arrival_and_keeps_absolute_deadlines():
    clock = VirtualClock()
    live = LiveSchedule(Profile.from_table({"ttft": 500, "itl": "constant:30"}), 0)
    sink = HeadlessSink(clock)
    player = Player(live, sink, clock)
    script = [(100.0, "a"), (900.0, "b"), (905.0, "c"), (910.0, "d"), (1500.0, "e")]
    feeder = asyncio.create_task(scripted_arrivals(live, clock, script, 1600.0))
    log = await player.play(t0_ms=0.0)
    await feeder
    # due 500, 530, 560, 590, 620 -> shown max(due, arrival)
    assert sink.applied_at_ms == [500.0, 900.0, 905.0, 910.0, 1500.0]
    assert [r.handed_ms for r in log.records] == sink.applied_at_ms
    assert [r.scheduled_ms for r in log.records] == [s.shown_ms for s in live.shown]
    assert sink.text == "abcde" and sink.finished and log.finished_ms == 1600.0
    assert log.scheduled_end_ms == 1600.0
    assert live.violations()["violations_n"] == 4


async def test_abandoning_while_waiting_for_the_first_chunk_stops_at_once():
    clock = VirtualClock()
    live = LiveSchedule(Profile.from_table({"ttft": 500, "itl": "constant:30"}), 0)
    sink = HeadlessSink(clock)
    player = Player(live, sink, clock)
    task = asyncio.create_task(player.play(t0_ms=0.0))
    while not live.awaited:
        await asyncio.sleep(0)
    clock.advance(1200)
    player.cancel()
    log = await task
    assert log.cancelled_at_ms == 1200 and sink.cancelled and sink.applied == []


async def test_timeout_while_the_live_model_is_silent():
    clock = VirtualClock()
    live = LiveSchedule(Profile.from_table({"ttft": 500, "itl": "constant:30"}), 0)
    live.add_chunk("a", 10)
    sink = HeadlessSink(clock)
    log = await Player(live, sink, clock).play(t0_ms=0.0, stop_at_ms=3000)
    assert sink.text == "a" and log.cancelled_at_ms == 3000 and not log.completed
