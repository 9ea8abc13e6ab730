"""One mapping per API: a live recording and a re-import of its `.sse` sidecar agree.

Each fixture in `tests/data/sse-agreement/` (and the importer fixtures of `openai-sse/` and
`anthropic-sse/`) is streamed by a loopback server, recorded with the real recorder
(tolerant mapping), saved with its sidecar, and the sidecar imported again with
`uxlab import`: the two replay files must hold the same events and end, byte for byte.
"""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path

import httpx
import pytest
from live_servers import serve_in_thread
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import StreamingResponse
from starlette.routing import Route

from uxlab.cli import main
from uxlab.live.clients import Prompt
from uxlab.live.mapping import MAPPERS
from uxlab.live.record import RecordResult, record_stream, save_result
from uxlab.streams import ErrorEvent, Meta, read_replay
from uxlab.streams.importers import ImportFormatError, ImportOptions, import_source
from uxlab.streams.recording import Header
from uxlab.streams.replay_file import dumps_recording
from uxlab.streams.sse import parse_sse

DATA = Path(__file__).parent / "data"
AGREE = DATA / "sse-agreement"
FORMAT_OF_API = {
    "openai": "openai-sse",
    "anthropic": "anthropic-sse",
    "openai-responses": "openai-responses-sse",
    "gemini": "gemini-sse",
}
API_OF_PREFIX = {
    "openai": "openai",
    "anthropic": "anthropic",
    "responses": "openai-responses",
    "gemini": "gemini",
}
_TIME_COMMENT = re.compile(r"^: t_ms=.*\n", re.MULTILINE)


def fixture_server() -> Starlette:
    """Streams the fixture named by the request's model, one SSE block per write.

    The capture's `: t_ms=` comments are dropped (the recorder stamps its own arrival
    times); other comments (keep-alives) are sent as a proxy would.
    """

    async def handle(request: Request) -> StreamingResponse:
        path = request.url.path
        if ":streamGenerateContent" in path:
            model = path.rsplit("/", 1)[1].split(":")[0]
        else:
            model = (await request.json())["model"]
        folder, name = model.split("--")
        text = _TIME_COMMENT.sub("", (DATA / folder / f"{name}.sse").read_text(encoding="utf-8"))
        blocks = [b + "\n\n" for b in text.split("\n\n") if b.strip()]

        async def body():
            for block in blocks:
                yield block.encode()
                await asyncio.sleep(0)

        return StreamingResponse(body(), media_type="text/event-stream")

    return Starlette(routes=[Route("/{path:path}", handle, methods=["POST"])])


@pytest.fixture(scope="module")
def server():
    with serve_in_thread(fixture_server()) as base:
        yield base


async def record_fixture(server: str, api: str, folder: str, name: str) -> RecordResult:
    url = server + ("/v1beta" if api == "gemini" else "/v1")
    prompt = Prompt(messages=[{"role": "user", "content": "weather in Oslo?"}])
    async with httpx.AsyncClient() as client:
        return await record_stream(
            client, api, url, f"{folder}--{name}", prompt, "sk-test-key", name
        )


def events_and_end(path: Path) -> list[str]:
    """The replay file's lines after the header (events and end), as written."""
    rec = read_replay(path, allow_truncated=True)
    lines = dumps_recording(rec).splitlines()[1:]
    return [*lines, json.dumps(rec.header.extra.get("import_notes"))]


def api_of(name: str) -> str:
    return API_OF_PREFIX[name.split("_")[0]]


def _cases() -> list[tuple[str, str, str]]:
    cases = [(api_of(p.stem), "sse-agreement", p.stem) for p in sorted(AGREE.glob("*.sse"))]
    for api, folder in (("openai", "openai-sse"), ("anthropic", "anthropic-sse")):
        cases += [(api, folder, p.stem) for p in sorted((DATA / folder).glob("*.sse"))]
    return cases


@pytest.mark.parametrize(("api", "folder", "name"), _cases())
async def test_live_recording_equals_reimport_of_its_sidecar(server, tmp_path, api, folder, name):
    result = await record_fixture(server, api, folder, name)
    live_path = save_result(result, tmp_path / "live")
    sidecar = live_path.with_suffix(".sse")
    fmt = FORMAT_OF_API[api]
    out = tmp_path / "imported"
    assert main(["import", "--tolerant", "--from", fmt, str(sidecar), "-o", str(out)]) == 0
    (imported_path,) = out.glob("*.jsonl")
    assert events_and_end(imported_path) == events_and_end(live_path)
    # The capture file itself (times from its comments) maps to the same events too.
    direct = import_source(fmt, DATA / folder / f"{name}.sse", ImportOptions(tolerant=True))
    kinds = [type(e).__name__ for e in direct.recordings[0].events]
    assert kinds == [type(e).__name__ for e in result.recording.events]


