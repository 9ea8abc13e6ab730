"""An independent minimal reader of vendor streams, for checking uxlab's importers.

It shares no code with `uxlab`: its own SSE splitter, its own AWS event-stream decoder, its
own reading of each API, written from the vendors' documentation. Per stream it gives what
a reader of the stream would call its content: the text, the reasoning, the tool calls
(name and arguments, each once), the finish reason and the usage. For the Responses API it
takes each call from the item the vendor sends when the call is done (uxlab assembles it
from the pieces before), so the two readings come from different events.
"""

from __future__ import annotations

import itertools
import json
import re
import struct
from pathlib import Path
from typing import Any


def sse_events(text: str) -> list[tuple[str | None, str]]:
    """`(event name, data)` of each SSE event (comments and blank events skipped)."""
    out = []
    for block in text.replace("\r\n", "\n").split("\n\n"):
        name, data = None, []
        for line in block.split("\n"):
            if line.startswith(":") or not line:
                continue
            field, _, value = line.partition(":")
            value = value[1:] if value.startswith(" ") else value
            if field == "event":
                name = value
            elif field == "data":
                data.append(value)
        if data or name:
            out.append((name, "\n".join(data)))
    return out


def aws_events(body: bytes) -> list[tuple[str, dict[str, Any]]]:
    """`(event type, payload)` of an AWS binary event stream (checksums not checked)."""
    out, pos = [], 0
    while pos + 12 <= len(body):
        total, headers_len = struct.unpack_from(">II", body, pos)
        headers, h = {}, pos + 12
        while h < pos + 12 + headers_len:
            n = body[h]
            name = body[h + 1 : h + 1 + n].decode()
            kind = body[h + 1 + n]
            h += 2 + n
            if kind == 7:
                (size,) = struct.unpack_from(">H", body, h)
                headers[name] = body[h + 2 : h + 2 + size].decode()
                h += 2 + size
            else:
                raise ValueError(f"header type {kind}")
        payload = body[pos + 12 + headers_len : pos + total - 4]
        kind = headers.get(":event-type") or headers.get(":exception-type") or ""
        out.append((kind, json.loads(payload)))
        pos += total
    return out


def _stream() -> dict[str, Any]:
    return {"content": "", "reasoning": "", "calls": [], "finish": None, "usage": None}


def _args(value: Any) -> Any:
    """Arguments compared as JSON when they are JSON text, else as text."""
    if isinstance(value, str):
        try:
            return json.loads(value) if value.strip() else None
        except ValueError:
            return value
    return value if value != {} else None


# --- the APIs -------------------------------------------------------------------------------


def openai_chat(objs: list[Any]) -> list[dict[str, Any]]:
    s = _stream()
    calls: dict[Any, dict[str, Any]] = {}
    for obj in objs:
        if obj == "[DONE]":
            break
        if "error" in obj:
            s["finish"] = "error"
            break
        s["usage"] = obj.get("usage") or s["usage"]
        for choice in obj.get("choices") or []:
            if choice.get("index", 0) != 0:
                continue
            delta = choice.get("delta")
            if delta is None:
                s["content"] += choice.get("text") or ""
            else:
                for key in ("reasoning_content", "reasoning"):
                    if isinstance(delta.get(key), str) and delta[key]:
                        s["reasoning"] += delta[key]
                        break
                if isinstance(delta.get("content"), str):
                    s["content"] += delta["content"]
                if isinstance(delta.get("refusal"), str):
                    s["content"] += delta["refusal"]
                for tc in delta.get("tool_calls") or []:
                    key = tc.get("index", 0)
                    known = calls.get(key)
                    if known and tc.get("id") and known["id"] and tc["id"] != known["id"]:
                        calls[(key, tc["id"])] = calls.pop(key)  # a new call at a used index
                        known = None
                    if known is None:
                        known = calls[key] = {"id": tc.get("id"), "name": None, "args": ""}
                        s["calls"].append(known)
                    fn = tc.get("function") or {}
                    known["name"] = known["name"] or fn.get("name")
                    known["args"] += fn.get("arguments") or ""
            if choice.get("finish_reason"):
                s["finish"] = choice["finish_reason"]
    s["calls"] = [(c["name"], _args(c["args"])) for c in s["calls"]]
    return [s]


