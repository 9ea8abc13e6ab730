"""The live recorder against a fake vendor server over real loopback HTTP."""

from __future__ import annotations

import io
import json
from pathlib import Path

import httpx
import pytest
from live_servers import FakeVendor, free_port, serve_in_thread

from uxlab.cli import main
from uxlab.clock import VirtualClock
from uxlab.live.clients import Prompt
from uxlab.live.mapping import MAPPERS
from uxlab.live.record import RecordOptions, record_stream, save_result
from uxlab.live.workload import run_workload
from uxlab.streams import read_replay
from uxlab.streams.replay_file import ReplayFormatError
from uxlab.streams.sse import parse_sse

KEY = "sk-test-UNMISTAKABLE-7f3a9c"
HI = Prompt(messages=[{"role": "user", "content": "hi"}])


@pytest.fixture(scope="module")
def vendor():
    fake = FakeVendor()
    with serve_in_thread(fake.app) as base:
        fake.base = base
        yield fake


def base_url(vendor: FakeVendor, api: str) -> str:
    return vendor.base + ("/v1beta" if api == "gemini" else "/v1")


async def record(vendor, api, model, **opts):
    async with httpx.AsyncClient() as client:
        return await record_stream(
            client,
            api,
            base_url(vendor, api),
            model,
            HI,
            KEY,
            f"{api}-{model}",
            RecordOptions(**opts),
        )


@pytest.mark.parametrize("api", ["openai", "openai-responses", "anthropic", "gemini"])
async def test_each_api_records_text_usage_and_times(vendor, api, tmp_path):
    result = await record(vendor, api, "m1")
    rec = result.recording
    assert result.ok, result.message
    assert rec.text == "Hello world!"
    assert [c.channel for c in rec.chunks] == ["content"] * 3
    assert rec.end is not None and rec.end.usage
    times = [e.t_ms for e in rec.events] + [rec.end.t_ms]
    assert times == sorted(times) and times[0] >= 0
    http = rec.header.extra["http"]
    assert http["status"] == 200 and 0 <= http["headers_ms"] <= rec.chunks[0].t_ms
    assert rec.header.source["kind"] == "live" and rec.header.source["model"] == "m1"
    assert rec.header.request["messages"] == HI.messages
    # The request really carried the key, in the header the API expects.
    assert vendor.requests[-1]["key"] == KEY
    path = save_result(result, tmp_path)
    assert read_replay(path).text == "Hello world!"
    # The sidecar re-parses into the same recording.
    sidecar = tmp_path / rec.header.extra["capture"]
    again, _ = MAPPERS[api](parse_sse(sidecar.read_text()), rec.header)
    assert [(c.t_ms, c.text) for c in again.chunks] == [
        (pytest.approx(c.t_ms, abs=1e-3), c.text) for c in rec.chunks
    ]


async def test_openai_role_prelude_reasoning_and_tool_calls(vendor):
    rec = (await record(vendor, "openai", "tools")).recording
    assert rec.events[0].data == {"kind": "role", "role": "assistant"}
    channels = [c.channel for c in rec.chunks]
    assert channels == ["reasoning", "content", "content", "content", "tool"]
    tools = [c for c in rec.chunks if c.channel == "tool"]
    (start,) = [e for e in rec.events if getattr(e, "data", {}).get("kind") == "tool_call"]
    assert start.data == {"kind": "tool_call", "index": 0, "id": "call_1", "name": "f"}
    assert tools[0].extra == {"tool_index": 0}
    assert "".join(c.text for c in tools) == '{"a": 1}'
    assert rec.end.finish_reason == "tool_calls" and rec.end.usage["total_tokens"] == 8


async def test_anthropic_thinking_ping_and_usage(vendor):
    rec = (await record(vendor, "anthropic", "tools")).recording
    assert [c.channel for c in rec.chunks] == ["reasoning", "content", "content", "content"]
    assert any(getattr(e, "data", {}).get("kind") == "ping" for e in rec.events)
    assert rec.end.finish_reason == "end_turn"
    assert rec.end.usage == {"input_tokens": 5, "output_tokens": 3}


async def test_each_event_is_stamped_at_its_own_arrival(vendor):
    # The server pauses 200 ms before "!": the stamps must show the pause on that chunk.
    rec = (await record(vendor, "openai", "paused")).recording
    hello, world, bang = rec.chunks
    assert bang.t_ms - world.t_ms >= 150
    assert world.t_ms - hello.t_ms < bang.t_ms - world.t_ms


