"""`uxlab serve` over real loopback HTTP, with the official OpenAI and Anthropic SDKs as peers."""

from __future__ import annotations

import re
import subprocess
import sys
import time

import httpx
import pytest
from helpers.lazy import lazy_import
from live_servers import serve_in_thread

from uxlab.live.clients import Prompt
from uxlab.live.record import record_stream
from uxlab.live.serve import ServeConfig, build_app
from uxlab.shaping import Profile, shape
from uxlab.streams import Chunk, End, Header, Meta, Recording, write_replay

anthropic = lazy_import("anthropic")
openai = lazy_import("openai")

TOKEN = "serve-token-123"


def weather() -> Recording:
    return Recording(
        Header(
            id="weather",
            source={"kind": "synthetic", "model": "rec-model"},
            request={"messages": [{"role": "user", "content": "weather?"}]},
        ),
        events=[
            Chunk(10, "Let me think.", "reasoning"),
            Chunk(20, "Checking", "content"),
            Chunk(30, " now.", "content"),
            Meta(35, {"kind": "tool_call", "index": 0, "id": "toolu_1", "name": "get_weather"}),
            Chunk(40, '{"city": ', "tool"),
            Chunk(50, '"Paris"}', "tool"),
        ],
        end=End(60, "tool_calls", {"prompt_tokens": 7, "completion_tokens": 9}),
    )


def story(rid: str = "story", stall_ms: float = 0.0) -> Recording:
    words = ["Once", " upon", " a", " time", " there", " was", " a", " stream", "."]
    times = [100.0 + 10 * i + (stall_ms if i >= 5 else 0.0) for i in range(len(words))]
    return Recording(
        Header(
            id=rid,
            source={"kind": "synthetic", "model": "rec-model"},
            request={"messages": [{"role": "user", "content": f"tell {rid}"}]},
        ),
        events=[Chunk(t, w, "content", n_tokens=1) for t, w in zip(times, words, strict=True)],
        end=End(times[-1] + 1, "stop", None),
    )


PROFILE = Profile.from_table({"ttft": "constant:30", "itl": "constant:3"})


def make_config(recordings, profile=PROFILE, token=None, seed=100) -> ServeConfig:
    return ServeConfig(recordings, lambda r, s: shape(r, profile, seed=s), seed=seed, token=token)


@pytest.fixture(scope="module")
def server():
    config = make_config([weather(), story()])
    with serve_in_thread(build_app(config)) as base:
        yield base, config


def test_openai_sdk_streams_reasoning_content_tools_and_usage(server):
    base, config = server
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
    stream = client.chat.completions.create(
        model="m",
        messages=[{"role": "user", "content": "weather?"}],
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    assert chunks[0].choices[0].delta.role == "assistant"
    content = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
    reasoning = "".join(
        getattr(c.choices[0].delta, "reasoning_content", None) or "" for c in chunks if c.choices
    )
    calls = [tc for c in chunks if c.choices for tc in c.choices[0].delta.tool_calls or []]
    assert content == "Checking now." and reasoning == "Let me think."
    assert calls[0].id == "toolu_1" and calls[0].function.name == "get_weather"
    assert "".join(tc.function.arguments for tc in calls) == '{"city": "Paris"}'
    finish = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert [f for f in finish if f] == ["tool_calls"]
    assert chunks[-1].choices == [] and chunks[-1].usage.total_tokens == 16
    served = config.served[-1]
    assert served.schedule.header.retime["from"] == "weather"
    assert served.schedule.header.retime["seed"] == served.seed == 100 + served.request_index


def test_openai_sdk_non_streaming_returns_the_whole_message(server):
    base, _ = server
    client = openai.OpenAI(base_url=base + "/v1", api_key="unused")
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "tell story"}]
    )
    assert reply.choices[0].message.content == "Once upon a time there was a stream."
    assert reply.choices[0].finish_reason == "stop" and reply.usage.completion_tokens == 9


