"""`uxlab serve` wire timing and bodies: meta events at their scheduled time, tool calls.

The SSE sink gets meta events from the player (`apply_meta`): the role prelude goes out at
its scheduled offset, not with the response headers, and a tool call starts at its own
meta event. Checked on a virtual clock (exact times) and over loopback with the live
recorder (arrival no earlier than scheduled); non-streaming bodies with the official SDKs.
"""

from __future__ import annotations

import asyncio
import json

import httpx
import pytest
from helpers.lazy import lazy_import
from live_servers import serve_in_thread

from uxlab.clock import VirtualClock
from uxlab.live.clients import Prompt
from uxlab.live.record import record_stream
from uxlab.live.serve import ServeConfig, build_app
from uxlab.live.sse_sink import SSESink
from uxlab.player import Player
from uxlab.shaping import Profile, shape
from uxlab.streams import Chunk, End, Header, Meta, Recording
from uxlab.streams.metrics import describe

anthropic = lazy_import("anthropic")
openai = lazy_import("openai")


def tool_answer(role_ms: float = 100.0) -> Recording:
    """A role prelude, two content chunks, a tool call announced at 400 ms, its arguments."""
    return Recording(
        Header(
            id="lookup",
            source={"kind": "synthetic", "model": "rec-model"},
            request={"messages": [{"role": "user", "content": "look it up"}]},
        ),
        events=[
            Meta(role_ms, {"kind": "role", "role": "assistant"}),
            Chunk(300, "Looking", "content", n_tokens=1),
            Chunk(330, " it up.", "content", n_tokens=2),
            Meta(400, {"kind": "tool_call", "index": 0, "id": "call_9", "name": "search"}),
            Chunk(450, '{"q": ', "tool", n_tokens=2, extra={"tool_index": 0}),
            Chunk(480, '"tides"}', "tool", n_tokens=2, extra={"tool_index": 0}),
        ],
        end=End(500, "tool_calls", {"prompt_tokens": 5, "completion_tokens": 7}),
    )


def no_args_tool() -> Recording:
    """A tool call with no arguments at all: only its meta event says it exists."""
    return Recording(
        Header(id="now", request={"messages": [{"role": "user", "content": "time?"}]}),
        events=[
            Meta(50, {"kind": "role", "role": "assistant"}),
            Meta(120, {"kind": "tool_call", "index": 0, "id": "call_now", "name": "clock"}),
        ],
        end=End(150, "tool_calls", None),
    )


class _TimedQueue(asyncio.Queue):
    """The sink's queue, noting the clock time of every piece put on it."""

    def __init__(self, clock: VirtualClock):
        super().__init__()
        self.clock = clock
        self.puts: list[tuple[float, bytes | None]] = []

    def put_nowait(self, item):
        self.puts.append((self.clock.now_ms(), item))
        super().put_nowait(item)


async def play_to_sink(wire: str, schedule: Recording) -> list[tuple[float, list[dict]]]:
    """(time, SSE events as {event, data}) for every piece the sink queued."""
    clock = VirtualClock()
    sink = SSESink(wire, schedule, "m", response_id="r1", created_s=0)
    sink.queue = _TimedQueue(clock)
    await Player(schedule, sink, clock=clock).play(t0_ms=0.0)
    out = []
    for t_ms, piece in sink.queue.puts:
        if piece is None:
            continue
        events = []
        for block in piece.decode().strip().split("\n\n"):
            fields = dict(line.split(": ", 1) for line in block.splitlines())
            data = fields["data"]
            events.append({"event": fields.get("event"), "data": data})
        out.append((t_ms, events))
    return out


async def test_openai_prelude_and_tool_start_leave_at_their_scheduled_times():
    pieces = await play_to_sink("openai", tool_answer())
    times = [t for t, _ in pieces]
    assert times == [100.0, 300.0, 330.0, 400.0, 450.0, 480.0, 500.0]
    first = json.loads(pieces[0][1][0]["data"])
    assert first["choices"][0]["delta"] == {"role": "assistant", "content": ""}
    start = json.loads(pieces[3][1][0]["data"])["choices"][0]["delta"]["tool_calls"][0]
    assert start == {
        "index": 0,
        "id": "call_9",
        "type": "function",
        "function": {"name": "search", "arguments": ""},
    }
    args = json.loads(pieces[4][1][0]["data"])["choices"][0]["delta"]["tool_calls"][0]
    assert args == {"index": 0, "function": {"arguments": '{"q": '}}  # no second id/name
    assert pieces[-1][1][-1]["data"] == "[DONE]"