def anthropic(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    streams: list[dict[str, Any]] = []
    for obj in objs:
        kind = obj.get("type")
        if kind == "message_start":
            s = _stream()
            s["blocks"] = {}
            streams.append(s)
            msg = obj["message"]
            s["usage"] = dict(msg.get("usage") or {}) or None
            for block in msg.get("content") or []:
                if str(block.get("type")).endswith("tool_use"):
                    s["calls"].append([block.get("name"), block.get("input"), ""])
            continue
        s = streams[-1]
        if kind == "content_block_start":
            block = obj["content_block"]
            if str(block.get("type")).endswith("tool_use"):
                call = [block.get("name"), block.get("input"), ""]
                s["calls"].append(call)
                s["blocks"][obj["index"]] = call
            elif block.get("type") == "thinking":
                s["reasoning"] += block.get("thinking") or ""
            elif block.get("type") == "text":
                s["content"] += block.get("text") or ""
        elif kind == "content_block_delta":
            d = obj["delta"]
            if d["type"] == "text_delta":
                s["content"] += d["text"]
            elif d["type"] == "thinking_delta":
                s["reasoning"] += d["thinking"]
            elif d["type"] == "input_json_delta":
                s["blocks"][obj["index"]][2] += d["partial_json"]
        elif kind == "message_delta":
            s["finish"] = obj.get("delta", {}).get("stop_reason") or s["finish"]
            s["usage"] = {**(s["usage"] or {}), **(obj.get("usage") or {})}
        elif kind == "error":
            s["finish"] = "error"
    for s in streams:
        s["calls"] = [(n, _args(text) if text else _args(start)) for n, start, text in s["calls"]]
        del s["blocks"]
    return streams


_RESPONSES_CALLS = {
    "function_call": (None, "arguments"),
    "custom_tool_call": (None, "input"),
    "mcp_call": (None, "arguments"),
    "mcp_approval_request": (None, "arguments"),
    "apply_patch_call": ("apply_patch", None),
    "shell_call": ("shell", None),
    "local_shell_call": ("local_shell", None),
    "computer_call": ("computer", None),
    "code_interpreter_call": ("code_interpreter", "code"),
    "program": ("program", "code"),
}


def responses(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    streams: list[dict[str, Any]] = []
    for obj in objs:
        kind = obj.get("type")
        if kind == "response.created":
            streams.append(_stream())
            continue
        s = streams[-1]
        if s["finish"] is not None:
            continue
        if kind in ("response.output_text.delta", "response.refusal.delta"):
            s["content"] += obj["delta"]
        elif kind in ("response.reasoning_text.delta", "response.reasoning_summary_text.delta"):
            s["reasoning"] += obj["delta"]
        elif kind == "response.output_item.done" and obj["item"].get("type") in _RESPONSES_CALLS:
            item = obj["item"]
            name, key = _RESPONSES_CALLS[item["type"]]
            if item["type"] == "apply_patch_call":
                value = (item.get("operation") or {}).get("diff") or ""
            elif item["type"] == "shell_call":
                value = "\n".join(item["action"]["commands"])
            elif key is None:
                value = json.dumps(item.get("action"))
            else:
                value = item.get(key) or ""
            s["calls"].append((item.get("name") or name, _args(value)))
        elif kind in ("response.completed", "response.incomplete"):
            resp = obj["response"]
            reason = (resp.get("incomplete_details") or {}).get("reason")
            s["finish"] = reason or resp.get("status") or "completed"
            s["usage"] = resp.get("usage")
        elif kind in ("response.failed", "error"):
            s["finish"] = "error"
    return streams


def gemini(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    streams: list[dict[str, Any]] = []
    rid, current = object(), None
    for obj in objs:
        new_id = obj.get("responseId") and obj.get("responseId") != rid
        if not streams or new_id:
            streams.append(_stream())
            rid = obj.get("responseId")
        s = streams[-1]
        if "error" in obj:
            s["finish"] = "error"
            continue
        s["usage"] = obj.get("usageMetadata") or s["usage"]
        for cand in (obj.get("candidates") or [])[:1]:
            for part in (cand.get("content") or {}).get("parts") or []:
                if "text" in part:
                    s["reasoning" if part.get("thought") else "content"] += part["text"]
                elif "executableCode" in part:
                    s["calls"].append(("code_execution", part["executableCode"].get("code")))
                elif "functionCall" in part:
                    fc = part["functionCall"]
                    if fc.get("partialArgs") or fc.get("willContinue"):
                        if current is None or (fc.get("name") and current["name"]):
                            current = {"name": fc.get("name"), "args": {}}
                            s["calls"].append(current)
                        current["name"] = current["name"] or fc.get("name")
                        for piece in fc.get("partialArgs") or []:
                            _by_path(current["args"], piece)
                        if not fc.get("willContinue"):
                            current = None
                    elif fc.get("name"):
                        s["calls"].append({"name": fc["name"], "args": fc.get("args") or {}})
                    else:
                        current = None  # the end marker of a streamed call
            s["finish"] = cand.get("finishReason") or s["finish"]
    for s in streams:
        s["calls"] = [
            (c["name"], _args(c["args"])) if isinstance(c, dict) else c for c in s["calls"]
        ]
    return streams


def _by_path(args: dict[str, Any], piece: dict[str, Any]) -> None:
    """Set one `partialArgs` piece: a string appends, any other value replaces."""
    keys: list[Any] = [
        int(a) if a else b or c
        for a, b, c in re.findall(r"\[(\d+)\]|\['([^']*)'\]|\.?([^.\[\]]+)", piece["jsonPath"][1:])
    ]
    kinds = [k for k in ("stringValue", "numberValue", "boolValue", "nullValue") if k in piece]
    if not kinds:
        return
    value = None if kinds[0] == "nullValue" else piece[kinds[0]]
    node: Any = args
    for key, nxt in itertools.pairwise(keys):
        if isinstance(node, list):
            while len(node) <= key:
                node.append(None)
            if node[key] is None:
                node[key] = [] if isinstance(nxt, int) else {}
        else:
            node.setdefault(key, [] if isinstance(nxt, int) else {})
        node = node[key]
    last = keys[-1]
    if isinstance(node, list):
        while len(node) <= last:
            node.append(None)
        old = node[last]
    else:
        old = node.get(last)
    if kinds[0] == "stringValue" and isinstance(old, str):
        value = old + value
    node[last] = value


def cohere(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    streams: list[dict[str, Any]] = []
    for obj in objs:
        kind = obj.get("type")
        if kind == "message-start":
            streams.append(_stream() | {"by_index": {}})
            continue
        s = streams[-1]
        message = (obj.get("delta") or {}).get("message") or {}
        if kind in ("content-start", "content-delta"):
            content = message.get("content") or {}
            s["reasoning"] += content.get("thinking") or ""
            s["content"] += content.get("text") or ""
        elif kind == "tool-plan-delta":
            s["reasoning"] += message.get("tool_plan") or ""
        elif kind in ("tool-call-start", "tool-call-delta"):
            tc = message.get("tool_calls") or {}
            fn = tc.get("function") or {}
            if kind == "tool-call-start":
                s["by_index"][obj["index"]] = call = [fn.get("name"), ""]
                s["calls"].append(call)
            s["by_index"][obj["index"]][1] += fn.get("arguments") or ""
        elif kind == "message-end":
            s["finish"] = obj["delta"].get("finish_reason")
            s["usage"] = obj["delta"].get("usage")
    for s in streams:
        s["calls"] = [(n, _args(a)) for n, a in s["calls"]]
        del s["by_index"]
    return streams


def interactions(objs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    streams: list[dict[str, Any]] = []
    for obj in objs:
        kind = obj.get("event_type")
        if kind in ("interaction.created", "interaction.start"):
            streams.append(_stream() | {"steps": {}})
            continue
        s = streams[-1]
        if kind == "step.start":
            step = obj["step"]
            s["steps"][obj["index"]] = step.get("type")
            if str(step.get("type")).endswith("_call"):
                name = (
                    step.get("name")
                    if step["type"] in ("function_call", "mcp_server_tool_call")
                    else None
                )
                call = [name or step["type"].removesuffix("_call"), step.get("arguments"), ""]
                s["calls"].append(call)
                s["steps"][obj["index"]] = call
        elif kind == "step.delta":
            d, step = obj["delta"], s["steps"].get(obj["index"])
            if d.get("type") == "text":
                s["reasoning" if step == "thought" else "content"] += d.get("text") or ""
            elif d.get("type") == "thought_summary":
                s["reasoning"] += (d.get("content") or {}).get("text") or ""
            elif d.get("type") == "arguments_delta":
                step[2] += d.get("arguments") or ""
            elif isinstance(step, list) and isinstance(d.get("arguments"), dict):
                step[1] = d["arguments"]
        elif kind in ("interaction.completed", "interaction.complete"):
            s["finish"] = obj["interaction"].get("status")
            s["usage"] = obj["interaction"].get("usage")
        elif kind == "error":
            s["finish"] = "error"
    for s in streams:
        s["calls"] = [(n, _args(text) if text else _args(start)) for n, start, text in s["calls"]]
        del s["steps"]
    return streams


def bedrock(events: list[tuple[str, dict[str, Any]]]) -> list[dict[str, Any]]:
    s = _stream()
    calls: dict[int, list[Any]] = {}
    for kind, obj in events:
        if kind == "contentBlockStart" and "toolUse" in obj.get("start", {}):
            calls[obj["contentBlockIndex"]] = call = [obj["start"]["toolUse"]["name"], ""]
            s["calls"].append(call)
        elif kind == "contentBlockDelta":
            d = obj["delta"]
            if "text" in d:
                s["content"] += d["text"]
            elif "reasoningContent" in d:
                s["reasoning"] += d["reasoningContent"].get("text") or ""
            elif "toolUse" in d:
                calls[obj["contentBlockIndex"]][1] += d["toolUse"].get("input") or ""
        elif kind == "messageStop":
            s["finish"] = obj.get("stopReason")
        elif kind == "metadata":
            s["usage"] = obj.get("usage")
    s["calls"] = [(n, _args(a)) for n, a in s["calls"]]
    return [s]


# --- files ----------------------------------------------------------------------------------

_BY_SHAPE = (
    ("openai-responses", lambda o: str(o.get("type", "")).startswith("response.")),
    ("anthropic", lambda o: o.get("type") in ("message_start", "content_block_delta", "ping")),
    ("cohere", lambda o: o.get("type") == "message-start"),
    ("interactions", lambda o: "event_type" in o),
    ("openai", lambda o: "choices" in o),
    ("gemini", lambda o: "candidates" in o),
    ("bedrock", lambda o: len(o) == 1),
)
_READERS = {
    "openai": openai_chat,
    "openai-responses": responses,
    "anthropic": anthropic,
    "gemini": gemini,
    "cohere": cohere,
    "interactions": interactions,
}


def read(path: Path, fmt: str) -> list[dict[str, Any]]:
    """The streams of one vendor file, as `fmt` (a `uxlab import --from` name) says it is."""
    if fmt == "bedrock":
        body = path.read_bytes()
        if body.lstrip()[:1] == b"{":
            return bedrock([next(iter(json.loads(x).items())) for x in body.splitlines() if x])
        return bedrock(aws_events(body))
    if fmt == "json-chunks":
        objs = [json.loads(x) for x in path.read_text().splitlines() if x.strip()]
        api = next(name for name, test in _BY_SHAPE if test(objs[0]))
        if api == "bedrock":
            return bedrock([next(iter(o.items())) for o in objs])
        return _READERS[api](objs)
    api = {
        "openai-sse": "openai",
        "openai-responses-sse": "openai-responses",
        "anthropic-sse": "anthropic",
        "gemini-sse": "gemini",
        "cohere-sse": "cohere",
        "gemini-interactions-sse": "interactions",
    }[fmt]
    objs = [d if d.strip() == "[DONE]" else json.loads(d) for _, d in sse_events(path.read_text())]
    return _READERS[api]([o for o in objs if isinstance(o, dict) or api == "openai"])