async def test_bytes_dripping_one_at_a_time_still_frame_into_events(vendor):
    result = await record(vendor, "openai", "drip")
    assert result.ok and result.recording.text == "Hello world!"
    assert len(result.capture) == 7  # role, 3 deltas, finish, usage, [DONE]


async def test_http_401_is_recorded_and_the_echoed_key_is_scrubbed(vendor):
    result = await record(vendor, "openai", "status-401")
    rec = result.recording
    assert result.status == 401 and not result.ok
    (err,) = rec.errors
    assert err.error["status"] == 401 and "Incorrect API key" in err.error["message"]
    assert rec.end.finish_reason == "error"
    assert KEY not in json.dumps(err.error) and KEY not in result.message
    assert "[redacted]" in err.error["message"]


async def test_429_honours_retry_after_when_retries_are_asked(vendor):
    result = await record(vendor, "openai", "flaky-429", retries=2)
    assert result.ok and result.attempts == 2
    assert result.recording.header.extra["http"]["retried_statuses"] == [429]
    plain = await record(vendor, "openai", "status-429")
    assert plain.status == 429 and plain.recording.errors[0].error["retry_after_s"] == 0.02


async def test_500_without_retries_is_one_error_replay(vendor):
    result = await record(vendor, "anthropic", "status-500")
    assert result.status == 500 and result.attempts == 1
    assert result.recording.errors[0].error["message"] == "The server had an error"


async def test_midstream_overloaded_error_after_200(vendor):
    result = await record(vendor, "anthropic", "midstream-error")
    rec = result.recording
    assert result.status == 200 and not result.ok
    assert rec.errors[0].error["type"] == "overloaded_error"
    assert rec.end.finish_reason == "error"
    assert KEY not in rec.errors[0].error["message"]
    assert "".join(c.text for c in rec.chunks) == ""  # error before any text


async def test_cut_connection_keeps_what_arrived_as_a_truncated_stream(vendor, tmp_path):
    result = await record(vendor, "openai", "cut")
    rec = result.recording
    assert rec.truncated and rec.text == "Hello world"
    assert rec.errors[-1].error["type"] == "connection_closed"
    path = save_result(result, tmp_path)
    with pytest.raises(ReplayFormatError, match="truncated"):
        read_replay(path)
    assert read_replay(path, allow_truncated=True).text == "Hello world"


async def test_clean_close_without_terminator_is_truncated(vendor):
    result = await record(vendor, "openai", "truncated")
    assert result.recording.truncated
    assert result.recording.errors[-1].error["type"] == "truncated"


async def test_read_timeout_mid_stream(vendor):
    result = await record(vendor, "openai", "stall", read_timeout_s=0.3)
    assert result.recording.truncated and result.recording.text == "Hello"
    assert result.recording.errors[-1].error["type"] == "read_timeout"


async def test_read_timeout_before_headers(vendor):
    result = await record(vendor, "openai", "slow-headers", read_timeout_s=0.3)
    (err,) = result.recording.errors
    assert err.error["type"] == "read_timeout" and "response headers" in err.error["message"]
    assert result.status is None and result.recording.end.finish_reason == "error"
    assert err.t_ms > 0


async def test_malformed_event_is_kept_and_the_rest_recorded(vendor):
    result = await record(vendor, "openai", "malformed")
    rec = result.recording
    assert rec.text == "Hello world!" and rec.end.finish_reason == "stop"
    bad = [e for e in rec.events if getattr(e, "data", {}).get("kind") == "malformed_event"]
    assert len(bad) == 1 and "not JSON" in bad[0].data["problem"]
    assert result.malformed_events == 1 and "malformed" in result.message


async def test_bytes_that_are_not_utf8_end_the_recording_with_an_error(vendor):
    result = await record(vendor, "openai", "not-utf8")
    assert result.recording.text == "Hello" and result.recording.truncated
    assert result.recording.errors[-1].error["type"] == "malformed_stream"


async def test_connection_refused_becomes_an_error_replay():
    url = f"http://127.0.0.1:{free_port()}/v1"
    async with httpx.AsyncClient() as client:
        result = await record_stream(client, "openai", url, "m", HI, KEY, "refused")
    assert result.status is None and result.recording.errors[0].error["type"] == "connect_error"


def _all_text(folder: Path) -> str:
    return "".join(
        p.read_text(encoding="utf-8", errors="replace") for p in folder.rglob("*") if p.is_file()
    )


