"""Live schedules against `uxlab serve` over real loopback HTTP: arrivals, shown times and
schedule violations when the live model is slower than the trial's profile, none when it
is faster; both wire formats; an HTTP error ends the trial's stream with that error."""

from __future__ import annotations

import asyncio
import itertools
import json

import pytest
from helpers.recordings import word_stream
from live_servers import serve_in_thread

from uxlab.clock import MonotonicClock
from uxlab.live.live_request import LiveRun, stream_live
from uxlab.live.live_schedule import LiveEndpoint, LiveSchedule
from uxlab.live.serve import ServeConfig, build_app
from uxlab.player import HeadlessSink, Player
from uxlab.shaping import Profile, shape
from uxlab.streams.recording import Recording

WORDS = ["Lights", " turn", " slowly", " over", " the", " grey", " water", " at", " night", "."]
SLOW_SERVER = Profile.from_table({"ttft": "constant:400", "itl": "constant:20"})
FAST_SERVER = Profile.from_table({"ttft": "constant:5", "itl": "constant:1"})


def story() -> Recording:
    return word_stream(WORDS, rid="story", prompt="a story")


def serve(profile: Profile, token: str | None = None):
    config = ServeConfig([story()], lambda r, s: shape(r, profile, seed=s), token=token)
    return serve_in_thread(build_app(config))


async def play_live(endpoint: LiveEndpoint, profile: Profile, seed: int = 3):
    """Send at t0 and play the live schedule headless on the real clock, as a trial does."""
    clock = MonotonicClock()
    live = LiveSchedule(profile, seed)
    sink = HeadlessSink(clock)
    t0 = clock.now_ms()
    request = asyncio.create_task(stream_live(live, endpoint, "a story", t0_ms=t0, clock=clock))
    log = await Player(live, sink, clock).play(t0_ms=t0, stop_at_ms=20_000)
    result = await request
    return live, log, result


@pytest.fixture(scope="module")
def slow_server():
    with serve(SLOW_SERVER) as base:
        yield base


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_a_slower_live_model_is_shown_on_arrival_with_violations(slow_server, api):
    endpoint = LiveEndpoint(api, slow_server + "/v1", "served")
    schedule = Profile.from_table({"ttft": 100, "itl": "constant:10"})
    live, log, result = await play_live(endpoint, schedule)
    assert result.message is None
    assert "".join(c.text for c in live.chunks) == "".join(WORDS)
    # The server holds the first chunk 400 ms from reading the request, which our send
    # (t0) precedes; each next one 20 ms later: every chunk arrives after it was due.
    chunk_arrivals = [a.t_ms for a in live.arrivals if a.kind == "chunk"]
    assert len(chunk_arrivals) == len(WORDS) and chunk_arrivals[0] >= 400
    assert all(b - a >= 0 for a, b in itertools.pairwise(chunk_arrivals))
    assert [s.due_ms for s in live.shown] == [100 + 10 * i for i in range(len(WORDS))]
    assert all(s.violation_ms == pytest.approx(s.arrival_ms - s.due_ms) for s in live.shown)
    v = live.violations()
    assert v["violations_n"] == len(WORDS) and v["violation_max_ms"] >= 300
    # the player handed each chunk no earlier than it arrived and was due
    assert len(log.records) == len(WORDS) and log.completed
    for rec, shown in zip(log.records, live.shown, strict=True):
        assert rec.handed_ms >= shown.arrival_ms and rec.handed_ms >= shown.due_ms
    # The end carries the finish reason and usage of the whole stream (they arrive in
    # different events: OpenAI's usage chunk follows the finish; Anthropic's message_stop
    # comes alone after message_delta).
    assert live.end is not None and live.end.finish_reason in ("stop", "end_turn")
    assert live.end.usage, live.end
    assert live.end.t_ms >= max(a.t_ms for a in live.arrivals if a.kind == "chunk")


async def test_a_faster_live_model_follows_the_schedule_without_violations():
    schedule = Profile.from_table({"ttft": 900, "itl": "constant:20"})
    with serve(FAST_SERVER) as base:
        live, log, _ = await play_live(LiveEndpoint("openai", base + "/v1", "served"), schedule)
    assert live.violations()["violations_n"] == 0
    assert [s.shown_ms for s in live.shown] == [900 + 20 * i for i in range(len(WORDS))]
    assert all(s.arrival_ms < s.due_ms for s in live.shown)
    assert [r.scheduled_ms for r in log.records] == [s.shown_ms for s in live.shown]
    assert all(r.handed_ms >= r.scheduled_ms for r in log.records)
    assert live.end is not None and live.end.finish_reason == "stop"


async def test_the_key_comes_from_the_environment_and_is_never_kept(monkeypatch):
    monkeypatch.setenv("UXLAB_TEST_LIVE_KEY", "sk-live-secret-42")
    schedule = Profile.from_table({"ttft": 50, "itl": "constant:5"})
    with serve(FAST_SERVER, token="sk-live-secret-42") as base:
        ok = LiveEndpoint("openai", base + "/v1", "served", api_key_env="UXLAB_TEST_LIVE_KEY")
        live, log, result = await play_live(ok, schedule)
        assert result.message is None and log.completed
        kept = json.dumps(
            [
                ok.to_dict(),
                live.to_recording().header.__dict__,
                result.record.recording.header.request,
            ]
        )
        assert "sk-live-secret-42" not in kept
        monkeypatch.delenv("UXLAB_TEST_LIVE_KEY")
        live, log, result = await play_live(ok, schedule)
    assert result.message is not None and result.message.startswith("HTTP 401")
    assert log.error is not None and log.error["status"] == 401 and live.chunks == []


async def test_a_timeout_before_the_first_chunk_cancels_the_request(slow_server):
    """The trial's timeout (150 ms) comes well before the model's first chunk (>= 400 ms):
    the play stops there, nothing is shown, and the live request is called off."""
    clock = MonotonicClock()
    live = LiveSchedule(Profile.from_table({"ttft": 100, "itl": "constant:10"}), 0)
    run = LiveRun(live, LiveEndpoint("openai", slow_server + "/v1", "served"), clock)
    sink = HeadlessSink(clock)
    t0 = clock.now_ms()
    run.start("a story", t0)
    log = await Player(live, sink, clock).play(t0_ms=t0, stop_at_ms=150)
    result = await run.finish()
    assert log.cancelled_at_ms is not None and log.cancelled_at_ms >= 150
    assert sink.applied == [] and not log.completed
    assert result is not None and result.message.startswith("cancelled")
    assert run.cancelled_at_ms is not None and live.closed
