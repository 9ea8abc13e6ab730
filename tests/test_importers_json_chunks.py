"""Streams saved as JSON instead of SSE: Gemini's JSON array, SDK chunk logs (`json-chunks`)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uxlab.streams.importers import ImportFormatError, import_source
from uxlab.streams.metrics import describe

DATA = Path(__file__).parent / "data" / "vendor-shapes"


def test_gemini_json_array_imports_text_without_times():
    result = import_source("json-chunks", DATA / "gemini_stream_array.json")
    (rec,) = result.recordings
    assert rec.header.source["api"] == "gemini"
    assert rec.text == "Lighthouse lenses bend light into a beam."
    assert rec.end.finish_reason == "STOP" and rec.end.usage["candidatesTokenCount"] == 9
    assert describe(rec)["timing"] == "none"
    assert result.warnings == ["gemini_stream_array.json: no t_ms per element, imported text only"]


def test_timed_openai_chunk_log_keeps_its_times():
    (rec,) = import_source("json-chunks", DATA / "openai_chunks_timed.jsonl").recordings
    assert rec.header.source["api"] == "openai" and rec.header.source["model"] == "gpt-4o-mini"
    assert [(c.t_ms, c.text) for c in rec.chunks] == [
        (402.25, "Keepers"),
        (431.0, " trimmed wicks."),
    ]
    d = describe(rec)
    assert d["timing"] == "recorded" and d["ttft_first_event_ms"] == 180.5
    assert rec.end.finish_reason == "stop" and rec.end.t_ms == 455.75


def test_anthropic_event_lines_use_their_type_as_the_event_name():
    (rec,) = import_source("json-chunks", DATA / "anthropic_events.jsonl").recordings
    assert rec.header.source["api"] == "anthropic"
    assert rec.text == "Fresnel lenses." and rec.end.finish_reason == "end_turn"


def test_sse_importer_points_at_json_chunks(tmp_path):
    result = import_source("gemini-sse", DATA / "gemini_stream_array.json")
    assert result.skipped[0].reason.endswith("(it is JSON: import it with --from json-chunks)")


@pytest.mark.parametrize("name", ["chat_tool_call.ndjson", "chat_client_timed.jsonl"])
def test_sse_importer_points_ollama_lines_at_the_ollama_importer(name):
    """Ollama's NDJSON (bare or timed) went to json-chunks first, which then pointed at
    `--from ollama`: the SSE importer now points there at once, and it reads them."""
    path = Path(__file__).parent / "data" / "ollama" / name
    result = import_source("openai-sse", path)
    assert not result.recordings
    assert result.skipped[0].reason.endswith(
        "(it is Ollama's NDJSON: import it with --from ollama)"
    )
    assert len(import_source("ollama", path).recordings) == 1


def test_mixed_timing_and_bad_lines_are_named(tmp_path):
    lines = (DATA / "openai_chunks_timed.jsonl").read_text().splitlines()
    untimed = json.loads(lines[2])["data"]
    path = tmp_path / "mixed.jsonl"
    path.write_text("\n".join([lines[0], lines[1], json.dumps(untimed)]) + "\n")
    with pytest.raises(ImportFormatError, match=r"mixed.jsonl:3: t_ms: time every element"):
        import_source("json-chunks", path)
    path.write_text(lines[0] + "\n{oops\n")
    with pytest.raises(ImportFormatError, match=r"mixed.jsonl:2: not JSON"):
        import_source("json-chunks", path)
    bad = json.loads(lines[1])
    bad["data"]["choices"] = "many"
    path.write_text(lines[0] + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(ImportFormatError, match=r"mixed.jsonl:2: choices: expected a list"):
        import_source("json-chunks", path)
