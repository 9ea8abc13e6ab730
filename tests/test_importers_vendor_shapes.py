"""Vendor stream shapes that were lost before: Responses custom tools, Mistral content parts,
and unknown events, which strict mode refuses by name and tolerant mode keeps."""

from __future__ import annotations

from pathlib import Path

import pytest

from uxlab.streams import read_replay, write_replay
from uxlab.streams.importers import ImportFormatError, ImportOptions, import_source
from uxlab.streams.metrics import describe
from uxlab.streams.recording import Meta

DATA = Path(__file__).parent / "data" / "vendor-shapes"
RESPONSES = DATA / "responses_custom_tool.sse"
MISTRAL = DATA / "mistral_content_parts.sse"


def metas(rec) -> list[dict]:
    return [e.data for e in rec.events if isinstance(e, Meta)]


def test_responses_custom_tool_call_is_kept_on_the_tool_channel(tmp_path):
    rec = import_source("openai-responses-sse", RESPONSES).recordings[0]
    tool = [c for c in rec.chunks if c.channel == "tool"]
    assert "".join(c.text for c in tool) == "*** Begin Patch\n*** End Patch\n"
    assert [c.t_ms for c in tool] == [430.0, 460.0]  # the deltas, not the .done repeat
    call = next(m for m in metas(rec) if m["kind"] == "tool_call")
    assert call == {
        "kind": "tool_call",
        "index": 1,
        "id": "call_1",
        "name": "apply_patch",
        "tool_type": "custom_tool_call",
    }
    # the built-in web search's progress stays visible in time; the annotation is kept
    kinds = [m["kind"] for m in metas(rec)]
    assert "response.web_search_call.searching" in kinds
    assert "response.web_search_call.completed" in kinds
    note = next(m for m in metas(rec) if m["kind"] == "response.output_text.annotation.added")
    assert note["annotation"]["url"] == "https://example.com/"
    assert rec.text == "Patched it." and rec.end.finish_reason == "completed"
    d = describe(rec)
    assert d["ttft_ms"] == 320.0 and d["n_tool_chunks"] == 2
    again = read_replay(write_replay(rec, tmp_path))
    assert metas(again) == metas(rec)


def test_custom_tool_input_only_in_item_done_is_still_kept(tmp_path):
    body = RESPONSES.read_text()
    lines = body.split("\n\n")
    kept = [x for x in lines if "custom_tool_call_input.delta" not in x]
    path = tmp_path / "done_only.sse"
    path.write_text("\n\n".join(kept))
    rec = import_source("openai-responses-sse", path).recordings[0]
    tool = [c for c in rec.chunks if c.channel == "tool"]
    assert [c.text for c in tool] == ["*** Begin Patch\n*** End Patch\n"]
    assert tool[0].t_ms == 462.0 and tool[0].extra["from_done"] is True


def test_unknown_responses_event_is_refused_by_name_and_kept_when_tolerant(tmp_path):
    body = RESPONSES.read_text().replace(
        "event: response.web_search_call.searching\n"
        'data: {"type":"response.web_search_call.searching"',
        'event: response.brand_new.delta\ndata: {"type":"response.brand_new.delta"',
    )
    path = tmp_path / "new.sse"
    path.write_text(body)
    with pytest.raises(ImportFormatError, match=r"new.sse:\d+: event: unknown Responses event "
                       r"'response.brand_new.delta'"):  # fmt: skip
        import_source("openai-responses-sse", path)
    rec = import_source("openai-responses-sse", path, ImportOptions(tolerant=True)).recordings[0]
    kept = [m for m in metas(rec) if m["kind"] == "malformed_event"]
    assert len(kept) == 1 and kept[0]["event"] == "response.brand_new.delta"
    assert rec.text == "Patched it."


def test_mistral_content_parts_give_reasoning_text_and_references():
    rec = import_source("openai-sse", MISTRAL).recordings[0]
    assert [(c.channel, c.text) for c in rec.chunks] == [
        ("reasoning", "The user asks"),
        ("reasoning", " for a capital."),
        ("content", "Canberra"),
        ("content", "."),
    ]
    assert {"kind": "reference", "reference_ids": [1]} in metas(rec)
    assert rec.end.finish_reason == "stop"
    d = describe(rec)
    assert d["ttft_ms"] == 310.0 and d["n_output_chunks"] == 4


def test_unknown_mistral_part_is_refused_by_type(tmp_path):
    body = MISTRAL.read_text().replace('"type":"reference","reference_ids":[1]', '"type":"audio"')
    path = tmp_path / "m.sse"
    path.write_text(body)
    with pytest.raises(
        ImportFormatError,
        match=r"m.sse:\d+: choices\[0\]\.delta\.content\[0\]\.type: unknown content part type "
        r"'audio'",
    ):
        import_source("openai-sse", path)
    rec = import_source("openai-sse", path, ImportOptions(tolerant=True)).recordings[0]
    assert rec.text == "Canberra."
    assert [m["kind"] for m in metas(rec)].count("malformed_event") == 1


def test_gemini_code_execution_parts_are_kept():
    rec = import_source("gemini-sse", DATA / "gemini_code_execution.sse").recordings[0]
    assert [(c.channel, c.text) for c in rec.chunks] == [
        ("reasoning", "Let me compute it."),
        ("tool", "print(sum(range(101)))\n"),
        ("content", "The sum is 5050."),
    ]
    kinds = {m["kind"]: m for m in metas(rec)}
    assert kinds["tool_call"]["name"] == "code_execution"
    assert kinds["code_execution_result"]["output"] == "5050\n"
    assert kinds["inline_data"] == {
        "kind": "inline_data",
        "mime_type": "image/png",
        "data_chars": 12,
    }
    assert rec.end.finish_reason == "STOP"


def test_gemini_part_of_unknown_kind_is_refused_by_its_keys(tmp_path):
    body = (DATA / "gemini_code_execution.sse").read_text()
    path = tmp_path / "g.sse"
    path.write_text(body.replace('{"codeExecutionResult"', '{"videoMetadata":{},"x"', 1))
    with pytest.raises(ImportFormatError, match=r"g.sse:\d+: candidates\[0\]\.content\.parts\[0\]: "
                       r"a part with unknown keys \['videoMetadata', 'x'\]"):  # fmt: skip
        import_source("gemini-sse", path)


def test_anthropic_citations_delta_is_kept_whole(tmp_path):
    path = tmp_path / "cite.sse"
    path.write_text(
        ": t_ms=100.000\nevent: message_start\n"
        'data: {"type":"message_start","message":{"id":"m","role":"assistant","model":"c"}}\n\n'
        ": t_ms=200.000\nevent: content_block_delta\n"
        'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta",'
        '"text":"Paris"}}\n\n'
        ": t_ms=210.000\nevent: content_block_delta\n"
        'data: {"type":"content_block_delta","index":0,"delta":{"type":"citations_delta",'
        '"citation":{"type":"char_location","cited_text":"Paris is the capital"}}}\n\n'
        ': t_ms=300.000\nevent: message_stop\ndata: {"type":"message_stop"}\n\n'
    )
    rec = import_source("anthropic-sse", path).recordings[0]
    cite = next(m for m in metas(rec) if m["kind"] == "delta")
    assert cite["delta_type"] == "citations_delta"
    assert cite["delta"]["citation"]["cited_text"] == "Paris is the capital"
