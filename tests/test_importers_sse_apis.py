"""The SSE mappings added to `uxlab import` (Responses API, Gemini) and the rules every
SSE mapping now shares (strict vs tolerant, role once, nothing after the end)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from uxlab.cli import main
from uxlab.streams import ErrorEvent, Header, Meta, read_replay
from uxlab.streams.importers import (
    ImportFormatError,
    ImportOptions,
    StreamEventError,
    anthropic_events_to_recording,
    import_source,
    openai_chat_events_to_recording,
)
from uxlab.streams.sse import SseEvent


def timed(*events: tuple[float, str | None, str]) -> list[SseEvent]:
    """SSE events from (arrival t_ms, event name, data)."""
    return [SseEvent(name, data, t_ms) for t_ms, name, data in events]


AGREE = Path(__file__).parent / "data" / "sse-agreement"


def _metas(rec, kind):
    return [e.data for e in rec.events if isinstance(e, Meta) and e.data["kind"] == kind]


def test_responses_reasoning_text_tool_call_and_usage():
    opts = ImportOptions(tolerant=True)
    (rec,) = import_source("openai-responses-sse", AGREE / "responses_full.sse", opts).recordings
    assert [c.channel for c in rec.chunks] == ["reasoning"] * 2 + ["content"] * 2 + ["tool"] * 2
    assert "".join(c.text for c in rec.chunks if c.channel == "reasoning") == (
        "Checking the weather needs the tool."
    )
    assert rec.text == "Let me check."
    (call,) = _metas(rec, "tool_call")
    assert call == {
        "kind": "tool_call",
        "index": 2,
        "id": "call_R1",
        "name": "get_weather",
        "tool_type": "function_call",
    }
    assert {c.extra["tool_index"] for c in rec.chunks if c.channel == "tool"} == {2}
    (bad,) = _metas(rec, "malformed_event")
    assert bad["event"] == "response.output_text.delta" and bad["problem"].startswith("delta:")
    assert rec.end.finish_reason == "completed" and rec.end.t_ms == 590.0
    assert rec.end.usage["total_tokens"] == 71
    src = rec.header.source
    assert (src["api"], src["model"], src["importer"]) == (
        "openai.responses",
        "o4-mini-2025-04-16",
        "openai-responses-sse",
    )


def test_responses_failed_is_an_error_with_its_message():
    (rec,) = import_source("openai-responses-sse", AGREE / "responses_error.sse").recordings
    err = rec.events[-1]
    assert isinstance(err, ErrorEvent) and err.error["code"] == "server_error"
    assert rec.text == "Lighthouses"
    assert rec.end.finish_reason == "error" and rec.end.t_ms == 2200.0


def test_gemini_thought_text_function_call_and_finish():
    opts = ImportOptions(tolerant=True)
    (rec,) = import_source("gemini-sse", AGREE / "gemini_full.sse", opts).recordings
    assert [c.channel for c in rec.chunks] == ["reasoning", "content", "content", "tool"]
    assert rec.text == "Let me check."
    (call,) = _metas(rec, "tool_call")
    assert call == {"kind": "tool_call", "index": 0, "id": None, "name": "get_weather"}
    assert json.loads(rec.chunks[-1].text) == {"city": "Oslo"}
    (bad,) = _metas(rec, "malformed_event")
    assert bad["problem"].startswith("candidates[0].content.parts[0].text: expected a string")
    # Gemini has no terminator: the event with finishReason ends the stream.
    assert rec.end.finish_reason == "STOP" and rec.end.t_ms == 900.0
    assert rec.end.usage["totalTokenCount"] == 41
    assert rec.header.source["model"] == "gemini-2.5-flash"


def test_gemini_error_event():
    (rec,) = import_source("gemini-sse", AGREE / "gemini_error.sse").recordings
    assert rec.errors[0].error["status"] == "UNAVAILABLE"
    assert rec.text == "Fresnel lenses" and rec.end.finish_reason == "error"


@pytest.mark.parametrize(
    ("fmt", "name", "line", "field"),
    [
        ("openai-sse", "openai_full", 17, "data"),
        ("anthropic-sse", "anthropic_full", 37, "delta.text"),
        ("openai-responses-sse", "responses_full", 21, "delta"),
        ("gemini-sse", "gemini_full", 7, "candidates[0].content.parts[0].text"),
    ],
)
def test_strict_import_names_file_line_and_field(fmt, name, line, field):
    path = AGREE / f"{name}.sse"
    with pytest.raises(ImportFormatError) as exc:
        import_source(fmt, path)
    assert str(exc.value).startswith(f"{path}:{line}: {field}: ")
    assert (exc.value.where, exc.value.field) == (str(line), field)


def test_cli_tolerant_import_warns_and_writes(tmp_path, capsys):
    src = AGREE / "anthropic_full.sse"
    assert main(["import", "--from", "anthropic-sse", str(src), "-o", str(tmp_path)]) == 2
    assert "anthropic_full.sse:37: delta.text" in capsys.readouterr().err
    assert not list(tmp_path.glob("*.jsonl"))  # nothing written before the error
    argv = ["import", "--tolerant", "--from", "anthropic-sse", str(src), "-o", str(tmp_path)]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "1 malformed event(s) kept" in out and "imported 1 stream(s)" in out
    rec = read_replay(tmp_path / "anthropic_full.jsonl")
    assert rec.text == "Let me check." and rec.end.finish_reason == "tool_use"


def test_role_repeated_in_every_delta_is_one_prelude():
    events = timed(
        (10.0, None, '{"choices":[{"index":0,"delta":{"role":"assistant","content":"A"}}]}'),
        (20.0, None, '{"choices":[{"index":0,"delta":{"role":"assistant","content":"B"}}]}'),
        (30.0, None, "[DONE]"),
    )
    rec = openai_chat_events_to_recording(events, Header(id="r"))
    assert [e.data for e in rec.events if isinstance(e, Meta)] == [
        {"kind": "role", "role": "assistant"}
    ]
    assert rec.text == "AB" and rec.end.t_ms == 30.0


def test_nothing_is_mapped_after_the_end_and_the_rest_is_counted():
    events = timed(
        (5.0, "message_start", '{"type":"message_start","message":{"role":"assistant"}}'),
        (9.0, "error", '{"type":"error","error":{"type":"overloaded_error"}}'),
        (12.0, "message_stop", '{"type":"message_stop"}'),
    )
    rec = anthropic_events_to_recording(events, Header(id="a"))
    assert rec.end.finish_reason == "error" and rec.end.t_ms == 9.0
    assert rec.header.extra["import_notes"] == [
        "1 event(s) after the end of the stream were not mapped"
    ]


def test_error_that_is_not_an_object_strict_and_tolerant():
    events = timed((9.0, "error", '{"type":"error","error":"boom"}'))
    with pytest.raises(StreamEventError, match="event 0: error: expected an object"):
        anthropic_events_to_recording(events, Header(id="s"))
    rec = anthropic_events_to_recording(events, Header(id="t"), strict=False)
    assert rec.errors[0].error == {"message": "boom"} and rec.end.finish_reason == "error"


CAPTURES = Path(__file__).parent / "data"


@pytest.mark.parametrize(
    ("capture", "speaks", "given"),
    [
        ("anthropic-sse/text.sse", "anthropic", "gemini-sse"),
        ("openai-sse/chat_usage.sse", "openai", "gemini-sse"),
        ("openai-sse/tool_call.sse", "openai", "anthropic-sse"),
        ("anthropic-sse/thinking_tool.sse", "anthropic", "openai-sse"),
        ("anthropic-sse/text.sse", "anthropic", "cohere-sse"),
        ("sse-agreement/gemini_full.sse", "gemini", "openai-sse"),
        ("sse-agreement/responses_error.sse", "openai-responses", "anthropic-sse"),
    ],
)
def test_a_capture_of_another_api_is_refused_with_the_format_that_reads_it(
    capture, speaks, given, tmp_path, capsys
):
    """An Anthropic capture given to `--from gemini-sse` was imported as one empty stream,
    kept as truncated (exit 0): now the first telling event's line and the right --from."""
    path = CAPTURES / capture
    assert main(["import", "--from", given, str(path), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"{path}:" in err and f"import it with --from {speaks}-sse" in err
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
    right = ["import", "--from", f"{speaks}-sse", str(path), "-o", str(tmp_path / "ok")]
    assert main([*right, "--tolerant"]) == 0  # some hold a malformed event on purpose