async def test_anthropic_message_start_at_the_role_event_and_tool_block_at_its_meta():
    pieces = await play_to_sink("anthropic", tool_answer())
    names = [(t, [e["event"] for e in evs]) for t, evs in pieces]
    assert names[0] == (100.0, ["message_start", "ping"])
    assert names[1] == (300.0, ["content_block_start", "content_block_delta"])
    assert names[3] == (400.0, ["content_block_stop", "content_block_start"])
    block = json.loads(pieces[3][1][1]["data"])["content_block"]
    assert block == {"type": "tool_use", "id": "call_9", "name": "search", "input": {}}
    assert names[4] == (450.0, ["content_block_delta"])  # the same block continues
    assert names[-1] == (500.0, ["content_block_stop", "message_delta", "message_stop"])


async def test_a_schedule_without_role_event_sends_the_prelude_with_its_first_chunk():
    rec = tool_answer()
    rec.events = [e for e in rec.events if not (isinstance(e, Meta) and e.data["kind"] == "role")]
    pieces = await play_to_sink("openai", rec)
    t_ms, events = pieces[0]
    assert t_ms == 300.0 and len(events) == 2
    assert json.loads(events[0]["data"])["choices"][0]["delta"]["role"] == "assistant"
    assert json.loads(events[1]["data"])["choices"][0]["delta"]["content"] == "Looking"


async def test_anthropic_recorded_ping_goes_out_at_its_own_time():
    rec = tool_answer()
    rec.events.insert(1, Meta(200, {"kind": "ping"}))
    names = [(t, [e["event"] for e in evs]) for t, evs in await play_to_sink("anthropic", rec)]
    assert names[:2] == [(100.0, ["message_start"]), (200.0, ["ping"])]


@pytest.mark.parametrize("api", ["openai", "anthropic"])
async def test_recorder_sees_the_prelude_at_its_shaped_time_not_with_the_headers(api):
    # Shaped to TTFT 600: the role event (100 of 300 ms before the first token) moves to
    # 200 ms. Before apply_meta it left with the response headers, at ~0 ms.
    profile = Profile.from_table({"ttft": "constant:600", "itl": "constant:20"})
    config = ServeConfig([tool_answer()], lambda r, s: shape(r, profile, seed=s))
    with serve_in_thread(build_app(config)) as base:
        async with httpx.AsyncClient() as client:
            result = await record_stream(
                client,
                api,
                base + "/v1",
                "m",
                Prompt([{"role": "user", "content": "look it up"}]),
                None,
                "r",
            )
    rec = result.recording
    served = config.served[-1].schedule
    role_ms = next(e.t_ms for e in served.events if isinstance(e, Meta))
    first_chunk_ms = served.chunks[0].t_ms
    assert result.ok and rec.text == served.text and role_ms == pytest.approx(200.0)
    metrics = describe(rec)
    # Arrival is never before the schedule (the server's t0 is after the client's send),
    # and the prelude is its own event, well ahead of the first token.
    assert role_ms <= metrics["ttft_first_event_ms"] < first_chunk_ms
    assert metrics["ttft_ms"] >= first_chunk_ms
    assert rec.header.extra["http"]["headers_ms"] < role_ms  # the headers left at once


@pytest.fixture(scope="module")
def tool_server():
    profile = Profile.from_table({"ttft": "constant:20", "itl": "constant:2"})

    def shape_timed(rec: Recording, seed: int) -> Recording:
        return shape(rec, profile, seed=seed) if rec.chunks else rec  # no chunks: as recorded

    config = ServeConfig([tool_answer(), no_args_tool()], shape_timed, seed=3)
    with serve_in_thread(build_app(config)) as base:
        yield base


def test_openai_sdk_non_streaming_body_has_tool_calls_and_usage(tool_server):
    client = openai.OpenAI(base_url=tool_server + "/v1", api_key="x", max_retries=0)
    reply = client.chat.completions.create(
        model="m", messages=[{"role": "user", "content": "look it up"}]
    )
    message = reply.choices[0].message
    assert message.content == "Looking it up."
    (call,) = message.tool_calls
    assert (call.id, call.type, call.function.name) == ("call_9", "function", "search")
    assert json.loads(call.function.arguments) == {"q": "tides"}
    assert reply.choices[0].finish_reason == "tool_calls"
    usage = reply.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (5, 7, 12)


