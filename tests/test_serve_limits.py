"""`uxlab serve` honours `max_tokens` (finish reason `length`) and refuses `n > 1`."""

from __future__ import annotations

import httpx
import pytest
from helpers.lazy import lazy_import
from live_servers import serve_in_thread

from uxlab.live.request_limits import (
    Limits,
    RequestParamError,
    cut_at_tokens,
    request_limits,
)
from uxlab.live.serve import ServeConfig, build_app
from uxlab.shaping import Profile, shape
from uxlab.streams import Chunk, End, ErrorEvent, Header, Meta, Recording

anthropic = lazy_import("anthropic")
openai = lazy_import("openai")

WORDS = ["Once", " upon", " a", " time", " there", " was", " a", " stream", "."]


def story() -> Recording:
    return Recording(
        Header(id="story", request={"messages": [{"role": "user", "content": "tell"}]}),
        events=[Meta(50, {"kind": "role"})]
        + [Chunk(100 + 10 * i, w, n_tokens=1) for i, w in enumerate(WORDS)],
        end=End(200, "stop", {"prompt_tokens": 4, "completion_tokens": 9}),
    )


def mixed() -> Recording:
    """Reasoning (3 tokens in one chunk), content without token counts, a later error."""
    return Recording(
        Header(id="mixed"),
        events=[
            Chunk(10, "Think it over", "reasoning", n_tokens=3),
            Chunk(20, "Yes", "content"),
            Chunk(30, ", surely", "content"),
            ErrorEvent(40, {"type": "overloaded_error"}),
        ],
        end=End(40, "error", {"input_tokens": 6, "output_tokens": 5}),
    )


def test_cut_counts_tokens_over_every_channel_and_splits_the_crossing_chunk():
    cut = cut_at_tokens(mixed(), 2)
    assert [(c.channel, c.text, c.n_tokens) for c in cut.chunks] == [("reasoning", "Think it", 2)]
    assert cut.end.finish_reason == "length" and cut.end.t_ms == 10
    assert cut.end.usage == {"input_tokens": 6}  # output tokens are what was kept
    assert cut.errors == []  # the stream ended before its error
    cut = cut_at_tokens(mixed(), 4)  # content chunks without n_tokens count one each
    assert [c.text for c in cut.chunks] == ["Think it over", "Yes"]
    assert cut.header.extra["served_max_tokens"] == 4


def test_a_schedule_within_the_limit_is_unchanged():
    rec = story()
    assert cut_at_tokens(rec, 9) is rec and cut_at_tokens(rec, 100) is rec


@pytest.mark.parametrize(
    ("body", "wire", "limits"),
    [
        ({}, "openai", Limits()),
        ({"max_tokens": 5}, "openai", Limits(5)),
        ({"max_completion_tokens": 3, "max_tokens": 5}, "openai", Limits(3)),
        ({"max_completion_tokens": 3}, "anthropic", Limits()),  # not an Anthropic field
        ({"max_tokens": 7, "n": 1}, "anthropic", Limits(7)),
    ],
)
def test_request_limits(body, wire, limits):
    assert request_limits(body, wire) == limits


@pytest.mark.parametrize(
    ("body", "param"),
    [
        ({"n": 2}, "n"),
        ({"n": 0}, "n"),
        ({"max_tokens": 0}, "max_tokens"),
        ({"max_tokens": "10"}, "max_tokens"),
        ({"max_completion_tokens": True}, "max_completion_tokens"),
    ],
)
def test_bad_request_limits_name_the_parameter(body, param):
    with pytest.raises(RequestParamError) as info:
        request_limits(body, "openai")
    assert info.value.param == param and str(info.value).startswith(f"{param}: ")


@pytest.fixture(scope="module")
def base():
    profile = Profile.from_table({"ttft": "constant:20", "itl": "constant:2"})
    config = ServeConfig([story()], lambda r, s: shape(r, profile, seed=s))
    with serve_in_thread(build_app(config)) as url:
        yield url


MESSAGES = [{"role": "user", "content": "tell"}]


