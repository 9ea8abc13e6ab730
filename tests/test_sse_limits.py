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


def test_a_read_late_in_a_long_line_costs_what_an_early_one_costs():
    # One 8 MB line in 1 KB reads: a parser that rescans its buffer on every read spends
    # ~65x more on the last reads (8 MB each) than on the first ones (measured); a linear
    # one about the same (within memory effects). CPU time of 512 reads at each end, compared
    # in one run: a loose ratio, never an absolute time.
    piece, n_reads, window = b"z" * 1024, 8192, 512
    parser = SseParser(max_line_chars=len(piece) * n_reads + 10)
    costs = []
    for i in range(n_reads):
        if i % window == 0:
            start = time.process_time()
        parser.feed(piece)
        if i % window == window - 1:
            costs.append(time.process_time() - start)
    first, last = costs[0], costs[-1]
    assert last < 10 * max(first, 1e-4), costs


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
