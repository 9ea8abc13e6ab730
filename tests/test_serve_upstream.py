"""`uxlab serve --upstream`: a real upstream's stream re-timed onto a profile, over loopback.

The upstream is the project's own `uxlab serve` playing a corpus fast (or the fake vendor
of `live_servers` for misbehaviour); the client is the official `openai` SDK talking to a
second `uxlab serve` started with an upstream. Checked: the upstream's text arrives
unchanged; the proxy's schedule is the configured profile (exact due times, from the
server's own record); the player never hands an event before it is due, and the client's
TTFT and gaps are at least the profile's (lower bounds only: a loaded machine may be late,
never early); upstream errors reach the client as the API's errors and are recorded.
"""

from __future__ import annotations

import itertools
import json
import statistics
import time
from pathlib import Path

import pytest
from helpers.lazy import lazy_import
from live_servers import FakeVendor, free_port, serve_in_thread

from uxlab.live.serve import ServeConfig, build_app
from uxlab.live.upstream import (
    UpstreamConfig,
    UpstreamError,
    UpstreamProxy,
    parse_named_profile,
)
from uxlab.shaping import Profile, shape
from uxlab.shaping.profile import ProfileError
from uxlab.streams import Chunk, End, Header, Recording
from uxlab.streams.replay_file import read_replay

openai = lazy_import("openai")

WORDS = ["The", " tide", " comes", " in", " twice", " a", " day", "."]
TTFT_MS = 300.0
GAP_MS = 50.0


def corpus() -> Recording:
    events = [Chunk(10.0 + i, w, "content", n_tokens=1) for i, w in enumerate(WORDS)]
    return Recording(
        Header(id="tides", source={"kind": "synthetic", "model": "upstream-model"}),
        events,
        End(20.0, "stop", {"prompt_tokens": 4, "completion_tokens": len(WORDS)}),
    )


def upstream_app():
    """The project's own serve as the upstream: fast (5 ms TTFT, 2 ms gaps)."""
    fast = Profile.from_table({"ttft": "5", "itl": "constant:2"})
    rec = corpus()
    return build_app(ServeConfig([rec], shape=lambda r, s: shape(r, fast, seed=s)))


def proxy_for(url: str, tmp_path: Path | None = None, **kw) -> tuple[UpstreamProxy, object]:
    profile = Profile.from_table({"ttft": str(TTFT_MS), "itl": f"constant:{GAP_MS}"})
    named = dict([parse_named_profile("slow:ttft=600;itl=constant:80", profile)])
    config = UpstreamConfig(
        url=url, profile=profile, named=named, record_dir=tmp_path, key_env="UXLAB_TEST_NO_KEY"
    )
    proxy = UpstreamProxy(config, **kw)
    return proxy, build_app(ServeConfig([], shape=lambda r, s: r, upstream=proxy))


def stream_chat(base: str, model: str, key: str = "sk-client-key") -> tuple[float, list]:
    """(send instant, [(arrival, text)]) of the content deltas, on perf_counter ms."""
    client = openai.OpenAI(base_url=base + "/v1", api_key=key, max_retries=0)
    sent_ms = time.perf_counter() * 1000
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "tides?"}], stream=True
    )
    got = []
    for chunk in stream:
        if chunk.choices and chunk.choices[0].delta.content:
            got.append((time.perf_counter() * 1000, chunk.choices[0].delta.content))
    return sent_ms, got


