"""Every importer on hand-built fixtures that follow the tools' documented schemas."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uxlab.streams import Chunk, ErrorEvent, Header, Meta, parse_replay
from uxlab.streams.importers import (
    IMPORTERS,
    ImportFormatError,
    ImportOptions,
    anthropic_events_to_recording,
    import_source,
    openai_chat_events_to_recording,
)
from uxlab.streams.replay_file import dumps_recording
from uxlab.streams.sse import SseEvent


def timed(*events: tuple[float, str | None, str]) -> list[SseEvent]:
    """SSE events from (arrival t_ms, event name, data)."""
    return [SseEvent(name, data, t_ms) for t_ms, name, data in events]


DATA = Path(__file__).parent / "data"


def _by_id(result):
    return {rec.id: rec for rec in result.recordings}


def _round_trip(rec):
    """A recording must survive being written and read back (the replay contract)."""
    text = dumps_recording(rec)
    again = parse_replay(text, allow_truncated=rec.end is None)
    assert dumps_recording(again) == text
    return again


def test_registry_names_every_format():
    assert set(IMPORTERS) == {
        "openai-sse",
        "openai-responses-sse",
        "anthropic-sse",
        "gemini-sse",
        "gemini-interactions-sse",
        "cohere-sse",
        "ollama",
        "genai-perf",
        "aiperf",
        "vllm-bench",
        "llmperf",
        "guidellm",
        "har",
        "cdp",
        "json-chunks",
        "otel",
        "langfuse",
        "bedrock",
    }


# --- openai-sse -------------------------------------------------------------------------


def test_openai_role_prelude_usage_and_done():
    recs = _by_id(import_source("openai-sse", DATA / "openai-sse"))
    rec = recs["chat_usage"]
    first = rec.events[0]
    assert isinstance(first, Meta) and first.data == {"kind": "role", "role": "assistant"}
    assert first.t_ms == pytest.approx(212.4)
    assert all(c.text for c in rec.chunks)  # the prelude is never an empty chunk
    assert rec.chunks[0].t_ms == pytest.approx(388.9)
    assert rec.text == "The capital of France is **Paris**."
    assert rec.end.finish_reason == "stop"
    assert rec.end.usage == {"prompt_tokens": 14, "completion_tokens": 8, "total_tokens": 22}
    assert rec.end.t_ms > rec.chunks[-1].t_ms  # [DONE] came last
    src = rec.header.source
    assert src["kind"] == "import" and src["model"] == "gpt-4o-mini-2024-07-18"
    assert src["origin"] == "chat_usage.sse#request=0"
    assert rec.header.text_source == "recorded"
    _round_trip(rec)


def test_openai_tool_call_deltas_on_tool_channel():
    rec = _by_id(import_source("openai-sse", DATA / "openai-sse"))["tool_call"]
    metas = [e.data for e in rec.events if isinstance(e, Meta)]
    assert {"kind": "tool_call", "index": 0, "id": "call_7Qp", "name": "get_weather"} in metas
    assert {c.channel for c in rec.chunks} == {"tool"}
    args = "".join(c.text for c in rec.chunks)
    assert json.loads(args) == {"city": "Paris", "unit": "c"}
    assert rec.text == "" and rec.end.finish_reason == "tool_calls"


def test_openai_reasoning_content_and_crlf_capture():
    rec = _by_id(import_source("openai-sse", DATA / "openai-sse"))["reasoning_crlf"]
    channels = [c.channel for c in rec.chunks]
    assert channels == ["reasoning"] * 8 + ["content"] * 6
    assert "".join(c.text for c in rec.chunks if c.channel == "reasoning").startswith("Okay,")
    assert rec.text == "2 + 2 = 4."
    gaps = [b.t_ms - a.t_ms for a, b in zip(rec.chunks, rec.chunks[1:], strict=False)]
    assert max(gaps) == pytest.approx(18.0 + 152.5)  # the think->answer stall survives


def test_openai_plain_body_imports_text_with_unknown_times():
    result = import_source("openai-sse", DATA / "openai-sse" / "plain_body.txt")
    (rec,) = result.recordings
    assert rec.text == "Hello! How can I help?"
    assert all(e.t_ms is None for e in rec.events) and rec.end.t_ms is None
    assert not rec.has_timing()
    assert rec.header.source["timing"] == "none"
    assert any("text only" in w for w in result.warnings)
    _round_trip(rec)


def test_openai_mapping_for_the_live_recorder_and_truncation():
    events = timed(
        (10.0, None, '{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}'),
        (20.0, None, '{"choices":[{"index":0,"delta":{"content":"Hi"}}]}'),
        (21.0, None, '{"choices":[{"index":1,"delta":{"content":"other"}}]}'),
    )
    rec = openai_chat_events_to_recording(events, Header(id="live-1"))
    assert rec.truncated and rec.text == "Hi"  # no [DONE]: kept, marked truncated
    assert "index 0" in rec.header.extra["import_notes"][0]
    events += timed((30.0, None, '{"error":{"message":"server overloaded","type":"server_error"}}'))
    rec = openai_chat_events_to_recording(events, Header(id="live-2"))
    assert isinstance(rec.events[-1], ErrorEvent)
    assert rec.end.finish_reason == "error" and rec.end.t_ms == 30.0


# --- anthropic-sse ----------------------------------------------------------------------


def test_anthropic_text_ping_and_usage():
    rec = _by_id(import_source("anthropic-sse", DATA / "anthropic-sse"))["text"]
    kinds = [e.data["kind"] for e in rec.events if isinstance(e, Meta)]
    assert kinds == ["role", "block_start", "ping"]
    assert rec.text == "Hello! Lighthouses use Fresnel lenses."
    assert rec.end.finish_reason == "end_turn"
    assert rec.end.usage == {"input_tokens": 25, "output_tokens": 12}
    assert rec.header.source["model"] == "claude-sonnet-4-5-20250929"
    _round_trip(rec)


def test_anthropic_thinking_and_tool_use():
    rec = _by_id(import_source("anthropic-sse", DATA / "anthropic-sse"))["thinking_tool"]
    by_channel: dict[str, str] = {}
    for c in rec.chunks:
        by_channel[c.channel] = by_channel.get(c.channel, "") + c.text
    assert by_channel["reasoning"] == "The user wants the weather in Paris; call the tool."
    assert json.loads(by_channel["tool"]) == {"city": "Paris"}
    assert "content" not in by_channel
    metas = [e.data for e in rec.events if isinstance(e, Meta)]
    assert {"kind": "tool_call", "index": 1, "id": "toolu_01T", "name": "get_weather"} in metas
    assert {"kind": "signature", "length": 10} in metas
    assert rec.end.finish_reason == "tool_use"


def test_anthropic_mid_stream_overloaded_error():
    rec = _by_id(import_source("anthropic-sse", DATA / "anthropic-sse"))["overloaded"]
    err = rec.events[-1]
    assert isinstance(err, ErrorEvent)
    assert err.error == {"type": "overloaded_error", "message": "Overloaded"}
    assert rec.text == "Sure, here is the first"  # what arrived before the error is kept
    assert rec.end.finish_reason == "error" and rec.end.t_ms == err.t_ms == pytest.approx(2510.0)
    _round_trip(rec)


def test_anthropic_mapping_accepts_type_without_event_name():
    events = timed(
        (5.0, None, '{"type":"message_start","message":{"id":"m","role":"assistant"}}'),
        (
            9.0,
            None,
            '{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"ok"}}',
        ),
        (11.0, None, '{"type":"message_stop"}'),
    )
    rec = anthropic_events_to_recording(events, Header(id="a"))
    assert rec.text == "ok" and rec.end.t_ms == 11.0


# --- genai-perf -------------------------------------------------------------------------


def test_genai_perf_ns_timestamps_and_raw_sse():
    result = import_source("genai-perf", DATA / "genai-perf" / "profile_export.json")
    assert len(result.recordings) == 2
    assert [s.origin for s in result.skipped] == ["profile_export.json#experiment=0&request=2"]
    rec = result.recordings[1]
    assert rec.header.source["origin"] == "profile_export.json#experiment=0&request=1"
    assert rec.header.request["messages"][0]["content"] == "Tell me a fact (1)."
    assert rec.header.source["model"] == "meta-llama/Llama-3.1-8B-Instruct"
    assert isinstance(rec.events[0], Meta) and rec.events[0].t_ms == pytest.approx(180.0)
    assert rec.text == "Cats nap a lot."
    times = [c.t_ms for c in rec.chunks]
    assert times[0] == pytest.approx(431.25)
    assert times[1] - times[0] == pytest.approx(27.5)
    assert rec.end.usage["completion_tokens"] == 5 and rec.end.finish_reason == "stop"


# --- aiperf raw -------------------------------------------------------------------------


def test_aiperf_raw_text_and_packet_responses():
    result = import_source("aiperf", DATA / "aiperf-raw" / "profile_export_raw.jsonl")
    first, second = result.recordings
    assert first.text == "Hi there!" and first.header.text_source == "recorded"
    assert first.chunks[0].t_ms == pytest.approx(601.0)
    assert first.end.finish_reason == "stop"
    assert first.header.request["model"] == "openai/gpt-oss-20b"
    assert first.header.source["origin"] == "profile_export_raw.jsonl#record=0"
    assert second.text == "Hello." and second.end.finish_reason == "length"
    assert second.chunks[1].t_ms - second.chunks[0].t_ms == pytest.approx(23.0)
    assert result.skipped_by_reason() == {"cancelled (RequestCancellationError, code 499)": 1}


# --- vllm-bench -------------------------------------------------------------------------


def test_vllm_bench_gaps_exact_and_generated_text_split():
    (src,) = (DATA / "vllm-bench").glob("*.json")
    result = import_source("vllm-bench", src)
    assert [r.header.source["origin"].split("#")[1] for r in result.recordings] == [
        "request=0",
        "request=1",
        "request=3",
    ]
    assert result.skipped[0].reason.startswith("failed: Bad Request")
    doc = json.loads(src.read_text())
    for rec in result.recordings:
        i = int(rec.header.source["origin"].rsplit("=", 1)[1])
        times = rec.chunk_times_ms()
        assert times[0] == pytest.approx(doc["ttfts"][i] * 1000, abs=1e-9)
        assert list(times[1:] - times[:-1]) == pytest.approx(
            [g * 1000 for g in doc["itls"][i]], abs=1e-9
        )
        assert rec.text == doc["generated_texts"][i]  # the whole text, cut into chunks
        assert len(rec.chunks) == len(doc["itls"][i]) + 1
        assert all(c.text for c in rec.chunks)
        assert rec.header.text_source == "split"
        assert rec.header.source["model"] == "Qwen/Qwen2.5-7B-Instruct"
    # output_lens == chunks for request 0 (8) but not for 1 (11 tokens, 11 chunks) -> both 1
    assert {c.n_tokens for c in result.recordings[0].chunks} == {1}
    assert {c.n_tokens for c in result.recordings[2].chunks} == {1}


def test_vllm_bench_text_option_overrides_generated_text():
    (src,) = (DATA / "vllm-bench").glob("*.json")
    opts = ImportOptions(
        text="one two three four five six seven eight nine ten eleven", text_name="mine.txt"
    )
    rec = import_source("vllm-bench", src, opts).recordings[0]
    assert rec.text == "one two three four five six seven eight"
    assert rec.header.source["text"] == "mine.txt"


# --- llmperf ----------------------------------------------------------------------------


def test_llmperf_synthetic_even_stream_hits_ttft_and_end():
    (src,) = (DATA / "llmperf").glob("*.json")
    result = import_source("llmperf", src)
    assert len(result.recordings) == 4
    assert result.skipped[0].reason == "failed (error_code 429: Too Many Requests)"
    rows = json.loads(src.read_text())
    rec = result.recordings[0]
    assert rec.header.text_source == "synthetic"
    assert rec.header.source["model"] == "meta-llama-Llama-2-7b-chat-hf"
    times = rec.chunk_times_ms()
    assert len(times) == rows[0]["number_output_tokens"] == 150
    assert times[0] == pytest.approx(rows[0]["ttft_s"] * 1000)
    assert times[-1] == rec.end.t_ms == pytest.approx(rows[0]["end_to_end_latency_s"] * 1000)
    gaps = times[1:] - times[:-1]
    assert gaps.max() - gaps.min() < 1e-6  # evenly spread
    assert {c.n_tokens for c in rec.chunks} == {1}
    assert rec.text.startswith("## How a lighthouse works")
    single = result.recordings[-1]
    assert len(single.chunks) == 1 and single.chunks[0].t_ms == pytest.approx(301.0)


# --- limit / select ---------------------------------------------------------------------


def test_limit_and_select():
    (src,) = (DATA / "llmperf").glob("*.json")
    assert len(import_source("llmperf", src, ImportOptions(limit=2)).recordings) == 2
    picked = import_source("llmperf", src, ImportOptions(select=[3, 2]))
    assert [r.header.source["origin"] for r in picked.recordings] == [f"{src.name}#request=3"]
    assert len(picked.skipped) == 1  # request 2 was selected and failed


# --- malformed input --------------------------------------------------------------------


def _write(tmp_path: Path, name: str, text: str) -> Path:
    p = tmp_path / name
    p.write_text(text, encoding="utf-8")
    return p


def test_error_names_file_line_for_bad_json_line(tmp_path):
    good = (DATA / "aiperf-run1" / "profile_export.jsonl").read_text().splitlines()[11]
    p = _write(tmp_path, "profile_export.jsonl", good + "\n{not json\n")
    with pytest.raises(ImportFormatError) as exc:
        import_source("aiperf", p)
    assert str(exc.value).startswith(f"{p}:2: not JSON")


def test_error_names_missing_field(tmp_path):
    rec = json.loads((DATA / "aiperf-run1" / "profile_export.jsonl").read_text().splitlines()[11])
    del rec["metrics"]["ttft"]
    p = _write(tmp_path, "profile_export.jsonl", "\n" + json.dumps(rec) + "\n")
    with pytest.raises(
        ImportFormatError,
        match=r"profile_export.jsonl:2: metrics.time_to_first_token: missing \(expected .*`ttft`",
    ):
        import_source("aiperf", p)


def test_error_names_bad_gap_element(tmp_path):
    rec = json.loads((DATA / "aiperf-run1" / "profile_export.jsonl").read_text().splitlines()[11])
    rec["metrics"]["inter_chunk_latency"]["value"][3] = "fast"
    p = _write(tmp_path, "x.jsonl", json.dumps(rec) + "\n")
    with pytest.raises(
        ImportFormatError, match=r"x.jsonl:1: metrics.inter_chunk_latency.value\[3\]"
    ):
        import_source("aiperf", p)


def test_error_names_sse_event_line_and_field(tmp_path):
    body = (DATA / "openai-sse" / "chat_usage.sse").read_text()
    body = body.replace('{"content":" France"}', '{"content":" France"', 1)
    p = _write(tmp_path, "broken.sse", body)
    line = next(i for i, s in enumerate(body.splitlines(), 1) if '" France"' in s) - 1
    with pytest.raises(ImportFormatError) as exc:
        import_source("openai-sse", p)
    assert str(exc.value).startswith(f"{p}:{line}: data: not JSON")


def test_error_for_partly_timed_capture(tmp_path):
    body = (DATA / "openai-sse" / "chat_usage.sse").read_text()
    body = body.replace(": t_ms=410.600\n", "", 1)
    p = _write(tmp_path, "partly.sse", body)
    with pytest.raises(ImportFormatError, match=r"partly.sse:\d+: t_ms: this event has no"):
        import_source("openai-sse", p)


def test_error_for_missing_vllm_detail_and_llmperf_field(tmp_path):
    p = _write(tmp_path, "summary.json", json.dumps({"mean_ttft_ms": 1.0}))
    with pytest.raises(ImportFormatError, match=r"ttfts: missing .*--save-detailed"):
        import_source("vllm-bench", p)
    rows = [
        {
            "error_code": None,
            "error_msg": "",
            "end_to_end_latency_s": 1.0,
            "number_output_tokens": 3,
        }
    ]
    p = _write(tmp_path, "m_1_2_individual_responses.json", json.dumps(rows))
    with pytest.raises(ImportFormatError, match=r":record 0: ttft_s: missing"):
        import_source("llmperf", p)


def test_error_for_genai_perf_length_mismatch(tmp_path):
    doc = json.loads((DATA / "genai-perf" / "profile_export.json").read_text())
    doc["experiments"][0]["requests"][1]["response_timestamps"].pop()
    p = _write(tmp_path, "profile_export.json", json.dumps(doc))
    with pytest.raises(
        ImportFormatError,
        match=r"experiments\[0\].requests\[1\]: response_outputs: 9 responses for 8",
    ):
        import_source("genai-perf", p)


def test_chunk_extras_do_not_break_the_replay_reader():
    rec = _by_id(import_source("openai-sse", DATA / "openai-sse"))["tool_call"]
    again = _round_trip(rec)
    assert isinstance(again.chunks[0], Chunk) and again.chunks[0].extra == {"tool_index": 0}


def test_vllm_bench_text_shorter_than_chunks_falls_back_with_warning(tmp_path):
    (src,) = (DATA / "vllm-bench").glob("*.json")
    doc = json.loads(src.read_text())
    doc["generated_texts"][0] = "Hi."  # 3 characters for 8 chunks
    p = tmp_path / "short.json"
    p.write_text(json.dumps(doc))
    result = import_source("vllm-bench", p)
    assert result.recordings[0].text.startswith("## How a lighthouse")
    assert result.recordings[0].header.source["text"] == "uxlab neutral text"
    assert result.warnings == [
        "request 0: generated text shorter than its 8 chunks; laid the neutral text over it instead"
    ]