def test_anthropic_sdk_streams_thinking_text_and_tool_use(server):
    base, _ = server
    client = anthropic.Anthropic(base_url=base, api_key="unused")
    with client.messages.stream(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "weather?"}]
    ) as stream:
        kinds = [ev.type for ev in stream]
        final = stream.get_final_message()
    assert kinds[0] == "message_start" and kinds[-1] == "message_stop"
    assert [b.type for b in final.content] == ["thinking", "text", "tool_use"]
    assert final.content[1].text == "Checking now."
    assert final.content[2].input == {"city": "Paris"} and final.content[2].name == "get_weather"
    assert final.stop_reason == "tool_use" and final.usage.output_tokens == 9


def test_anthropic_sdk_non_streaming(server):
    base, _ = server
    client = anthropic.Anthropic(base_url=base, api_key="unused")
    msg = client.messages.create(
        model="m", max_tokens=10, messages=[{"role": "user", "content": "tell story"}]
    )
    assert msg.content[0].text == "Once upon a time there was a stream."
    assert msg.stop_reason == "end_turn"


def test_prompt_match_else_deterministic_cycle_and_seeds(server):
    base, _ = server
    with httpx.Client(base_url=base) as http:

        def ask(prompt: str) -> httpx.Response:
            return http.post(
                "/v1/chat/completions",
                json={"model": "m", "messages": [{"role": "user", "content": prompt}]},
            )

        matched = ask("tell story")
        first, second = ask("something else"), ask("something else")
    assert matched.headers["x-uxlab-replay-id"] == "story"
    indexes = [int(r.headers["x-uxlab-request-index"]) for r in (first, second)]
    ids = [r.headers["x-uxlab-replay-id"] for r in (first, second)]
    names = ["weather", "story"]
    assert ids == [names[i % 2] for i in indexes]
    assert [int(r.headers["x-uxlab-seed"]) for r in (first, second)] == [100 + i for i in indexes]


def test_models_route_lists_recorded_models(server):
    base, _ = server
    data = httpx.get(base + "/v1/models").json()["data"]
    assert {m["id"] for m in data} == {"rec-model", "uxlab"}
    assert openai.OpenAI(base_url=base + "/v1", api_key="x").models.list().data


def test_bearer_token_is_required_when_set():
    with serve_in_thread(build_app(make_config([story()], token=TOKEN))) as base:
        with pytest.raises(openai.AuthenticationError):
            openai.OpenAI(base_url=base + "/v1", api_key="wrong").chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
        with pytest.raises(anthropic.AuthenticationError):
            anthropic.Anthropic(base_url=base, api_key="wrong").messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        assert httpx.get(base + "/v1/models").status_code == 401
        ok = openai.OpenAI(base_url=base + "/v1", api_key=TOKEN).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
        assert ok.choices[0].message.content.startswith("Once")
        msg = anthropic.Anthropic(base_url=base, api_key=TOKEN).messages.create(
            model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
        )
        assert msg.content[0].text.startswith("Once")


def test_injected_error_reaches_both_sdks_mid_stream():
    profile = Profile.from_table(
        {"ttft": "constant:20", "itl": "constant:2", "error_at": "3:overloaded_error"}
    )
    with serve_in_thread(build_app(make_config([story()], profile))) as base:
        client = openai.OpenAI(base_url=base + "/v1", api_key="x")
        got: list[str] = []
        with pytest.raises(openai.APIError, match=r"(?i)overloaded"):
            for c in client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}], stream=True
            ):
                got.extend(ch.delta.content or "" for ch in c.choices)
        assert "".join(got) == "Once upon a"
        aclient = anthropic.Anthropic(base_url=base, api_key="x", max_retries=0)
        messages = [{"role": "user", "content": "x"}]
        with (
            pytest.raises(anthropic.APIStatusError, match="overloaded"),
            aclient.messages.stream(model="m", max_tokens=5, messages=messages) as s,
        ):
            for _ in s:
                pass
        with pytest.raises(anthropic.APIStatusError) as info:
            aclient.messages.create(
                model="m", max_tokens=5, messages=[{"role": "user", "content": "x"}]
            )
        assert info.value.status_code == 529


def test_bad_request_body_is_a_clear_error(server):
    base, _ = server
    r = httpx.post(base + "/v1/messages", content=b"{nope")
    assert r.status_code == 400 and r.json()["error"]["type"] == "invalid_request_error"
    r = httpx.post(base + "/v1/chat/completions", json={"model": "m"})
    assert r.status_code == 400 and "messages" in r.json()["error"]["message"]