def test_text_unchanged_and_timing_follows_the_profile(tmp_path):
    with serve_in_thread(upstream_app()) as up:
        proxy, app = proxy_for(up + "/v1", tmp_path)
        with serve_in_thread(app) as base:
            sent_ms, got = stream_chat(base, "upstream-model")
    assert "".join(t for _, t in got) == "".join(WORDS)
    (ex,) = proxy.exchanges
    assert ex.model == "upstream-model" and ex.profile_name == "default"
    shown = ex.schedule.shown
    assert [s.due_ms for s in shown] == [TTFT_MS + GAP_MS * i for i in range(len(WORDS))]
    for s in shown:  # shown = max(due, arrival); lateness is a violation, never early play
        assert s.shown_ms == max(s.due_ms, s.arrival_ms)
        assert s.violation_ms == round(max(s.arrival_ms - s.due_ms, 0.0), 3)
    # the client side: never earlier than the profile (the proxy's t0 is after our send)
    for (t, _), s in zip(got, shown, strict=True):
        assert t - sent_ms >= s.due_ms - 1  # lower bounds: a loaded machine is late, not early
    gaps = [b - a for (a, _), (b, _) in itertools.pairwise(got)]
    if not any(s.violation_ms for s in shown):  # a late upstream is passed on in a burst
        assert statistics.median(gaps) >= GAP_MS * 0.5  # loosely: the gaps are the profile's
    log = ex.served.log  # the server's player: never handed an event before it was due
    assert [r.scheduled_ms for r in log.records] == [s.shown_ms for s in shown]
    assert all(r.handed_ms >= r.scheduled_ms for r in log.records)
    # the record: the upstream as received (live, arrival times) and as served (retime)
    (served_file,) = (tmp_path / "served").glob("*.jsonl")
    (received_file,) = (tmp_path / "received").glob("*.jsonl")
    assert served_file.name == received_file.name.replace(".jsonl", ".served.jsonl")
    up_rec = read_replay(received_file)
    assert up_rec.header.source["kind"] == "live"
    assert "".join(c.text for c in up_rec.chunks) == "".join(WORDS)
    assert all(c.t_ms is not None for c in up_rec.chunks)
    served = read_replay(served_file)
    assert served.header.retime["from"] == up_rec.header.id
    assert served.header.retime["live"] is True
    assert [c.t_ms for c in served.chunks] == [s.shown_ms for s in shown]
    assert served.header.extra["served"]["violations_n"] == ex.violations["violations_n"]
    assert "sk-client-key" not in served_file.read_text() + received_file.read_text()


def test_model_suffix_picks_the_profile_and_models_lists_them():
    with serve_in_thread(upstream_app()) as up:
        proxy, app = proxy_for(up + "/v1")
        with serve_in_thread(app) as base:
            _, a = stream_chat(base, "upstream-model@slow")
            _, b = stream_chat(base, "upstream-model@ttft=100;itl=constant:10")
            client = openai.OpenAI(base_url=base + "/v1", api_key="k", max_retries=0)
            listed = {m.id: m for m in client.models.list()}
            with pytest.raises(openai.BadRequestError, match="no profile named"):
                stream_chat(base, "upstream-model@nosuch")
    assert "".join(t for _, t in a) == "".join(t for _, t in b) == "".join(WORDS)
    slow, inline = list(proxy.exchanges)[:2]
    assert slow.model == inline.model == "upstream-model"
    assert [s.due_ms for s in slow.schedule.shown][:2] == [600.0, 680.0]
    assert [s.due_ms for s in inline.schedule.shown][:2] == [100.0, 110.0]
    assert set(listed) == {"uxlab-upstream", "@slow"}
    assert "ttft=constant:600" in listed["@slow"].model_extra["uxlab_profile"]


def test_key_from_environment_else_the_clients_header(monkeypatch):
    vendor = FakeVendor()
    with serve_in_thread(vendor.app) as up:
        _proxy, app = proxy_for(up + "/v1")
        with serve_in_thread(app) as base:
            _, got = stream_chat(base, "plain", key="sk-from-client")
            monkeypatch.setenv("UXLAB_TEST_NO_KEY", "sk-from-env")
            stream_chat(base, "plain", key="sk-from-client")
    assert "".join(t for _, t in got) == "Hello world!"
    assert [r["key"] for r in vendor.requests] == ["sk-from-client", "sk-from-env"]


def test_server_token_is_never_passed_upstream():
    vendor = FakeVendor()
    with serve_in_thread(vendor.app) as up:
        proxy, app = proxy_for(up + "/v1", server_token="serve-token")
        app = build_app(ServeConfig([], shape=lambda r, s: r, token="serve-token", upstream=proxy))
        with serve_in_thread(app) as base:
            stream_chat(base, "plain", key="serve-token")
    assert vendor.requests[0]["key"] == ""


