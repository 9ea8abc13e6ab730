"""Bedrock ConverseStream: boto3 event lines (timed) and the binary event-stream body."""

from __future__ import annotations

import json
import struct
import zlib
from pathlib import Path

import pytest

from uxlab.streams.importers import ImportFormatError, ImportOptions, import_source
from uxlab.streams.importers.bedrock import decode_event_stream
from uxlab.streams.metrics import describe
from uxlab.streams.recording import ErrorEvent, Meta

DATA = Path(__file__).parent / "data" / "bedrock"
TIMED = DATA / "converse_stream_timed.jsonl"
BINARY = DATA / "converse_stream.bin"


def test_timed_lines_give_reasoning_text_tool_call_usage_and_times():
    (rec,) = import_source("bedrock", TIMED).recordings
    assert [(c.channel, c.text) for c in rec.chunks] == [
        ("reasoning", "Height sets the range."),
        ("content", "The higher"),
        ("content", " the lamp, the farther"),
        ("content", " its light reaches."),
        ("tool", '{"height_m": '),
        ("tool", "60}"),
    ]
    call = next(e for e in rec.events if isinstance(e, Meta) and e.data["kind"] == "tool_call")
    assert call.data == {"kind": "tool_call", "index": 2, "id": "tooluse_1", "name": "range_nm"}
    meta = next(e for e in rec.events if isinstance(e, Meta) and e.data["kind"] == "metadata")
    assert meta.data["latency_ms"] == 845
    assert rec.end.finish_reason == "tool_use" and rec.end.usage["outputTokens"] == 31
    d = describe(rec)
    assert d["timing"] == "recorded" and d["ttft_ms"] == 450.8 and d["e2e_ms"] == 851.7


def test_binary_body_decodes_to_the_same_stream_without_times():
    (binary,) = import_source("bedrock", BINARY).recordings
    (timed,) = import_source("bedrock", TIMED).recordings
    assert [(c.channel, c.text) for c in binary.chunks] == [
        (c.channel, c.text) for c in timed.chunks
    ]
    assert all(c.t_ms is None for c in binary.chunks)
    assert describe(binary)["timing"] == "none"
    messages = decode_event_stream(BINARY.read_bytes())
    assert len(messages) == 14 and messages[0][1][":event-type"] == "messageStart"


def test_corrupt_binary_names_the_byte(tmp_path):
    body = bytearray(BINARY.read_bytes())
    first_len = struct.unpack(">I", body[:4])[0]
    body[first_len + 20] ^= 0xFF  # a byte inside the second message
    path = tmp_path / "corrupt.bin"
    path.write_bytes(bytes(body))
    with pytest.raises(
        ImportFormatError, match=rf"corrupt.bin:byte {first_len}: not an AWS event stream"
    ):
        import_source("bedrock", path)


def _message(event_type: str, payload: dict, kind: str = "event") -> bytes:
    def header(name: str, value: str) -> bytes:
        n, v = name.encode(), value.encode()
        return bytes([len(n)]) + n + bytes([7]) + struct.pack(">H", len(v)) + v

    key = ":exception-type" if kind == "exception" else ":event-type"
    headers = header(key, event_type) + header(":message-type", kind)
    body = json.dumps(payload).encode()
    prelude = struct.pack(">II", 12 + len(headers) + len(body) + 4, len(headers))
    msg = prelude + struct.pack(">I", zlib.crc32(prelude)) + headers + body
    return msg + struct.pack(">I", zlib.crc32(msg))


def test_exception_mid_stream_is_an_error_event(tmp_path):
    path = tmp_path / "err.bin"
    path.write_bytes(
        _message("messageStart", {"role": "assistant"})
        + _message("contentBlockDelta", {"delta": {"text": "Hel"}, "contentBlockIndex": 0})
        + _message("modelStreamErrorException", {"message": "boom"}, "exception")
    )
    (rec,) = import_source("bedrock", path).recordings
    assert rec.text == "Hel"
    (error,) = [e for e in rec.events if isinstance(e, ErrorEvent)]
    assert error.error == {"type": "modelStreamErrorException", "message": "boom"}
    assert rec.end.finish_reason == "error"


def test_unknown_event_is_refused_by_name_and_kept_when_tolerant(tmp_path):
    lines = TIMED.read_text().splitlines()
    lines.insert(1, json.dumps({"t_ms": 320.0, "data": {"citationsDelta": {"x": 1}}}))
    path = tmp_path / "new.jsonl"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(
        ImportFormatError,
        match=r"new.jsonl:2: event: unknown ConverseStream event 'citationsDelta'",
    ):
        import_source("bedrock", path)
    (rec,) = import_source("bedrock", path, ImportOptions(tolerant=True)).recordings
    kept = [
        e.data for e in rec.events if isinstance(e, Meta) and e.data["kind"] == "malformed_event"
    ]
    assert kept[0]["event"] == "citationsDelta"


def test_flipped_or_cut_bytes_give_a_clean_error_or_a_stream(tmp_path):
    import numpy as np

    body = BINARY.read_bytes()
    rng = np.random.default_rng(5)
    path = tmp_path / "fuzz.bin"
    for n in range(150):
        mutated = bytearray(body)
        if n % 3 == 0:
            mutated = mutated[: int(rng.integers(1, len(body)))]
        else:
            mutated[int(rng.integers(len(body)))] ^= int(rng.integers(1, 256))
        path.write_bytes(bytes(mutated))
        try:
            import_source("bedrock", path)
        except ImportFormatError as exc:
            assert str(exc).startswith(f"{path}:")