def test_cli_workload_never_writes_the_key(vendor, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("UXLAB_TEST_KEY", KEY)
    prompts = tmp_path / "prompts.jsonl"
    prompts.write_text('{"prompt": "hi"}\n{"messages": [{"role": "user", "content": "yo"}]}\n')
    out = tmp_path / "out"
    argv = [
        "record",
        "--api",
        "openai",
        "--url",
        vendor.base + "/v1",
        "--api-key-env",
        "UXLAB_TEST_KEY",
        "--model",
        "gpt-x",
        "--model",
        "status-401",
        "--model",
        "midstream-error",
        "--prompts",
        str(prompts),
        "--repeats",
        "2",
        "--concurrency",
        "3",
        "--rate",
        "200",
        "-o",
        str(out),
    ]
    assert main(argv) == 1  # some streams failed: recorded, and the exit status says so
    captured = capsys.readouterr()
    files = sorted(p.name for p in out.iterdir())
    assert len([f for f in files if f.endswith(".jsonl")]) == 12
    assert KEY not in _all_text(out) + captured.out + captured.err
    assert any(r["key"] == KEY for r in vendor.requests)  # it was sent, just never written
    assert "gpt-x" in captured.out and "ttft_p50" in captured.out
    assert "12/12 recorded" in captured.err and "HTTP 401" in captured.err
    # A second run into the same folder never overwrites the first.
    assert main(argv) == 1
    capsys.readouterr()
    assert len(list(out.glob("*.jsonl"))) == 24


def test_cli_single_prompt_success(vendor, tmp_path, capsys):
    out = tmp_path / "o"
    assert (
        main(
            [
                "record",
                "--api",
                "anthropic",
                "--url",
                vendor.base + "/v1",
                "--model",
                "claude-x",
                "--prompt",
                "hello",
                "-o",
                str(out),
            ]
        )
        == 0
    )
    (path,) = out.glob("*.jsonl")
    rec = read_replay(path)
    assert rec.text == "Hello world!" and rec.header.request["messages"][0]["content"] == "hello"
    assert (out / path.with_suffix(".sse").name).exists()
    assert "wrote 1 replay file(s)" in capsys.readouterr().out


def test_cli_needs_a_key_for_the_vendor_endpoint(capsys, monkeypatch, tmp_path):
    monkeypatch.delenv("ANTHROPIC_API_KEY", raising=False)
    code = main(
        ["record", "--api", "anthropic", "--model", "m", "--prompt", "x", "-o", str(tmp_path)]
    )
    assert code == 2 and "ANTHROPIC_API_KEY" in capsys.readouterr().err


async def test_sidecar_reimports_with_uxlab_import(vendor, tmp_path, capsys):
    result = await record(vendor, "openai", "tools")
    path = save_result(result, tmp_path / "live")
    sidecar = path.with_suffix(".sse")
    assert main(["import", "--from", "openai-sse", str(sidecar), "-o", str(tmp_path / "imp")]) == 0
    (imported_path,) = (tmp_path / "imp").glob("*.jsonl")
    imported, live = read_replay(imported_path), read_replay(path)
    assert [(c.t_ms, c.channel, c.text) for c in imported.chunks] == [
        (c.t_ms, c.channel, c.text) for c in live.chunks
    ]
    assert imported.end.usage == live.end.usage


async def test_workload_respects_concurrency_and_rate(tmp_path):
    fake = FakeVendor()  # its own server, so in-flight counts are this test's alone
    clock = VirtualClock()
    prompts = [Prompt([{"role": "user", "content": f"q{i}"}], where=f"p:{i}") for i in range(3)]
    with serve_in_thread(fake.app) as base:
        result = await run_workload(
            "openai",
            base + "/v1",
            ["paused"],
            prompts,
            tmp_path,
            KEY,
            repeats=2,
            concurrency=2,
            rate_per_s=4.0,
            progress_out=io.StringIO(),
            clock=clock,
        )
    assert fake.max_in_flight == 2  # each stream holds 200 ms, so they overlap up to the cap
    assert len(result.paths) == 6 and result.errors == 0
    starts = sorted(read_replay(p).header.extra["workload"]["started_ms"] for p in result.paths)
    # Request k starts no earlier than k / rate (virtual clock: exactly then).
    assert starts == [0.0, 250.0, 500.0, 750.0, 1000.0, 1250.0]
    assert result.stats["paused"].streams == 6 and len(result.stats["paused"].ttfts_ms) == 6