@pytest.mark.parametrize(
    ("model", "error"),
    [("status-429", "RateLimitError"), ("status-500", "InternalServerError")],
)
def test_upstream_http_errors_are_passed_on_and_recorded(tmp_path, model, error):
    vendor = FakeVendor()
    with serve_in_thread(vendor.app) as up:
        proxy, app = proxy_for(up + "/v1", tmp_path)
        with serve_in_thread(app) as base, pytest.raises(getattr(openai, error)) as caught:
            stream_chat(base, model)
    status = int(model.split("-")[1])
    assert caught.value.status_code == status
    if status == 429:
        assert caught.value.response.headers["retry-after"] == "1"
    (ex,) = proxy.exchanges
    assert ex.status == status and ex.message.startswith(f"HTTP {status}")
    (received,) = (tmp_path / "received").glob("*.jsonl")
    rec = read_replay(received)
    assert rec.errors[0].error["status"] == status


@pytest.mark.parametrize("model", ["cut", "midstream-error"])
def test_a_failing_stream_ends_in_an_error_event_and_is_recorded(tmp_path, model):
    vendor = FakeVendor()
    with serve_in_thread(vendor.app) as up:
        proxy, app = proxy_for(up + "/v1", tmp_path)
        with serve_in_thread(app) as base, pytest.raises(openai.APIError):
            stream_chat(base, model)
    (ex,) = proxy.exchanges
    assert ex.status == 200 and ex.message
    (served_file,) = (tmp_path / "served").glob("*.jsonl")
    served = read_replay(served_file)
    assert served.errors and served.end.finish_reason == "error"
    assert served.header.extra["served"]["upstream_message"] == ex.message


def test_unreachable_upstream_is_a_502():
    _proxy, app = proxy_for(f"http://127.0.0.1:{free_port()}/v1")  # nothing listens
    with serve_in_thread(app) as base, pytest.raises(openai.APIStatusError) as caught:
        stream_chat(base, "m")
    assert caught.value.status_code == 502
    assert "did not answer" in json.dumps(caught.value.body)


def test_a_profile_that_keeps_recorded_timing_is_refused():
    with pytest.raises(UpstreamError, match="live stream has none to keep"):
        UpstreamConfig(url="http://x/v1", profile=Profile())
    with pytest.raises(ProfileError, match="expected KEY=VALUE"):
        parse_named_profile("fast:ttft", Profile.from_table({"ttft": "1", "itl": "constant:1"}))


