"""Real browser captures: headless Chromium against `uxlab serve` (committed, no browser here).

`benchmarks/browser_capture.py` made `tests/data/chromium-*/`: a page POSTed two streaming
requests with `fetch()` (OpenAI chat, then Anthropic messages), Chromium's DevTools
Protocol `Network` events were logged, a HAR was assembled from them, and what the server
was told to send is in `served/` (`uxlab shape` with the seed it named). These tests read
the files only: what the browser saw must carry the served text, and its times must follow
the served schedule loosely (order and lower bounds, never absolute times).
"""

from __future__ import annotations

import json
from itertools import pairwise
from pathlib import Path

import pytest

from uxlab.streams import read_replay
from uxlab.streams.importers import import_source
from uxlab.streams.metrics import describe
from uxlab.streams.recording import Meta, Recording

FOLDER = Path(__file__).parent / "data" / "chromium-156.0.8078.114"
CDP_LOG = FOLDER / "chat_page_network.jsonl"
HAR = FOLDER / "chat_page.har"
STALL_BEFORE = {6: 450.0, 12: 200.0}  # benchmarks/browser_capture.py's --stalls


def _last_user(rec: Recording) -> str:
    return rec.header.request["messages"][-1]["content"]


@pytest.fixture(scope="module")
def served() -> dict[str, Recording]:
    """The served schedules by their prompt (the server picked the recording by it)."""
    schedules = [read_replay(p) for p in sorted((FOLDER / "served").glob("*.jsonl"))]
    return {_last_user(s): s for s in schedules}


@pytest.fixture(scope="module")
def captured() -> list[Recording]:
    result = import_source("cdp", CDP_LOG)
    assert not result.skipped and not result.warnings  # page, preflights: no stream, no noise
    return result.recordings


def test_real_cdp_log_gives_each_fetch_stream_with_the_served_text(captured, served):
    assert [r.header.source["api"] for r in captured] == ["openai", "anthropic"]
    for rec in captured:
        schedule = served[_last_user(rec)]
        assert rec.text == schedule.text and rec.text
        assert rec.header.source["timing"] == "recorded: browser arrival (Network.dataReceived)"
        assert rec.header.request["stream"] is True
        assert rec.end is not None and rec.end.finish_reason in ("stop", "end_turn")
        assert len(rec.chunks) == len(schedule.chunks)


def test_browser_arrival_times_are_monotonic_and_never_before_the_schedule(captured, served):
    for rec in captured:
        schedule = served[_last_user(rec)]
        times = [e.t_ms for e in rec.events]
        assert all(b >= a for a, b in pairwise(times))
        # the browser's zero (fetch() called) is before the server's (request body read), so
        # no event can arrive before its scheduled time; how much later is load, not checked
        for got, sent in zip(rec.chunks, schedule.chunks, strict=True):
            assert got.t_ms >= sent.t_ms
        assert rec.end.t_ms >= schedule.end.t_ms
        d, planned = describe(rec), describe(schedule)
        assert d["timing"] == "recorded" and d["ttft_ms"] >= planned["ttft_ms"]


def _longest(gaps: list[float], n: int) -> list[int]:
    """The chunk indices after the n longest gaps, longest first."""
    return [k + 1 for k in sorted(range(len(gaps)), key=gaps.__getitem__, reverse=True)[:n]]


def test_browser_gaps_keep_the_served_order(captured, served):
    """The two stalls are the two longest gaps in the browser too, the longer one first."""
    stalls_longest_first = sorted(STALL_BEFORE, key=STALL_BEFORE.__getitem__, reverse=True)
    for rec in captured:
        schedule = served[_last_user(rec)]
        planned = [b.t_ms - a.t_ms for a, b in pairwise(schedule.chunks)]
        gaps = [b.t_ms - a.t_ms for a, b in pairwise(rec.chunks)]
        assert _longest(planned, 2) == stalls_longest_first
        assert _longest(gaps, 2) == stalls_longest_first
        assert describe(rec)["stalls"]["longest_ms"] == pytest.approx(max(gaps))


def test_har_from_the_same_session_has_the_text_and_the_end_but_no_event_times(captured, served):
    result = import_source("har", HAR)
    assert not result.skipped
    for rec, from_cdp in zip(result.recordings, captured, strict=True):
        schedule = served[_last_user(rec)]
        assert rec.text == from_cdp.text == schedule.text
        assert all(c.t_ms is None for c in rec.chunks)
        first_byte = rec.events[0]
        assert isinstance(first_byte, Meta) and first_byte.data == {"kind": "first_byte"}
        d = describe(rec)
        assert d["timing"] == "none" and d["ttft_ms"] is None
        # HAR zero is the start of `send` (after the preflight and the connection): still
        # before the server read the body, so the end cannot come before the served end
        assert first_byte.t_ms < d["e2e_ms"] and d["e2e_ms"] >= schedule.end.t_ms
        assert rec.header.source["browser"].startswith("Chromium ")
    har = json.loads(HAR.read_text())
    assert har["log"]["browser"]["version"] == FOLDER.name.removeprefix("chromium-")