@pytest.mark.parametrize("api", list(FORMAT_OF_API))
async def test_full_fixture_covers_every_feature_in_both_paths(server, tmp_path, api):
    prefix = {v: k for k, v in API_OF_PREFIX.items()}[api]
    result = await record_fixture(server, api, "sse-agreement", f"{prefix}_full")
    rec = result.recording
    channels = {c.channel for c in rec.chunks}
    assert channels == {"reasoning", "content", "tool"}
    assert rec.text == "Let me check."
    tool_args = "".join(c.text for c in rec.chunks if c.channel == "tool")
    assert json.loads(tool_args) == {"city": "Oslo"}
    metas = [e.data for e in rec.events if isinstance(e, Meta)]
    (call,) = [m for m in metas if m["kind"] == "tool_call"]
    assert call["name"] == "get_weather"
    (bad,) = [m for m in metas if m["kind"] == "malformed_event"]
    assert bad["problem"] and result.malformed_events == 1
    assert "malformed" in result.message
    assert rec.end is not None and rec.end.finish_reason not in (None, "error")
    assert rec.end.usage
    if api == "anthropic":
        assert {"ping", "signature", "block_start"} <= {m["kind"] for m in metas}
    # Strict import of the same sidecar stops at the malformed event, naming line and field.
    sidecar = save_result(result, tmp_path).with_suffix(".sse")
    with pytest.raises(ImportFormatError) as exc:
        import_source(FORMAT_OF_API[api], sidecar)
    bad_line = _line_of_event(sidecar.read_text(encoding="utf-8"), bad["data"])
    assert str(exc.value).startswith(f"{sidecar}:{bad_line}: ")
    assert exc.value.field and "--tolerant" in str(exc.value)


def _line_of_event(text: str, data: str) -> int:
    """The 1-based line of the `: t_ms=` comment that starts the event carrying `data`."""
    lines = text.splitlines()
    data_line = next(i for i, s in enumerate(lines, 1) if s == f"data: {data}")
    return max(i for i in range(1, data_line) if lines[i - 1].startswith(": t_ms="))


@pytest.mark.parametrize("api", list(FORMAT_OF_API))
async def test_midstream_error_ends_both_paths_at_the_error(server, tmp_path, api):
    prefix = {v: k for k, v in API_OF_PREFIX.items()}[api]
    result = await record_fixture(server, api, "sse-agreement", f"{prefix}_error")
    rec = result.recording
    assert not result.ok and "mid-stream error" in result.message
    err = rec.events[-1]
    assert isinstance(err, ErrorEvent) and err.error
    assert rec.end.finish_reason == "error" and rec.end.t_ms == err.t_ms
    assert rec.text  # what came before the error is kept
    # Strict import (no malformed event here) gives the same events as the recorder.
    sidecar = save_result(result, tmp_path).with_suffix(".sse")
    (imported,) = import_source(FORMAT_OF_API[api], sidecar).recordings
    assert (
        dumps_recording(imported).splitlines()[1:]
        == dumps_recording(read_replay(sidecar.with_suffix(".jsonl"))).splitlines()[1:]
    )


def test_tolerant_mapping_never_raises_on_structurally_wrong_events():
    junk = [
        "{not json",
        "[1, 2]",
        '{"choices": "x"}',
        '{"choices": [7]}',
        '{"choices": [{"delta": "x"}]}',
        '{"choices": [{"delta": {"content": 5}}]}',
        '{"choices": [{"delta": {"tool_calls": {"a": 1}}}]}',
        '{"type": "content_block_delta", "delta": []}',
        '{"type": "message_start", "message": "m"}',
        '{"type": "response.output_text.delta", "delta": null}',
        '{"candidates": {"x": 1}}',
        '{"candidates": [{"content": {"parts": [3]}}]}',
    ]
    for api, mapper in MAPPERS.items():
        wire = parse_sse("".join(f": t_ms={10 + i}\ndata: {d}\n\n" for i, d in enumerate(junk)))
        rec, n_bad = mapper(wire, Header(id=api))
        bad = [e for e in rec.events if isinstance(e, Meta) and e.data["kind"] == "malformed_event"]
        assert n_bad == len(bad) >= 2, api
        assert [b.data["data"] for b in bad[:2]] == junk[:2], api  # kept verbatim
        assert not rec.chunks and rec.end is None  # nothing invented, no terminator: truncated
