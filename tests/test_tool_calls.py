"""Tool calls as each vendor streams them: one call each, named, with its arguments, and a
call whose pieces never completed kept and marked, never merged into another."""

from __future__ import annotations

import json

import pytest

from uxlab.streams.importers import (
    anthropic_events_to_recording,
    gemini_events_to_recording,
    openai_chat_events_to_recording,
    openai_responses_events_to_recording,
)
from uxlab.streams.importers.base import import_header
from uxlab.streams.importers.bedrock import bedrock_events_to_recording
from uxlab.streams.importers.gemini_sse import JsonPathWriter
from uxlab.streams.sse import SseEvent
from uxlab.streams.tool_calls import parse_json_path, tool_calls


def _header():
    return import_header("t", importer="test", origin="test")


def _events(objs, named=False):
    """Timed events 10 ms apart; `named`: the event name is the object's `type`."""
    return [
        SseEvent(o.get("type") if named and isinstance(o, dict) else None, _data(o), 10.0 * i)
        for i, o in enumerate(objs)
    ]


def _data(obj):
    return obj if isinstance(obj, str) else json.dumps(obj)


def _calls(rec):
    return [(c.name, c.parsed_arguments(), c.complete) for c in tool_calls(rec)]


# --- OpenAI Chat ------------------------------------------------------------------------


