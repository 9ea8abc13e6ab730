"""Other projects' recorded streams (SDK test suites, VCR cassettes; Apache-2.0 / MIT,
copied unchanged into `tests/data/vendor-corpus` with their licences), each imported strictly
and compared with an independent reading (`vendor_parse`): the text, the reasoning, every
tool call once with its name and arguments, the finish reason and the usage. A vendor's new
event type makes a strict import stop, so it shows up here as a failing test, not a loss."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import vendor_parse

from uxlab.streams.importers import ImportFormatError, ImportOptions, import_source
from uxlab.streams.importers.event_mapping import count_malformed
from uxlab.streams.tool_calls import tool_calls

CORPUS = Path(__file__).parent / "data" / "vendor-corpus"
MANIFEST = json.loads((CORPUS / "MANIFEST.json").read_text(encoding="utf-8"))
BROKEN = {"vercel-ai/parallel-tool-call-wrapper.1.jsonl"}
"""Fixtures whose lines are not JSON upstream (written by hand there): the bad-input test."""


def _as_read(rec) -> dict:
    calls = []
    for call in tool_calls(rec):
        value = call.parsed_arguments()
        if value is None and call.arguments.strip():
            value = call.arguments  # a tool whose input is text (a patch, a command, code)
        calls.append((call.name, value if value != {} else None))
    return {
        "content": rec.text,
        "reasoning": "".join(c.text for c in rec.chunks if c.channel == "reasoning"),
        "calls": calls,
        "finish": rec.end.finish_reason if rec.end is not None else None,
        "usage": rec.end.usage if rec.end is not None else None,
    }


@pytest.mark.parametrize(
    "entry", [e for e in MANIFEST if e["file"] not in BROKEN], ids=lambda e: e["file"]
)
def test_fixture_imports_strictly_and_equals_the_independent_reading(entry):
    path = CORPUS / entry["file"]
    result = import_source(entry["format"], path)
    expected = vendor_parse.read(path, entry["format"])
    assert not result.skipped
    assert len(result.recordings) == len(expected)
    for rec, want in zip(result.recordings, expected, strict=True):
        got = _as_read(rec)
        for key in ("content", "reasoning", "calls", "finish", "usage"):
            assert got[key] == (want[key] if key != "usage" else want[key] or None), key
        assert all(c.complete for c in tool_calls(rec)) or rec.end is None


def test_the_corpus_is_what_its_manifest_says():
    assert len(MANIFEST) >= 100
    for entry in MANIFEST:
        data = (CORPUS / entry["file"]).read_bytes()
        assert hashlib.sha256(data).hexdigest() == entry["sha256"], entry["file"]
        assert entry["license"] in ("Apache-2.0", "MIT")
        assert (CORPUS / entry["file"]).parent.joinpath("LICENSE").is_file()
    formats = {e["format"] for e in MANIFEST}
    assert formats == {
        "openai-sse",
        "openai-responses-sse",
        "anthropic-sse",
        "gemini-sse",
        "bedrock",
        "json-chunks",
    }


def test_the_agent_traffic_the_issue_names_is_in_the_corpus():
    def calls(name):
        entry = next(e for e in MANIFEST if e["file"].endswith(name))
        recs = import_source(entry["format"], CORPUS / entry["file"]).recordings
        return [c for rec in recs for c in tool_calls(rec)]

    # Gemini 3 streams arguments by JSON path: two calls, not eight nameless ones
    weather = calls("google-stream-tool-call-arguments.jsonl")
    assert [(c.name, c.parsed_arguments()) for c in weather] == [
        ("getWeather", {"location": "Boston"}),
        ("getWeather", {"location": "San Francisco"}),
    ]
    # Anthropic MCP: name, id and server kept
    (mcp,) = calls("anthropic-mcp.1.jsonl")
    assert mcp.name == "echo" and mcp.info["server"] == "echo" and mcp.id
    # Anthropic programmatic calls: the input whole in message_start, with its caller
    programmatic = calls("anthropic-programmatic-tool-calling.1.jsonl")
    assert sum("caller" in c.info for c in programmatic) == 14  # every rollDie the code made
    # Responses apply_patch: the diff streamed on the tool channel, the operation kept
    (patch,) = calls("openai-apply-patch-tool.1.jsonl")
    assert patch.name == "apply_patch" and patch.info["operation"] == "create_file"
    assert patch.arguments.startswith("+## Shopping Checklist")


def test_a_fixture_that_is_not_json_upstream_is_refused_or_kept_when_tolerant():
    path = CORPUS / "vercel-ai" / "parallel-tool-call-wrapper.1.jsonl"
    with pytest.raises(ImportFormatError) as exc:
        import_source("json-chunks", path)
    assert str(exc.value).startswith(f"{path}:1: not JSON")
    result = import_source("json-chunks", path, ImportOptions(tolerant=True))
    (rec,) = result.recordings
    assert count_malformed(rec) == 2  # the two broken lines, kept with their text
    assert any("2 malformed event(s)" in w for w in result.warnings)
    assert [c.name for c in tool_calls(rec)] == ["parallel"]
