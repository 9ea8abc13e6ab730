"""Streams that were refused as "an API uxlab does not map": Ollama's native NDJSON (server
times from `created_at`), Cohere v2 chat and Gemini Interactions, and logs of several
streams in one file."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uxlab.streams import read_replay, write_replay
from uxlab.streams.importers import ImportFormatError, ImportOptions, import_source
from uxlab.streams.importers.ollama import created_at_ns
from uxlab.streams.metrics import describe
from uxlab.streams.recording import Meta
from uxlab.streams.stream_arrays import server_decode_rate
from uxlab.streams.tool_calls import tool_calls

OLLAMA = Path(__file__).parent / "data" / "ollama"


def _lines(path: Path) -> list[dict]:
    return [json.loads(x) for x in path.read_text().splitlines() if x.strip()]


# --- Ollama -----------------------------------------------------------------------------


def test_created_at_keeps_nanoseconds_and_offsets():
    assert created_at_ns("1970-01-01T00:00:01.000000007Z") == 1_000_000_007
    assert created_at_ns("1970-01-01T01:00:01.5+01:00") == 1_500_000_000
    assert created_at_ns("2023-08-04T08:52:19.385406455-07:00") == (
        created_at_ns("2023-08-04T15:52:19.385406455Z")
    )
    assert created_at_ns("yesterday") is None


def test_generate_stream_is_timed_by_the_server_from_its_own_start():
    (rec,) = import_source("ollama", OLLAMA / "generate_thinking.ndjson").recordings
    objects = _lines(OLLAMA / "generate_thinking.ndjson")
    last = objects[-1]
    start_ns = created_at_ns(last["created_at"]) - last["total_duration"]
    expected = [(created_at_ns(o["created_at"]) - start_ns) / 1e6 for o in objects[:-1]]
    assert [c.t_ms for c in rec.chunks] == pytest.approx(expected, abs=1e-9)
    assert rec.end.t_ms == pytest.approx(last["total_duration"] / 1e6, abs=1e-9)
    assert rec.header.clock["t0"] == "server_request_start"
    assert rec.header.source["api"] == "ollama.generate" and rec.header.source["model"] == (
        "qwen3:0.6b"
    )
    assert [c.channel for c in rec.chunks] == ["reasoning"] * 8 + ["content"] * 9
    assert rec.text == "Fog horns sound low notes that carry far."
    # eval_count equals the output objects: a token each; the server's rate is kept
    assert {c.n_tokens for c in rec.chunks} == {1}
    assert rec.end.usage["eval_count"] == 17 and rec.end.finish_reason == "stop"
    rate = last["eval_count"] / last["eval_duration"] * 1e9
    assert describe(rec)["server_decode_tokens_per_s"] == pytest.approx(rate)
    assert server_decode_rate(rec.end.usage) == pytest.approx(rate)
    # TTFT is the server's: load and prompt evaluation before the first token
    assert describe(rec)["ttft_ms"] > (last["load_duration"] + last["prompt_eval_duration"]) / 1e6


def test_chat_tool_call_is_one_whole_named_call():
    (rec,) = import_source("ollama", OLLAMA / "chat_tool_call.ndjson").recordings
    (call,) = tool_calls(rec)
    assert (call.name, call.parsed_arguments(), call.complete) == (
        "get_weather",
        {"city": "Oslo", "unit": "C"},
        True,
    )
    assert rec.text == "Let me check." and rec.header.source["api"] == "ollama.chat"
    roles = [e.data for e in rec.events if isinstance(e, Meta) and e.data["kind"] == "role"]
    assert roles == [{"kind": "role", "role": "assistant"}]  # once, not per object


def test_client_times_win_and_the_server_times_are_kept_beside_them():
    (server,) = import_source("ollama", OLLAMA / "chat_tool_call.ndjson").recordings
    (client,) = import_source("ollama", OLLAMA / "chat_client_timed.jsonl").recordings
    arrivals = [x["t_ms"] for x in _lines(OLLAMA / "chat_client_timed.jsonl")]
    content = [c for c in client.chunks if c.channel == "content"]
    assert [c.t_ms for c in content] == arrivals[:4]
    assert [c.extra["server_t_ms"] for c in content] == pytest.approx(
        [c.t_ms for c in server.chunks if c.channel == "content"], abs=1e-6
    )
    assert client.header.clock["t0"] == "request_sent"


def test_stream_without_its_last_object_is_text_only_and_truncated():
    result = import_source("ollama", OLLAMA / "generate_truncated.ndjson")
    (rec,) = result.recordings
    assert rec.end is None and all(c.t_ms is None for c in rec.chunks)
    assert any("imported text only" in w for w in result.warnings)
    assert any("without its last object" in w for w in result.warnings)


def test_ollama_error_line_and_bad_times_are_named(tmp_path):
    objects = _lines(OLLAMA / "chat_tool_call.ndjson")
    path = tmp_path / "err.ndjson"
    path.write_text(json.dumps(objects[0]) + "\n" + json.dumps({"error": "model crashed"}) + "\n")
    (rec,) = import_source("ollama", path).recordings
    assert rec.errors[0].error == {"message": "model crashed"}
    assert rec.end.finish_reason == "error"
    objects[1]["created_at"] = "later"
    bad = tmp_path / "bad.ndjson"
    bad.write_text("".join(json.dumps(o) + "\n" for o in objects))
    with pytest.raises(ImportFormatError) as exc:
        import_source("ollama", bad)
    assert str(exc.value).startswith(f"{bad}:2: created_at:")


def test_ollama_recording_round_trips(tmp_path):
    (rec,) = import_source("ollama", OLLAMA / "chat_client_timed.jsonl").recordings
    again = read_replay(write_replay(rec, tmp_path))
    assert [c.extra for c in again.chunks] == [c.extra for c in rec.chunks]


# --- Cohere v2 and Gemini Interactions over SSE --------------------------------------------


def _sse(events) -> str:
    out = []
    for k, (name, data) in enumerate(events):
        out.append(f": t_ms={100 + 10 * k:.3f}\nevent: {name}\ndata: {json.dumps(data)}\n\n")
    return "".join(out)


def _cohere(kind, message=None, **rest):
    body = {"type": kind, **rest}
    if message is not None:
        body["delta"] = {"message": message}
    return (kind, body)


def test_cohere_sse_capture(tmp_path):
    tool = {"id": "c1", "type": "function", "function": {"name": "weather", "arguments": ""}}
    piece = {"function": {"arguments": '{"c":1}'}}
    end = {"finish_reason": "TOOL_CALL", "usage": {"tokens": {"output_tokens": 9}}}
    events = [
        _cohere("message-start", {"role": "assistant"}, id="m1"),
        _cohere("tool-plan-delta", {"tool_plan": "Hm."}),
        _cohere("tool-call-start", {"tool_calls": tool}, index=0),
        _cohere("tool-call-delta", {"tool_calls": piece}, index=0),
        _cohere("tool-call-end", index=0),
        ("message-end", {"type": "message-end", "delta": end}),
    ]
    path = tmp_path / "cohere.sse"
    path.write_text(_sse(events) + ": t_ms=151\ndata: [DONE]\n\n")
    (rec,) = import_source("cohere-sse", path).recordings
    assert [(c.name, c.parsed_arguments(), c.complete) for c in tool_calls(rec)] == [
        ("weather", {"c": 1}, True)
    ]
    assert rec.chunks[0].channel == "reasoning" and rec.chunks[0].extra["tool_plan"] is True
    assert rec.end.finish_reason == "TOOL_CALL" and rec.end.t_ms == 150.0
    assert describe(rec)["ttfo_ms"] == 110.0 and describe(rec)["ttft_ms"] == 110.0


def test_cohere_unknown_event_is_refused_by_name(tmp_path):
    path = tmp_path / "c.sse"
    path.write_text(_sse([("citation-generation", {"type": "citation-generation"})]))
    with pytest.raises(ImportFormatError) as exc:
        import_source("cohere-sse", path)
    assert "unknown Cohere event 'citation-generation'" in str(exc.value)
    (rec,) = import_source("cohere-sse", path, ImportOptions(tolerant=True)).recordings
    assert rec.events[0].data["kind"] == "malformed_event"


def _step(kind, index=None, **rest):
    return {"event_type": kind, **({} if index is None else {"index": index}), **rest}


def test_gemini_interactions_sse_capture(tmp_path):
    call = {"type": "function_call", "id": "f1", "name": "getWeather", "arguments": {}}
    summary = {"type": "thought_summary", "content": {"type": "text", "text": "Think."}}
    done = {"status": "requires_action", "usage": {"total_output_tokens": 7}}
    events = [
        _step("interaction.created", interaction={"id": "i1", "model": "gemini-x"}),
        _step("step.start", 0, step={"type": "thought"}),
        _step("step.delta", 0, delta=summary),
        _step("step.stop", 0),
        _step("step.start", 1, step=call),
        _step("step.delta", 1, delta={"type": "arguments_delta", "arguments": '{"city":'}),
        _step("step.delta", 1, delta={"type": "arguments_delta", "arguments": '"Oslo"}'}),
        _step("step.stop", 1),
        _step("interaction.completed", interaction=done),
    ]
    path = tmp_path / "interactions.sse"
    done_event = ": t_ms=200\nevent: done\ndata: [DONE]\n\n"
    body = _sse([(e["event_type"], e) for e in events]) + done_event
    path.write_text(body)
    (rec,) = import_source("gemini-interactions-sse", path).recordings
    assert [(c.name, c.id, c.parsed_arguments()) for c in tool_calls(rec)] == [
        ("getWeather", "f1", {"city": "Oslo"})
    ]
    assert "".join(c.text for c in rec.chunks if c.channel == "reasoning") == "Think."
    assert rec.end.finish_reason == "requires_action" and rec.header.source["model"] == "gemini-x"


# --- JSON logs of several streams; the refusal names what it saw ------------------------------


def test_a_log_of_several_streams_is_split_into_recordings(tmp_path):
    start = {"type": "message_start", "message": {"role": "assistant", "content": []}}
    text = {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": "x"}}
    stop = {"type": "message_stop"}
    path = tmp_path / "agent.jsonl"
    path.write_text("".join(json.dumps(o) + "\n" for o in [start, text, stop] * 3))
    result = import_source("json-chunks", path)
    assert [r.id for r in result.recordings] == ["agent-s1", "agent-s2", "agent-s3"]
    assert [r.header.source["origin"] for r in result.recordings][1] == (
        "agent.jsonl#request=0&stream=1"
    )
    assert all(r.text == "x" and r.end is not None for r in result.recordings)


def test_unknown_objects_refusal_names_the_line_count_and_the_first_object(tmp_path):
    path = tmp_path / "other.jsonl"
    path.write_text("".join(json.dumps({"type": "weird", "n": k}) + "\n" for k in range(40)))
    result = import_source("json-chunks", path)
    (skip,) = result.skipped
    assert skip.reason.startswith("40 line(s) of an API uxlab does not map: its `type` 'weird'")
    assert 'the first begins \'{"type": "weird", "n": 0}\'' in skip.reason
    ollama = import_source("json-chunks", OLLAMA / "chat_tool_call.ndjson")
    assert "--from ollama" in ollama.skipped[0].reason