async def test_recorder_sees_every_chunk_as_its_own_event_with_the_schedule_shape():
    # A 250 ms stall in the schedule must show up in the recorded times: a server that
    # buffered its response would deliver everything at once, with no such gap.
    profile = Profile()  # as recorded
    config = make_config([story(stall_ms=250.0)], profile)
    with serve_in_thread(build_app(config)) as base:
        async with httpx.AsyncClient() as client:
            result = await record_stream(
                client,
                "openai",
                base + "/v1",
                "m",
                Prompt([{"role": "user", "content": "x"}]),
                None,
                "r",
            )
    rec = result.recording
    served = config.served[-1].schedule
    assert result.ok and rec.text == served.text
    assert len(rec.chunks) == len(served.chunks)
    gaps = [b.t_ms - a.t_ms for a, b in zip(rec.chunks, rec.chunks[1:], strict=False)]
    assert gaps.index(max(gaps)) == 4 and max(gaps) >= 150


def test_client_going_away_stops_the_player():
    profile = Profile.from_table({"ttft": "constant:10", "itl": "constant:200"})
    config = make_config([story()], profile)
    with serve_in_thread(build_app(config)) as base:
        body = {"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]}
        with (
            httpx.Client() as http,
            http.stream("POST", base + "/v1/chat/completions", json=body) as response,
        ):
            lines = response.iter_lines()
            while "Once" not in next(lines):
                pass
        served = config.served[-1]
        for _ in range(500):  # the server notices on its next write
            if served.log is not None:
                break
            time.sleep(0.01)
        assert served.log is not None and served.log.cancelled_at_ms is not None
        assert len(served.log.records) < len(served.schedule.chunks)
        assert served.log.finished_ms is None


def test_cors_lets_a_browser_page_call_the_server():
    config = make_config([story()])
    config.cors_origins = ["http://localhost:3000"]
    with serve_in_thread(build_app(config)) as base:
        pre = httpx.options(
            base + "/v1/chat/completions",
            headers={
                "origin": "http://localhost:3000",
                "access-control-request-method": "POST",
                "access-control-request-headers": "authorization,content-type",
            },
        )
        assert pre.status_code == 200
        assert pre.headers["access-control-allow-origin"] == "http://localhost:3000"
        r = httpx.post(
            base + "/v1/chat/completions",
            headers={"origin": "http://localhost:3000"},
            json={"model": "m", "stream": True, "messages": [{"role": "user", "content": "x"}]},
        )
        assert r.headers["access-control-allow-origin"] == "http://localhost:3000"
        assert "x-uxlab-seed" in r.headers["access-control-expose-headers"]
        assert r.text.rstrip().endswith("data: [DONE]")
        other = httpx.options(
            base + "/v1/chat/completions",
            headers={"origin": "http://evil.example", "access-control-request-method": "POST"},
        )
        assert "access-control-allow-origin" not in other.headers


def test_the_serve_command_runs_and_answers(tmp_path):
    write_replay(story(), tmp_path)
    cmd = [
        sys.executable,
        "-m",
        "uxlab",
        "serve",
        str(tmp_path),
        "--port",
        "0",
        "--ttft",
        "40",
        "--itl",
        "constant:2",
        "--seed",
        "5",
        "--token",
        TOKEN,
    ]
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    try:
        banner = proc.stderr.readline()
        assert "127.0.0.1" in banner and "token required" in banner
        base = re.search(r"(http://127\.0\.0\.1:\d+/v1)", banner).group(1)
        client = openai.OpenAI(base_url=base, api_key=TOKEN, max_retries=0)
        chunks = list(
            client.chat.completions.create(
                model="m", stream=True, messages=[{"role": "user", "content": "x"}]
            )
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        assert text == "Once upon a time there was a stream."
        assert "request 0 (openai): story seed 5" in proc.stderr.readline()
        short = client.chat.completions.create(
            model="m", max_tokens=2, messages=[{"role": "user", "content": "x"}]
        )
        assert short.choices[0].message.content == "Once upon"
        line = proc.stderr.readline()
        assert "request 1 (openai): story seed 6, cut at max_tokens 2" in line
    finally:
        proc.terminate()
        proc.wait(timeout=10)