def test_openai_streams_stop_at_max_tokens_with_finish_reason_length(base):
    client = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0)
    for key in ("max_tokens", "max_completion_tokens"):
        chunks = list(
            client.chat.completions.create(
                model="m",
                messages=MESSAGES,
                stream=True,
                stream_options={"include_usage": True},
                **{key: 4},
            )
        )
        text = "".join(c.choices[0].delta.content or "" for c in chunks if c.choices)
        finish = [c.choices[0].finish_reason for c in chunks if c.choices]
        assert text == "Once upon a time"
        assert [f for f in finish if f] == ["length"]
        assert chunks[-1].usage.completion_tokens == 4 and chunks[-1].usage.prompt_tokens == 4
    reply = client.chat.completions.create(model="m", messages=MESSAGES, max_tokens=2)
    assert reply.choices[0].message.content == "Once upon"
    assert reply.choices[0].finish_reason == "length" and reply.usage.completion_tokens == 2


def test_anthropic_stops_at_max_tokens_with_stop_reason_max_tokens(base):
    client = anthropic.Anthropic(base_url=base, api_key="x", max_retries=0)
    msg = client.messages.create(model="m", max_tokens=3, messages=MESSAGES)
    assert msg.content[0].text == "Once upon a"
    assert msg.stop_reason == "max_tokens" and msg.usage.output_tokens == 3
    with client.messages.stream(model="m", max_tokens=5, messages=MESSAGES) as stream:
        final = stream.get_final_message()
    assert final.content[0].text == "Once upon a time there"
    assert final.stop_reason == "max_tokens" and final.usage.output_tokens == 5
    msg = client.messages.create(model="m", max_tokens=100, messages=MESSAGES)
    assert msg.stop_reason == "end_turn" and msg.usage.output_tokens == 9


def test_n_above_one_is_a_400_in_each_apis_error_format(base):
    client = openai.OpenAI(base_url=base + "/v1", api_key="x", max_retries=0)
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=MESSAGES, n=2)
    assert info.value.status_code == 400 and info.value.param == "n"
    assert "one choice" in info.value.message and "n = 2" in info.value.message
    with pytest.raises(openai.BadRequestError) as info:
        client.chat.completions.create(model="m", messages=MESSAGES, stream=True, n=3)
    assert info.value.param == "n"
    aclient = anthropic.Anthropic(base_url=base, api_key="x", max_retries=0)
    with pytest.raises(anthropic.BadRequestError) as ainfo:
        aclient.messages.create(model="m", max_tokens=5, messages=MESSAGES, extra_body={"n": 2})
    body = ainfo.value.body
    assert body["type"] == "error" and body["error"]["type"] == "invalid_request_error"
    assert body["error"]["message"].startswith("n: ")


def test_a_bad_max_tokens_is_a_400_naming_it(base):
    r = httpx.post(
        base + "/v1/chat/completions", json={"model": "m", "messages": MESSAGES, "max_tokens": 0}
    )
    assert r.status_code == 400
    assert r.json()["error"]["param"] == "max_tokens"
    assert "whole number >= 1" in r.json()["error"]["message"]


@pytest.mark.parametrize(
    "parts",
    [
        [{"type": "text", "text": None}],  # once a 500
        [{"text": None}],
        [{"type": "text"}],
        [{"type": "text", "text": "a"}, {"type": "text", "text": 3}],
        [{"type": 7, "text": "a"}],
    ],
)
@pytest.mark.parametrize("path", ["/v1/chat/completions", "/v1/messages"])
def test_every_content_part_is_checked_a_400_never_a_500(base, parts, path):
    body = {"model": "m", "max_tokens": 5, "messages": [{"role": "user", "content": parts}]}
    r = httpx.post(base + path, json=body)
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["message"].startswith("messages[0].content[")


def test_anthropics_system_parts_are_checked_too(base):
    body = {"model": "m", "max_tokens": 5, "system": [{"type": "text", "text": None}],
            "messages": MESSAGES}  # fmt: skip
    r = httpx.post(base + "/v1/messages", json=body)
    assert r.status_code == 400 and r.json()["error"]["message"].startswith("system[0].text")
