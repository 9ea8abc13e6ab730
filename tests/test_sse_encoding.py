"""SSE event encoding in `uxlab serve` (orjson, the stdlib for what orjson refuses)."""

from __future__ import annotations

import json

from uxlab.live.sse_sink import json_bytes, sse_bytes


def test_events_are_compact_utf8_json_that_decodes_to_the_same_object():
    data = {"choices": [{"delta": {"content": "héllo ✓"}, "index": 0}], "t": 0.1}
    event = sse_bytes(data)
    assert event.startswith(b"data: {") and event.endswith(b"}\n\n")
    assert json.loads(event[len(b"data: ") : -2].decode()) == data
    assert "héllo ✓".encode() in event  # not \\u-escaped
    assert b", " not in event and b'": ' not in event


def test_named_events_and_plain_text():
    assert sse_bytes("[DONE]") == b"data: [DONE]\n\n"
    assert sse_bytes({"type": "ping"}, "ping") == b'event: ping\ndata: {"type":"ping"}\n\n'


def test_integers_beyond_64_bits_fall_back_to_the_stdlib_exactly():
    assert json_bytes({"n": 2**70}) == b'{"n":1180591620717411303424}'
