"""The SSE framing parser and the timed capture format."""

from __future__ import annotations

import json

from uxlab.streams.sse import SseParser, format_capture_event, parse_sse


def test_named_events_multiline_data_comments_and_fields():
    body = (
        ": keep-alive\n\n"
        'event: message_start\nid: 7\nretry: 1500\ndata: {"a":\ndata: 1}\n\n'
        "data:no-space\n\n"
        "data\n\n"
        "unknown: ignored\ndata: x\n\n"
    )
    events = parse_sse(body)
    assert [e.event for e in events] == ["message_start", None, None, None]
    first = events[0]
    assert json.loads(first.data) == {"a": 1}
    assert (first.id, first.retry_ms) == ("7", 1500)
    assert first.comments == ["keep-alive"]  # a comment-only block carries over
    assert [e.data for e in events[1:]] == ["no-space", "", "x"]
    # each event starts at its first line, comments that lead into it included
    assert [e.line for e in events] == [1, 9, 11, 13]


def test_crlf_cr_and_bom_give_the_same_events():
    lf = "event: ping\ndata: {}\n\ndata: [DONE]\n\n"
    for body in (lf, lf.replace("\n", "\r\n"), lf.replace("\n", "\r"), "\ufeff" + lf):
        events = parse_sse(body)
        assert [(e.event, e.data) for e in events] == [("ping", "{}"), (None, "[DONE]")]


def test_incremental_bytes_split_anywhere_match_whole_parse():
    body = (
        ': t_ms=10.5\r\ndata: {"text": "h\u00e9llo \u2603"}\r\n\r\n'
        ": t_ms=20\r\nevent: x\r\ndata: 2\r\n\r\n"
    ).encode()
    whole = [(e.t_ms, e.event, e.data) for e in parse_sse(body)]
    for cut in range(1, len(body)):
        parser = SseParser()
        events = parser.feed(body[:cut]) + parser.feed(body[cut:]) + parser.close()
        assert [(e.t_ms, e.event, e.data) for e in events] == whole, cut
    # one byte at a time: a CRLF and a multi-byte character are cut between reads
    parser = SseParser()
    events = []
    for i in range(len(body)):
        events += parser.feed(body[i : i + 1])
    events += parser.close()
    assert [(e.t_ms, e.event, e.data) for e in events] == whole


def test_last_event_without_blank_line_is_kept_on_close():
    events = parse_sse("data: a\n\ndata: b")
    assert [e.data for e in events] == ["a", "b"]


def test_capture_round_trip_and_untimed_events():
    text = format_capture_event(412.7, '{"x": 1}') + format_capture_event(
        430.0, "line1\nline2", event="delta"
    )
    assert text.startswith(": t_ms=412.700\ndata: ")
    assert _timed(text) == [(412.7, None, '{"x": 1}'), (430.0, "delta", "line1\nline2")]
    assert _timed("data: a\n\n") == [(None, None, "a")]


def _timed(text: str) -> list[tuple[float | None, str | None, str]]:
    return [(ev.t_ms, ev.event, ev.data) for ev in parse_sse(text)]


def test_recorder_sidecar_with_keepalive_imports_with_its_own_times(tmp_path):
    """The live recorder's `.sse` sidecar is this capture format; keep-alives do not shift times."""
    from uxlab.streams.importers import import_source
    from uxlab.streams.sse import SseEvent, format_capture

    role = '{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}'
    hello = '{"choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":"stop"}]}'
    wire = [
        SseEvent(t_ms=100.0, event=None, data=role),
        SseEvent(t_ms=300.5, event=None, data=hello),
        SseEvent(t_ms=301.0, event=None, data="[DONE]"),
    ]
    first, rest = format_capture(wire[:1]), format_capture(wire[1:])
    keepalive = ": t_ms=150.000\n: keep-alive\n\n"  # a comment-only block, as proxies send
    path = tmp_path / "rec-1.sse"
    path.write_text(first + keepalive + rest, encoding="utf-8")
    (rec,) = import_source("openai-sse", path).recordings
    assert rec.chunks[0].t_ms == 300.5 and rec.text == "Hello"
    assert rec.end.t_ms == 301.0