def _chunk(delta, finish=None):
    return {"choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def _tc(index, args, call_id=None, name=None):
    fn = {"arguments": args, **({"name": name} if name else {})}
    return {"index": index, **({"id": call_id} if call_id else {}), "function": fn}


def test_openai_parallel_calls_and_a_late_name():
    rec = openai_chat_events_to_recording(
        _events(
            [
                _chunk({"role": "assistant", "tool_calls": [_tc(0, "", "c1")]}),
                _chunk({"tool_calls": [_tc(0, '{"a":', name="first")]}),  # name comes late
                _chunk({"tool_calls": [_tc(0, "1}")]}),
                _chunk({"tool_calls": [_tc(1, '{"b":2}', "c2", "second")]}),
                _chunk({}, "tool_calls"),
                "[DONE]",
            ]
        ),
        _header(),
    )
    assert _calls(rec) == [("first", {"a": 1}, True), ("second", {"b": 2}, True)]
    assert [c.id for c in tool_calls(rec)] == ["c1", "c2"]


def test_openai_a_new_id_at_a_used_index_is_a_new_call_not_a_merge():
    rec = openai_chat_events_to_recording(
        _events(
            [
                _chunk({"tool_calls": [_tc(0, '{"a":1}', "c1", "f")]}),
                _chunk({"tool_calls": [_tc(0, '{"b":2}', "c2", "g")]}),  # a server reusing 0
                _chunk({}, "tool_calls"),
            ]
        ),
        _header(),
    )
    assert _calls(rec) == [("f", {"a": 1}, True), ("g", {"b": 2}, True)]
    assert len({c.index for c in tool_calls(rec)}) == 2


def test_openai_call_cut_off_is_kept_with_what_arrived_and_marked():
    rec = openai_chat_events_to_recording(
        _events([_chunk({"tool_calls": [_tc(0, '{"city": "Os', "c1", "weather")]})]),
        _header(),
    )
    (call,) = tool_calls(rec)
    assert call.arguments == '{"city": "Os' and not call.complete
    assert any("never completed" in n for n in rec.header.extra["import_notes"])


def test_openai_legacy_function_call_is_a_call():
    rec = openai_chat_events_to_recording(
        _events(
            [
                _chunk({"function_call": {"name": "lookup", "arguments": ""}}),
                _chunk({"function_call": {"arguments": '{"q": "x"}'}}),
                _chunk({}, "function_call"),
            ]
        ),
        _header(),
    )
    assert _calls(rec) == [("lookup", {"q": "x"}, True)]


# --- Anthropic --------------------------------------------------------------------------


def _block(index, block):
    return {"type": "content_block_start", "index": index, "content_block": block}


def _json_delta(index, piece):
    d = {"type": "input_json_delta", "partial_json": piece}
    return {"type": "content_block_delta", "index": index, "delta": d}


_START = {"type": "message_start", "message": {"role": "assistant", "content": [], "usage": {}}}
_STOP = [
    {"type": "message_delta", "delta": {"stop_reason": "tool_use"}, "usage": {}},
    {"type": "message_stop"},
]


def test_anthropic_mcp_call_keeps_name_id_and_server():
    mcp = {"type": "mcp_tool_use", "id": "mcptoolu_1", "name": "ask", "input": {}}
    rec = anthropic_events_to_recording(
        _events(
            [
                _START,
                _block(0, {**mcp, "server_name": "deepwiki"}),
                _json_delta(0, ""),
                _json_delta(0, '{"q": "wh'),
                _json_delta(0, 'at"}'),
                {"type": "content_block_stop", "index": 0},
                *_STOP,
            ],
            named=True,
        ),
        _header(),
    )
    (call,) = tool_calls(rec)
    assert (call.name, call.id, call.parsed_arguments()) == ("ask", "mcptoolu_1", {"q": "what"})
    assert call.info == {"tool_type": "mcp_tool_use", "server": "deepwiki"} and call.complete


def test_anthropic_input_whole_in_the_start_and_programmatic_calls():
    caller = {"type": "code_execution_20250825", "tool_id": "srvtoolu_1"}
    programmatic = {"type": "tool_use", "id": "toolu_p", "name": "roll", "input": {"n": 2}}
    start = {
        "type": "message_start",
        "message": {"role": "assistant", "content": [{**programmatic, "caller": caller}]},
    }
    server = {"type": "server_tool_use", "id": "srv_1", "name": "web_search"}
    rec = anthropic_events_to_recording(
        _events(
            [
                start,
                _block(0, {**server, "input": {"query": "tides"}}),
                {"type": "content_block_stop", "index": 0},
                *_STOP,
            ],
            named=True,
        ),
        _header(),
    )
    calls = tool_calls(rec)
    assert _calls(rec) == [("roll", {"n": 2}, True), ("web_search", {"query": "tides"}, True)]
    assert calls[0].info["caller"] == caller and calls[1].info["tool_type"] == "server_tool_use"
    assert len({c.index for c in calls}) == 2


def test_anthropic_pieces_after_a_whole_start_input_replace_it():
    call = {"type": "tool_use", "id": "t1", "name": "f", "input": {"old": 1}}
    rec = anthropic_events_to_recording(
        _events(
            [_START, _block(0, call), _json_delta(0, '{"new": 2}'), *_STOP],
            named=True,
        ),
        _header(),
    )
    (only,) = tool_calls(rec)
    assert only.parsed_arguments() == {"new": 2} and only.info["start_input_replaced"]


def test_anthropic_block_that_never_stopped_is_incomplete():
    call = {"type": "tool_use", "id": "t1", "name": "f", "input": {}}
    rec = anthropic_events_to_recording(
        _events([_START, _block(0, call), _json_delta(0, '{"a": ')], named=True), _header()
    )
    assert _calls(rec) == [("f", None, False)] and rec.end is None


# --- Gemini -----------------------------------------------------------------------------


def _fc(call, finish=None):
    cand = {"content": {"role": "model", "parts": [{"functionCall": call}]}}
    return {"candidates": [{**cand, **({"finishReason": finish} if finish else {})}]}


def _arg(path, value=None, more=False, kind="stringValue"):
    piece = {"jsonPath": path, kind: value}
    return {**piece, "willContinue": True} if more else piece


def test_gemini_streamed_arguments_become_one_call_per_call():
    rec = gemini_events_to_recording(
        _events(
            [
                _fc({"name": "getWeather", "willContinue": True}),
                _fc({"partialArgs": [_arg("$.location", "Bos", more=True)], "willContinue": True}),
                _fc({"partialArgs": [_arg("$.location", "ton")], "willContinue": True}),
                _fc({}),  # the end of the first call
                _fc({"name": "getWeather", "willContinue": True}),
                _fc({"partialArgs": [_arg("$.days", 3, kind="numberValue")]}),
                _fc({}, finish="STOP"),
            ]
        ),
        _header(),
    )
    assert _calls(rec) == [
        ("getWeather", {"location": "Boston"}, True),
        ("getWeather", {"days": 3}, True),
    ]
    # the pieces read as JSON text as they arrive (what the replay view and serve show)
    first = [c.text for c in rec.chunks if c.channel == "tool" and c.extra["tool_index"] == 0]
    assert first == ['{"location":"Bos', 'ton"', "}"] and json.loads("".join(first))


def test_gemini_pieces_out_of_path_order_are_rebuilt_from_their_paths():
    rec = gemini_events_to_recording(
        _events(
            [
                _fc(
                    {
                        "name": "write",
                        "partialArgs": [
                            _arg("$.path", "src/", more=True),
                            _arg("$.meta[0].name", "Ca", more=True),
                        ],
                        "willContinue": True,
                    }
                ),
                _fc({"partialArgs": [_arg("$.path", "main.py")], "willContinue": True}),
                _fc({"partialArgs": [_arg("$.meta[0].name", "t")]}),
            ]
        ),
        _header(),
    )
    (call,) = tool_calls(rec)
    assert call.parsed_arguments() == {"path": "src/main.py", "meta": [{"name": "Cat"}]}
    assert call.info["arguments_by_path"] is True and call.complete
    # served as a whole answer (OpenAI `tool_calls`), the arguments are the same JSON, not
    # the pieces joined in arrival order (which is not JSON here)
    from uxlab.live.wire_formats import tool_calls as served_tool_calls

    (served,) = served_tool_calls(rec)
    assert json.loads(served["args"]) == {"path": "src/main.py", "meta": [{"name": "Cat"}]}


def test_gemini_call_that_never_ends_is_incomplete_and_a_new_name_is_a_new_call():
    rec = gemini_events_to_recording(
        _events(
            [
                _fc({"name": "a", "willContinue": True}),
                _fc({"partialArgs": [_arg("$.x", "1", more=True)], "willContinue": True}),
                _fc({"name": "b", "willContinue": True}),  # a new call while `a` is open
                _fc({"partialArgs": [_arg("$.y", True, kind="boolValue")]}),
            ]
        ),
        _header(),
    )
    calls = tool_calls(rec)
    assert [(c.name, c.complete) for c in calls] == [("a", False), ("b", True)]
    # what arrived of `a`: rebuilt from its paths, so it reads as JSON even though cut off
    assert calls[0].parsed_arguments() == {"x": "1"} and calls[1].parsed_arguments() == {"y": True}
    assert "".join(c.text for c in rec.chunks if c.extra.get("tool_index") == 0) == '{"x":"1'


def test_gemini_whole_calls_are_unchanged():
    rec = gemini_events_to_recording(
        _events([_fc({"name": "f", "args": {"a": [1, 2]}}, finish="STOP")]), _header()
    )
    assert _calls(rec) == [("f", {"a": [1, 2]}, True)]


@pytest.mark.parametrize(
    "path,tokens",
    [
        ("$.a", ["a"]),
        ("$.a.b[2]['c d']", ["a", "b", 2, "c d"]),
        ('$["x.y"][0]', ["x.y", 0]),
        ("a.b", None),
    ],
)
def test_json_paths(path, tokens):
    assert parse_json_path(path) == tokens


def test_json_path_writer_writes_json_and_refuses_going_back():
    w = JsonPathWriter()
    text = w.piece(["a"], "x", is_string=True, more=True)
    text += w.piece(["a"], "y", is_string=True, more=False)
    text += w.piece(["b", 1], None, is_string=False, more=False)  # index 0 filled with null
    text += w.piece(["c", "d"], 2.5, is_string=False, more=False)
    text += w.close()
    assert json.loads(text) == {"a": "xy", "b": [None, None], "c": {"d": 2.5}}
    going_back = JsonPathWriter()
    going_back.piece(["a"], "x", is_string=True, more=False)
    going_back.piece(["b"], "y", is_string=True, more=False)
    assert going_back.piece(["a"], "z", is_string=True, more=False) is None  # "a" is closed
    assert going_back.close() == ""  # nothing more is written as JSON text


# --- Responses --------------------------------------------------------------------------


def _added(index, item):
    return {"type": "response.output_item.added", "output_index": index, "item": item}


def _done(index, item):
    return {"type": "response.output_item.done", "output_index": index, "item": item}


_CREATED = {"type": "response.created", "response": {"model": "m"}}
_COMPLETED = {"type": "response.completed", "response": {"status": "completed", "usage": {}}}


def test_responses_apply_patch_shell_local_shell_and_mcp_approval_are_calls():
    patch = {"type": "apply_patch_call", "call_id": "p1"}
    shell = {"type": "shell_call", "call_id": "s1", "action": {"commands": []}}
    local = {"type": "local_shell_call", "call_id": "l1", "action": {"command": []}}
    approval = {
        "type": "mcp_approval_request",
        "id": "a1",
        "name": "shorten",
        "server_label": "zip",
        "arguments": '{"url": "u"}',
    }
    diff = "response.apply_patch_call_operation_diff.delta"
    cmd = "response.shell_call_command.delta"
    rec = openai_responses_events_to_recording(
        _events(
            [
                _CREATED,
                _added(0, {**patch, "operation": {"type": "create_file", "path": "a.md"}}),
                {"type": diff, "output_index": 0, "delta": "+line 1\n"},
                {"type": diff, "output_index": 0, "delta": "+line 2\n"},
                _done(0, patch),
                _added(1, shell),
                {"type": cmd, "output_index": 1, "delta": "ls"},
                {
                    "type": "response.shell_call_command.added",
                    "output_index": 1,
                    "command_index": 1,
                },
                {"type": cmd, "output_index": 1, "delta": "pwd"},
                _done(1, shell),
                _added(2, local),
                _done(2, {**local, "action": {"type": "exec", "command": ["ls", "-a"]}}),
                _added(3, approval),
                _done(3, approval),
                _COMPLETED,
            ],
            named=True,
        ),
        _header(),
    )
    calls = tool_calls(rec)
    assert [(c.name, c.arguments) for c in calls[:2]] == [
        ("apply_patch", "+line 1\n+line 2\n"),
        ("shell", "ls\npwd"),
    ]
    assert calls[0].info == {
        "tool_type": "apply_patch_call",
        "operation": "create_file",
        "path": "a.md",
    }
    assert calls[2].name == "local_shell" and calls[2].parsed_arguments()["command"] == ["ls", "-a"]
    assert (calls[3].name, calls[3].parsed_arguments(), calls[3].info["server"]) == (
        "shorten",
        {"url": "u"},
        "zip",
    )
    assert all(c.complete for c in calls)


def test_responses_call_cut_off_before_its_item_is_done_is_incomplete():
    item = {"type": "function_call", "call_id": "c", "name": "f", "arguments": ""}
    rec = openai_responses_events_to_recording(
        _events(
            [
                _CREATED,
                _added(0, item),
                {"type": "response.function_call_arguments.delta", "output_index": 0, "delta": "{"},
            ],
            named=True,
        ),
        _header(),
    )
    assert _calls(rec) == [("f", None, False)]


# --- Bedrock ----------------------------------------------------------------------------


@pytest.mark.parametrize("metadata_first", [True, False])
def test_bedrock_stream_end_in_either_order(metadata_first):
    tool = {"toolUse": {"toolUseId": "t1", "name": "f"}}
    head = [
        ("contentBlockStart", {"contentBlockIndex": 0, "start": tool}),
        ("contentBlockDelta", {"contentBlockIndex": 0, "delta": {"toolUse": {"input": '{"a":1}'}}}),
        ("contentBlockStop", {"contentBlockIndex": 0}),
    ]
    ends = [
        ("metadata", {"usage": {"outputTokens": 5}, "metrics": {"latencyMs": 9}}),
        ("messageStop", {"stopReason": "tool_use"}),
    ]
    pairs = head + (ends if metadata_first else ends[::-1])
    events = [SseEvent(name, json.dumps(obj), 10.0 * i) for i, (name, obj) in enumerate(pairs)]
    rec = bedrock_events_to_recording(events, _header())
    assert rec.end.finish_reason == "tool_use" and rec.end.usage == {"outputTokens": 5}
    assert rec.end.t_ms == 40.0  # at the second of the two
    assert _calls(rec) == [("f", {"a": 1}, True)]


def test_a_call_named_again_by_each_delta_keeps_its_id_name_and_start():
    """A live stream's every tool-call delta names its index again (id and name only on the
    first): the call keeps what the first said, and its pieces stay one call."""
    from uxlab.live.wire_formats import tool_calls as served_tool_calls
    from uxlab.streams.recording import Chunk, End, Meta, Recording

    start = {"kind": "tool_call", "index": 0, "incomplete": True}
    rec = Recording(
        header=_header(),
        events=[
            Meta(39.9, {**start, "id": "call_c0a5", "name": "get_weather"}),
            Meta(40.8, {**start, "id": None, "name": None}),
            Chunk(300.0, "{", "tool", extra={"tool_index": 0}),
            Meta(300.0, {**start, "id": None, "name": None}),
            Chunk(350.0, "}", "tool", extra={"tool_index": 0}),
        ],
        end=End(400.0, "tool_calls"),
    )
    (call,) = tool_calls(rec)
    assert (call.id, call.name, call.arguments, call.n_pieces) == (
        "call_c0a5",
        "get_weather",
        "{}",
        2,
    )
    assert call.t_start_ms == 39.9 and call.t_last_ms == 350.0
    assert served_tool_calls(rec) == [
        {"index": 0, "id": "call_c0a5", "name": "get_weather", "args": "{}"}
    ]