def test_anthropic_upstream_and_anthropic_client_cross_wire():
    import anthropic

    vendor = FakeVendor()
    profile = Profile.from_table({"ttft": "50", "itl": "constant:5"})
    with serve_in_thread(vendor.app) as up:
        proxy = UpstreamProxy(UpstreamConfig(url=up + "/v1", api="anthropic", profile=profile))
        app = build_app(ServeConfig([], shape=lambda r, s: r, upstream=proxy))
        with serve_in_thread(app) as base:
            client = openai.OpenAI(base_url=base + "/v1", api_key="k", max_retries=0)
            stream = client.chat.completions.create(
                model="plain",
                stream=True,
                messages=[
                    {"role": "system", "content": "be brief"},
                    {"role": "user", "content": "hi"},
                ],
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
            claude = anthropic.Anthropic(base_url=base, api_key="k", max_retries=0)
            with claude.messages.stream(
                model="plain", max_tokens=50, messages=[{"role": "user", "content": "hi"}]
            ) as s:
                claude_text = "".join(s.text_stream)
    assert text == claude_text == "Hello world!"
    first = vendor.requests[0]
    assert first["api"] == "anthropic" and first["body"]["system"] == "be brief"
    assert [m["role"] for m in first["body"]["messages"]] == ["user"]
    assert vendor.requests[1]["body"]["max_tokens"] == 50


def test_cli_builds_an_upstream_server(tmp_path):
    import argparse

    from uxlab.cli import CliError, serve_cmd
    from uxlab.live.serve import ServeError

    parser = argparse.ArgumentParser()
    serve_cmd.register(parser.add_subparsers())
    argv = ["serve", "--upstream", "http://127.0.0.1:9/v1", "--ttft", "700", "--itl"]
    args = parser.parse_args([*argv, "constant:30", "--named-profile", "x:ttft=100"])
    config, what = serve_cmd.served_config(args)
    proxy = config.upstream
    assert proxy.profile_for("m@x")[2].ttft.to_spec() == "constant:100"
    assert "upstream http://127.0.0.1:9/v1" in what and "$OPENAI_API_KEY" in what
    with pytest.raises(CliError, match="no CORPUS"):
        serve_cmd.served_config(parser.parse_args([*argv, "constant:30", str(tmp_path)]))
    unset = [*argv, "constant:30", "--upstream-key-env", "UXLAB_TEST_UNSET_KEY"]
    with pytest.raises(ServeError, match="UXLAB_TEST_UNSET_KEY: that variable is not set"):
        serve_cmd.served_config(parser.parse_args(unset))


def test_profile_header_wins_over_the_model_suffix():
    with serve_in_thread(upstream_app()) as up:
        proxy, app = proxy_for(up + "/v1")
        with serve_in_thread(app) as base:
            client = openai.OpenAI(
                base_url=base + "/v1",
                api_key="k",
                max_retries=0,
                default_headers={"x-uxlab-profile": "slow"},
            )
            stream = client.chat.completions.create(
                model="upstream-model@ttft=100",
                messages=[{"role": "user", "content": "hi"}],
                stream=True,
            )
            text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "".join(WORDS)
    (ex,) = proxy.exchanges
    assert ex.profile_name == "slow" and ex.schedule.shown[0].due_ms == 600.0


def test_tool_calls_and_reasoning_pass_through_openai():
    vendor = FakeVendor()
    profile = Profile.from_table({"ttft": "50", "itl": "constant:5"})
    with serve_in_thread(vendor.app) as up:
        proxy = UpstreamProxy(UpstreamConfig(url=up + "/v1", profile=profile))
        app = build_app(ServeConfig([], shape=lambda r, s: r, upstream=proxy))
        with serve_in_thread(app) as base:
            client = openai.OpenAI(base_url=base + "/v1", api_key="k", max_retries=0)
            tools = [{"type": "function", "function": {"name": "f", "parameters": {}}}]
            ask = {"model": "tools", "messages": [{"role": "user", "content": "hi"}]}
            deltas = [
                c.choices[0].delta
                for c in client.chat.completions.create(**ask, tools=tools, stream=True)
                if c.choices
            ]
            whole = client.chat.completions.create(**ask).choices[0]
    calls = [t for d in deltas for t in d.tool_calls or []]
    assert calls[0].id == "call_1" and calls[0].function.name == "f"
    assert "".join(t.function.arguments or "" for t in calls) == '{"a": 1}'
    assert "".join(d.model_extra.get("reasoning_content") or "" for d in deltas) == "Thinking."
    assert vendor.requests[0]["body"]["tools"] == tools  # parameters go upstream as sent
    assert whole.finish_reason == "tool_calls" and whole.message.content == "Hello world!"
    assert whole.message.tool_calls[0].function.arguments == '{"a": 1}'


def test_a_slow_upstream_makes_the_schedule_wait_and_is_logged():
    vendor = FakeVendor()  # `stall`: 2 s of silence mid-stream
    done = []
    profile = Profile.from_table({"ttft": "50", "itl": "constant:5"})
    with serve_in_thread(vendor.app) as up:
        config = UpstreamConfig(url=up + "/v1", profile=profile, on_done=done.append)
        proxy = UpstreamProxy(config)
        app = build_app(ServeConfig([], shape=lambda r, s: r, upstream=proxy))
        with serve_in_thread(app) as base:
            _, got = stream_chat(base, "stall")
    assert "".join(t for _, t in got) == "Hello world!"
    (ex,) = done
    v = ex.violations
    assert v["violations_n"] >= 1 and v["violation_max_ms"] >= 1000  # lateness, a lower bound
    late = [s for s in ex.schedule.shown if s.violation_ms > 0]
    assert all(s.shown_ms == s.arrival_ms > s.due_ms for s in late)


def test_a_client_that_hangs_up_stops_the_upstream_request_and_is_recorded(tmp_path):
    import threading

    vendor = FakeVendor()  # `stall`: 2 s of silence after the first chunk
    finished = threading.Event()
    profile = Profile.from_table({"ttft": "20", "itl": "constant:5"})
    with serve_in_thread(vendor.app) as up:
        config = UpstreamConfig(
            url=up + "/v1", profile=profile, record_dir=tmp_path, on_done=lambda ex: finished.set()
        )
        proxy = UpstreamProxy(config)
        app = build_app(ServeConfig([], shape=lambda r, s: r, upstream=proxy))
        with serve_in_thread(app) as base:
            client = openai.OpenAI(base_url=base + "/v1", api_key="k", max_retries=0)
            stream = client.chat.completions.create(
                model="stall", messages=[{"role": "user", "content": "hi"}], stream=True
            )
            for chunk in stream:
                if chunk.choices and chunk.choices[0].delta.content:
                    break
            stream.close()
            assert finished.wait(timeout=30)
    (ex,) = proxy.exchanges
    assert ex.cancelled and ex.message == "cancelled"
    (served_file,) = (tmp_path / "served").glob("*.jsonl")
    served = read_replay(served_file).header.extra["served"]
    assert served["client_cancelled"] is True and "not kept" in served["note"]
    assert not (tmp_path / "received").exists()


@pytest.mark.parametrize("stream", [True, False])
def test_the_profiles_error_cuts_the_answer_and_the_upstream_is_still_recorded(tmp_path, stream):
    import threading

    finished = threading.Event()
    profile = Profile.from_table({"ttft": "20", "itl": "constant:5", "error_at": "2"})
    with serve_in_thread(upstream_app()) as up:
        config = UpstreamConfig(
            url=up + "/v1", profile=profile, record_dir=tmp_path, on_done=lambda ex: finished.set()
        )
        proxy = UpstreamProxy(config)
        app = build_app(ServeConfig([], shape=lambda r, s: r, upstream=proxy))
        with serve_in_thread(app) as base:
            client = openai.OpenAI(base_url=base + "/v1", api_key="k", max_retries=0)
            ask = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
            got = []
            with pytest.raises(openai.APIError, match=r"(?i)overloaded|injected"):
                if stream:
                    for c in client.chat.completions.create(**ask, stream=True):
                        got += [c.choices[0].delta.content or ""] if c.choices else []
                else:
                    client.chat.completions.create(**ask)
            assert finished.wait(timeout=30)
    assert "".join(got) == "".join(WORDS[:2]) if stream else got == []
    (ex,) = proxy.exchanges
    assert ex.schedule.cut_by_profile
    (received,) = (tmp_path / "received").glob("*.jsonl")
    assert read_replay(received).text == "".join(WORDS)  # the whole upstream answer


def test_a_dripping_upstream_arrives_unchanged():
    vendor = FakeVendor()  # `drip`: every byte on its own
    with serve_in_thread(vendor.app) as up:
        _, app = proxy_for(up + "/v1")
        with serve_in_thread(app) as base:
            _, got = stream_chat(base, "drip")
    assert "".join(t for _, t in got) == "Hello world!"


def test_an_upstream_429_reaches_an_anthropic_client_in_its_own_format():
    import anthropic

    vendor = FakeVendor()
    with serve_in_thread(vendor.app) as up:
        _, app = proxy_for(up + "/v1")  # an OpenAI upstream, an Anthropic client
        with serve_in_thread(app) as base:
            claude = anthropic.Anthropic(base_url=base, api_key="k", max_retries=0)
            with pytest.raises(anthropic.RateLimitError) as caught:
                claude.messages.create(
                    model="status-429", max_tokens=5, messages=[{"role": "user", "content": "hi"}]
                )
    assert caught.value.body["error"]["type"] == "rate_limit_error"
    assert "Rate limit reached" in caught.value.body["error"]["message"]
    assert caught.value.response.headers["retry-after"] == "1"


def anthropic_tool_upstream():
    """An Anthropic upstream whose answer is a sentence, then a `tool_use` block."""
    from starlette.applications import Starlette
    from starlette.responses import StreamingResponse
    from starlette.routing import Route

    def sse(event: str, data: dict) -> bytes:
        return f"event: {event}\ndata: {json.dumps(data)}\n\n".encode()

    def block(i: int, content: dict) -> bytes:
        start = {"type": "content_block_start", "index": i, "content_block": content}
        return sse("content_block_start", start)

    def delta(i: int, d: dict) -> bytes:
        return sse("content_block_delta", {"type": "content_block_delta", "index": i, "delta": d})

    def stop(i: int) -> bytes:
        return sse("content_block_stop", {"type": "content_block_stop", "index": i})

    message = {"id": "msg_1", "type": "message", "role": "assistant", "content": []}
    message.update(model="m", usage={"input_tokens": 3, "output_tokens": 1})
    events = [
        sse("message_start", {"type": "message_start", "message": message}),
        block(0, {"type": "text", "text": ""}),
        delta(0, {"type": "text_delta", "text": "Checking."}),
        stop(0),
        block(1, {"type": "tool_use", "id": "toolu_1", "name": "lookup", "input": {}}),
        delta(1, {"type": "input_json_delta", "partial_json": '{"q": '}),
        delta(1, {"type": "input_json_delta", "partial_json": '"tides"}'}),
        stop(1),
        sse(
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": "tool_use"},
                "usage": {"output_tokens": 9},
            },
        ),
        sse("message_stop", {"type": "message_stop"}),
    ]

    async def messages(request):
        async def gen():
            for ev in events:
                yield ev

        return StreamingResponse(gen(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/messages", messages, methods=["POST"])])


def test_tool_calls_from_an_anthropic_upstream_reach_both_sdks():
    import anthropic

    profile = Profile.from_table({"ttft": "20", "itl": "constant:5"})
    with serve_in_thread(anthropic_tool_upstream()) as up:
        proxy = UpstreamProxy(UpstreamConfig(url=up + "/v1", api="anthropic", profile=profile))
        app = build_app(ServeConfig([], shape=lambda r, s: r, upstream=proxy))
        with serve_in_thread(app) as base:
            ask = {"model": "m", "max_tokens": 50, "messages": [{"role": "user", "content": "?"}]}
            claude = anthropic.Anthropic(base_url=base, api_key="k", max_retries=0)
            with claude.messages.stream(**ask) as s:
                final = s.get_final_message()
            client = openai.OpenAI(base_url=base + "/v1", api_key="k", max_retries=0)
            whole = client.chat.completions.create(**ask).choices[0]
    text, call = final.content
    assert text.text == "Checking." and final.stop_reason == "tool_use"
    assert (call.id, call.name, call.input) == ("toolu_1", "lookup", {"q": "tides"})
    assert whole.finish_reason == "tool_calls" and whole.message.content == "Checking."
    (tc,) = whole.message.tool_calls
    assert (tc.id, tc.function.name, tc.function.arguments) == (
        "toolu_1",
        "lookup",
        '{"q": "tides"}',
    )


def test_interleaved_tool_calls_keep_their_arguments_apart():
    from uxlab.live.live_schedule import LiveSchedule
    from uxlab.live.wire_formats import tool_calls
    from uxlab.streams import Meta

    for chunking in (None, "3"):
        table = {"ttft": "10", "itl": "constant:5"} | ({"chunk": chunking} if chunking else {})
        schedule = LiveSchedule(Profile.from_table(table), seed=1)
        schedule.feed(Meta(0, {"kind": "tool_call", "index": 0, "id": "a", "name": "f"}), 1.0)
        schedule.feed(Meta(0, {"kind": "tool_call", "index": 1, "id": "b", "name": "g"}), 2.0)
        for t, (text, call) in enumerate([('{"x":', 0), ('{"y":', 1), (" 1}", 0), (" 2}", 1)]):
            chunk = Chunk(0, text, "tool", n_tokens=1, extra={"tool_index": call})
            schedule.feed(chunk, 3.0 + t)
        schedule.add_end(10.0, "tool_calls")
        calls = {c["id"]: c["args"] for c in tool_calls(schedule.to_recording())}
        assert calls == {"a": '{"x": 1}', "b": '{"y": 2}'}, chunking


def test_a_browser_page_may_pick_a_profile_and_read_which_it_got():
    import httpx

    with serve_in_thread(upstream_app()) as up:
        proxy, _ = proxy_for(up + "/v1")
        config = ServeConfig([], shape=lambda r, s: r, upstream=proxy, cors_origins=["*"])
        with serve_in_thread(build_app(config)) as base:
            origin = {"origin": "http://app.example"}
            pre = httpx.options(
                base + "/v1/chat/completions",
                headers={
                    **origin,
                    "access-control-request-method": "POST",
                    "access-control-request-headers": "content-type,x-uxlab-profile",
                },
            )
            body = {"model": "upstream-model", "messages": [{"role": "user", "content": "hi"}]}
            answer = httpx.post(
                base + "/v1/chat/completions",
                json=body,
                headers={**origin, "x-uxlab-profile": "slow"},
                timeout=30,
            )
    assert pre.status_code == 200
    assert "x-uxlab-profile" in pre.headers["access-control-allow-headers"].lower()
    assert answer.status_code == 200 and answer.headers["x-uxlab-profile"] == "slow"
    assert "x-uxlab-profile" in answer.headers["access-control-expose-headers"]
    assert answer.json()["choices"][0]["message"]["content"] == "".join(WORDS)


PEER_CAPTURE = Path(__file__).parent / "data" / "guidellm-mock-0.8.1"


def captured_peer_upstream(requests: list[dict], fail: bool = False):
    """guidellm's mock server, replayed: its captured SSE bytes, event by event.

    A request with `tools` gets the tool-call capture, any other the text one; the usage
    event is sent only when the request asks for it (as the mock does). With `fail`, every
    request gets the mock's captured HTTP 500 body."""
    from starlette.applications import Starlette
    from starlette.responses import Response, StreamingResponse
    from starlette.routing import Route

    def events(name: str) -> list[bytes]:
        raw = (PEER_CAPTURE / name).read_bytes()
        return [part + b"\n\n" for part in raw.split(b"\n\n") if part]

    async def chat(request):
        body = await request.json()
        requests.append(body)
        if fail:
            error = (PEER_CAPTURE / "error_500.json").read_bytes()
            return Response(error, status_code=500, media_type="application/json")
        sent = events("tool_call.sse" if body.get("tools") else "chat_usage.sse")
        if not (body.get("stream_options") or {}).get("include_usage"):
            sent = [e for e in sent if b'"usage"' not in e]

        async def gen():
            for ev in sent:
                yield ev

        return StreamingResponse(gen(), media_type="text/event-stream")

    return Starlette(routes=[Route("/v1/chat/completions", chat, methods=["POST"])])


def peer_deltas(name: str) -> list[dict]:
    raw = (PEER_CAPTURE / name).read_text()
    datas = [line[6:] for line in raw.splitlines() if line.startswith("data: ")]
    return [json.loads(d) for d in datas if d != "[DONE]"]


def test_a_peers_captured_stream_passes_through_chunk_for_chunk(tmp_path):
    """guidellm's mock (no `role`, whitespace-only pieces, a usage event with no choices)."""
    want = [
        c["choices"][0]["delta"]["content"]
        for c in peer_deltas("chat_usage.sse")
        if c["choices"] and c["choices"][0]["delta"].get("content")
    ]
    assert " " in want  # the capture has the whitespace-only pieces this checks
    requests: list[dict] = []
    with serve_in_thread(captured_peer_upstream(requests)) as up:
        proxy, app = proxy_for(up + "/v1", tmp_path)
        with serve_in_thread(app) as base:
            client = openai.OpenAI(base_url=base + "/v1", api_key="k", max_retries=0)
            ask = {"model": "mockmodel", "messages": [{"role": "user", "content": "Say hello"}]}
            chunks = list(
                client.chat.completions.create(
                    **ask, stream=True, stream_options={"include_usage": True}
                )
            )
            plain = list(client.chat.completions.create(**ask, stream=True))
            whole = client.chat.completions.create(**ask)
    for got in (chunks, plain):
        pieces = [c.choices[0].delta.content for c in got if c.choices]
        assert [p for p in pieces if p] == want  # chunk for chunk, spaces kept
        assert [c.choices[0].finish_reason for c in got if c.choices][-1] == "stop"
    usage = [c.usage for c in chunks if c.usage]
    assert [(u.prompt_tokens, u.completion_tokens) for u in usage] == [(3, 6)]
    assert not [c for c in plain if c.usage]  # not asked for, not sent
    assert whole.choices[0].message.content == "".join(want)
    assert whole.usage.completion_tokens == 6
    received = sorted((tmp_path / "received").glob("*.jsonl"))
    assert len(received) == 3
    for path in received:  # the record: the upstream's pieces as they came
        assert [c.text for c in read_replay(path).chunks] == want
    for ex in proxy.exchanges:  # on schedule, or as the upstream came when it came late
        assert all(s.shown_ms == max(s.due_ms, s.arrival_ms) for s in ex.schedule.shown)
        late = [s for s in ex.schedule.shown if s.arrival_ms > s.due_ms]
        assert ex.violations["violations_n"] == len(late)


def test_a_peers_captured_tool_call_passes_through():
    """The mock's tool call: id and name first with empty arguments, then one char each."""
    deltas = peer_deltas("tool_call.sse")
    (first,) = deltas[0]["choices"][0]["delta"]["tool_calls"]
    requests: list[dict] = []
    tools = [{"type": "function", "function": {"name": "get_weather", "parameters": {}}}]
    with serve_in_thread(captured_peer_upstream(requests)) as up:
        _proxy, app = proxy_for(up + "/v1")
        with serve_in_thread(app) as base:
            client = openai.OpenAI(base_url=base + "/v1", api_key="k", max_retries=0)
            ask = {"model": "mockmodel", "messages": [{"role": "user", "content": "weather?"}]}
            got = list(
                client.chat.completions.create(
                    **ask, tools=tools, tool_choice="required", stream=True
                )
            )
            whole = client.chat.completions.create(**ask, tools=tools, tool_choice="required")
    calls = [t for c in got if c.choices for t in c.choices[0].delta.tool_calls or []]
    assert (calls[0].id, calls[0].function.name) == (first["id"], "get_weather")
    assert "".join(t.function.arguments or "" for t in calls) == "{}"
    assert [c.choices[0].finish_reason for c in got if c.choices][-1] == "tool_calls"
    (call,) = whole.choices[0].message.tool_calls
    assert (call.id, call.function.name, call.function.arguments) == (
        first["id"],
        "get_weather",
        "{}",
    )
    assert whole.choices[0].finish_reason == "tool_calls"
    assert requests[0]["tools"] == tools and requests[0]["tool_choice"] == "required"


def test_a_peers_captured_http_500_is_passed_on_and_recorded(tmp_path):
    want = json.loads((PEER_CAPTURE / "error_500.json").read_text())
    with serve_in_thread(captured_peer_upstream([], fail=True)) as up:
        proxy, app = proxy_for(up + "/v1", tmp_path)
        with serve_in_thread(app) as base, pytest.raises(openai.InternalServerError) as caught:
            stream_chat(base, "mockmodel")
    assert caught.value.status_code == 500 and caught.value.body == want["error"]
    (ex,) = proxy.exchanges
    assert ex.status == 500 and want["error"]["message"] in ex.message
    (received,) = (tmp_path / "received").glob("*.jsonl")
    assert read_replay(received).errors[0].error["status"] == 500
