"""`SseParser` is linear in its input and bounds a line (and an event): a stream that never
ends a line ends in a clear error, in the importers and in the recorder, not in minutes of
rescanning and unbounded memory."""

from __future__ import annotations

import time

import httpx
import pytest
from live_servers import serve_in_thread
from starlette.applications import Starlette
from starlette.responses import StreamingResponse
from starlette.routing import Route

from uxlab.live.clients import Prompt
from uxlab.live.record import RecordOptions, record_stream
from uxlab.streams.importers import ImportFormatError, import_source
from uxlab.streams.sse import MAX_LINE_CHARS, SseLimitError, SseParser, parse_sse


def test_a_line_past_the_bound_is_a_clear_error_as_soon_as_it_is_past():
    parser = SseParser(max_line_chars=1000)
    assert parser.feed(b"data: " + b"x" * 900) == []
    with pytest.raises(SseLimitError, match=r"line 1: a line is longer than 1,000 characters"):
        parser.feed(b"x" * 200)


def test_an_event_of_many_short_lines_is_bounded_too():
    parser = SseParser(max_line_chars=1000)
    with pytest.raises(SseLimitError, match="an event's data is longer"):
        parser.feed(b"data: xxxxxxxxxx\n" * 200)


def test_lines_up_to_the_bound_and_keep_alives_pass():
    line = "data: " + "y" * (1000 - 6)
    assert [e.data for e in SseParser(max_line_chars=1000).feed(line + "\n\n")] == ["y" * 994]
    pings = ": ping\n\n" * 10_000 + "data: x\n\n"
    (event,) = parse_sse(pings)
    assert event.data == "x" and len(event.comments) <= 64  # carried comments are bounded


def _feed_one_line(n_bytes: int, piece: int = 64 * 1024) -> float:
    """Seconds to feed one line of `n_bytes` without a line end, in `piece`-byte reads."""
    block = b"z" * piece
    best = float("inf")
    for _ in range(3):
        parser = SseParser(max_line_chars=n_bytes + 10)
        start = time.perf_counter()
        for _ in range(n_bytes // piece):
            parser.feed(block)
        best = min(best, time.perf_counter() - start)
    return best


def test_feeding_a_long_line_scales_linearly():
    # Quadratic rescanning made 8x the input cost ~64x; linear costs ~8x. The bound is loose
    # (a ratio on the same machine in the same run, best of three), never an absolute time.
    # Sizes well past the allocator's small-block effects (below ~8 MB the times are noise).
    small, large = _feed_one_line(8 * 1024 * 1024), _feed_one_line(64 * 1024 * 1024)
    assert large / small < 24, (small, large)


def test_a_capture_with_an_endless_line_is_an_import_error(tmp_path, monkeypatch):
    monkeypatch.setattr("uxlab.streams.sse.MAX_LINE_CHARS", 1000)
    capture = tmp_path / "c.sse"
    capture.write_text(": t_ms=1.0\ndata: " + "x" * 5000, encoding="utf-8")
    with pytest.raises(ImportFormatError, match=r"c.sse:2: a line is longer than 1,000"):
        import_source("openai-sse", capture)


async def test_the_recorder_records_an_endless_line_as_a_malformed_stream(monkeypatch):
    monkeypatch.setattr("uxlab.streams.sse.MAX_LINE_CHARS", 100_000)

    async def endless(request):
        async def body():
            yield b'data: {"choices": [{"delta": {"content": "Hi"}}]}\n\n'
            for _ in range(50):
                yield b"data: " + b"x" * 10_000

        return StreamingResponse(body(), media_type="text/event-stream")

    app = Starlette(routes=[Route("/v1/chat/completions", endless, methods=["POST"])])
    with serve_in_thread(app) as base:
        async with httpx.AsyncClient() as client:
            result = await record_stream(
                client,
                "openai",
                base + "/v1",
                "m",
                Prompt(messages=[{"role": "user", "content": "hi"}]),
                None,
                "endless",
                RecordOptions(),
            )
    assert result.message is not None and result.message.startswith("malformed_stream")
    assert "longer than 100,000 characters" in result.message
    assert result.recording.text == "Hi"  # what arrived before is kept


def test_the_real_bound_is_far_above_any_real_event():
    assert MAX_LINE_CHARS >= 1024 * 1024
