"""Production traces: OpenTelemetry GenAI spans (OTLP JSON) and Langfuse generations."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from uxlab.streams import read_replay, write_replay
from uxlab.streams.importers import ImportFormatError, import_source
from uxlab.streams.metrics import describe
from uxlab.streams.recording import Meta

DATA = Path(__file__).parent / "data" / "traces"
OTLP = DATA / "otlp_genai_spans.json"
LANGFUSE = DATA / "langfuse_observations.json"


def test_streamed_span_gives_ttft_e2e_text_and_usage():
    result = import_source("otel", OTLP)
    assert result.warnings == ["1 span(s) are not GenAI model calls (not imported)"]
    assert [s.reason for s in result.skipped] == ["error: Overloaded"]
    rec = result.recordings[0]
    d = describe(rec)
    assert d["timing"] == "synthetic"
    assert d["ttft_ms"] == pytest.approx(412.5) and d["e2e_ms"] == pytest.approx(1850.25)
    assert d["itl_ms"]["p50"] is None  # the gaps between are made up
    assert rec.chunks[0].channel == "reasoning"
    assert rec.text == "A tall lighthouse can be seen about 20 nautical miles away."
    assert rec.end.usage == {"input_tokens": 31, "output_tokens": 24}
    assert rec.end.finish_reason == "stop"
    assert len(rec.chunks) == 24 and {c.n_tokens for c in rec.chunks} == {1}
    src = rec.header.source
    assert src["model"] == "gpt-4o-mini-2024-07-18" and src["service"] == "chat-web"
    assert src["origin"].endswith("#trace=5b8efff798038103d269b633813fc60c&span=eee19b7ec3c1b174")


def test_span_without_first_chunk_time_keeps_text_and_end_only(tmp_path):
    rec = import_source("otel", OTLP).recordings[1]
    d = describe(rec)
    assert d["timing"] == "none" and d["ttft_ms"] is None
    assert d["e2e_ms"] == pytest.approx(2345.678)
    assert rec.text == "Fresnel lenses focus the light." and rec.header.text_source == "recorded"
    assert read_replay(write_replay(rec, tmp_path)).text == rec.text


def test_tool_call_parts_are_kept(tmp_path):
    doc = json.loads(OTLP.read_text())
    span = doc["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    for attr in span["attributes"]:
        if attr["key"] == "gen_ai.output.messages":
            attr["value"]["stringValue"] = json.dumps(
                [{"role": "assistant", "parts": [
                    {"type": "tool_call", "id": "call_1", "name": "get_range",
                     "arguments": {"height_m": 60}}], "finish_reason": "tool_call"}]
            )  # fmt: skip
    path = tmp_path / "spans.json"
    path.write_text(json.dumps(doc))
    rec = import_source("otel", path).recordings[0]
    meta = next(e for e in rec.events if isinstance(e, Meta))
    assert meta.data["name"] == "get_range"
    assert [c.text for c in rec.chunks if c.channel == "tool"] == ['{"height_m": 60}']


def test_otlp_json_lines_and_bad_spans(tmp_path):
    doc = json.loads(OTLP.read_text())
    path = tmp_path / "spans.jsonl"
    path.write_text(json.dumps(doc) + "\n" + json.dumps(doc) + "\n")
    assert len(import_source("otel", path).recordings) == 4
    bad = copy.deepcopy(doc)
    span = bad["resourceSpans"][0]["scopeSpans"][0]["spans"][0]
    span["endTimeUnixNano"] = "soon"
    path.write_text(json.dumps(bad))
    with pytest.raises(
        ImportFormatError,
        match=r":1:resourceSpans\[0\]\.scopeSpans\[0\]\.spans\[0\]: endTimeUnixNano: expected",
    ):
        import_source("otel", path)
    span["endTimeUnixNano"] = span["startTimeUnixNano"]  # TTFT after the end
    path.write_text(json.dumps(bad))
    with pytest.raises(ImportFormatError, match=r"time_to_first_chunk: 412\.500 ms is not within"):
        import_source("otel", path)
    path.write_text('{"spans": []}')
    with pytest.raises(ImportFormatError, match="resourceSpans: missing"):
        import_source("otel", path)


def test_langfuse_generations():
    result = import_source("langfuse", LANGFUSE)
    assert result.warnings == ["1 observation(s) are not generations (not imported)"]
    assert [s.reason for s in result.skipped] == ["error: Request timed out"]
    streamed, whole = result.recordings
    d = describe(streamed)
    assert d["ttft_ms"] == 731.0 and d["e2e_ms"] == 2204.0 and d["timing"] == "synthetic"
    assert streamed.text == "On a clear night, roughly twenty nautical miles."
    assert streamed.end.usage == {"input_tokens": 15, "output_tokens": 11}
    assert len(streamed.chunks) == 11
    w = describe(whole)
    assert w["ttft_ms"] is None and w["e2e_ms"] == 3100.0 and w["timing"] == "none"
    assert whole.text == "Lenses and a lamp."


def test_langfuse_bad_times_are_named(tmp_path):
    doc = json.loads(LANGFUSE.read_text())
    doc["data"][0]["completionStartTime"] = "2026-12-01T10:00:09.000Z"
    path = tmp_path / "obs.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(ImportFormatError, match=r"\[0\]: completionStartTime: not between"):
        import_source("langfuse", path)
    del doc["data"][0]["endTime"]
    path.write_text(json.dumps(doc))
    with pytest.raises(ImportFormatError, match=r"\[0\]: endTime: missing"):
        import_source("langfuse", path)