def test_anthropic_sdk_non_streaming_body_has_tool_use_and_usage(tool_server):
    client = anthropic.Anthropic(base_url=tool_server, api_key="x", max_retries=0)
    msg = client.messages.create(
        model="m", max_tokens=100, messages=[{"role": "user", "content": "look it up"}]
    )
    assert [b.type for b in msg.content] == ["text", "tool_use"]
    assert msg.content[0].text == "Looking it up."
    tool = msg.content[1]
    assert (tool.id, tool.name, tool.input) == ("call_9", "search", {"q": "tides"})
    assert msg.stop_reason == "tool_use"
    assert (msg.usage.input_tokens, msg.usage.output_tokens) == (5, 7)


def test_a_tool_call_without_arguments_reaches_both_sdks(tool_server):
    messages = [{"role": "user", "content": "time?"}]
    oai = openai.OpenAI(base_url=tool_server + "/v1", api_key="x", max_retries=0)
    reply = oai.chat.completions.create(model="m", messages=messages)
    (call,) = reply.choices[0].message.tool_calls
    assert call.function.name == "clock" and call.function.arguments == ""
    assert reply.choices[0].message.content is None  # a tool-only answer, as the API sends
    with oai.chat.completions.stream(model="m", messages=messages) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.tool_calls[0].id == "call_now"
    ant = anthropic.Anthropic(base_url=tool_server, api_key="x", max_retries=0)
    msg = ant.messages.create(model="m", max_tokens=10, messages=messages)
    assert [(b.type, b.name, b.input) for b in msg.content] == [("tool_use", "clock", {})]
    with ant.messages.stream(model="m", max_tokens=10, messages=messages) as stream:
        streamed = stream.get_final_message()
    assert [(b.type, b.name) for b in streamed.content] == [("tool_use", "clock")]
    assert streamed.stop_reason == "tool_use"


async def test_openai_tool_calls_are_numbered_from_zero_whatever_the_recorded_index():
    # An Anthropic recording numbers a tool call by its content block (here 2).
    rec = tool_answer()
    for ev in rec.events:
        if isinstance(ev, Meta) and ev.data["kind"] == "tool_call":
            ev.data["index"] = 2
        elif isinstance(ev, Chunk) and ev.channel == "tool":
            ev.extra["tool_index"] = 2
    pieces = await play_to_sink("openai", rec)
    deltas = [
        json.loads(e["data"])["choices"][0]["delta"]
        for _, evs in pieces
        for e in evs
        if e["data"] != "[DONE]"
    ]
    calls = [d["tool_calls"][0] for d in deltas if "tool_calls" in d]
    assert [c["index"] for c in calls] == [0, 0, 0]
    names = [(t, [e["event"] for e in evs]) for t, evs in await play_to_sink("anthropic", rec)]
    assert names[3] == (400.0, ["content_block_stop", "content_block_start"])
    assert names[4] == (450.0, ["content_block_delta"])


async def test_a_call_named_again_by_each_delta_keeps_its_id_when_its_block_reopens():
    """A live stream names the call's index again with every delta (id and name on the
    first only); text between two of its pieces closes its Anthropic block, and the block
    that reopens for the next piece still carries the call's own id and name."""
    start = {"kind": "tool_call", "index": 0}
    schedule = Recording(
        Header(id="live-like", source={"kind": "synthetic"}, request={}),
        events=[
            Meta(100, {**start, "id": "toolu_7", "name": "lookup"}),
            Chunk(150, '{"q": ', "tool", n_tokens=1, extra={"tool_index": 0}),
            Meta(160, {**start, "id": None, "name": None}),
            Chunk(200, "(checking)", "content", n_tokens=1),
            Chunk(250, '"tides"}', "tool", n_tokens=1, extra={"tool_index": 0}),
        ],
        end=End(300, "tool_use"),
    )
    pieces = await play_to_sink("anthropic", schedule)
    blocks = [
        json.loads(e["data"])["content_block"]
        for _, events in pieces
        for e in events
        if e["event"] == "content_block_start"
    ]
    tools = [(b["id"], b["name"]) for b in blocks if b["type"] == "tool_use"]
    assert tools == [("toolu_7", "lookup"), ("toolu_7", "lookup")], blocks
