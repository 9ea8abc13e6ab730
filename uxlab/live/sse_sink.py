"""A player sink that writes a schedule as vendor SSE: OpenAI Chat chunks or Anthropic events.

The player calls `apply` at each chunk's deadline and `apply_meta` at each meta event's;
the sink formats the event at once and puts the bytes on a queue that the HTTP response
drains, so every event leaves as its own HTTP chunk the moment it is due.

The prelude (OpenAI: the role-only chunk; Anthropic: `message_start`, then a `ping` unless
the schedule has its own) goes out at the schedule's `role` meta event, i.e. at its
recorded or shaped offset (`ttft_first_event_ms`), not with the response headers; a
schedule without a role event sends it just before its first chunk. A `ping` meta event
is an Anthropic `ping` (OpenAI has none). A `tool_call` meta event starts the tool call at
its own time (OpenAI: a `tool_calls` delta with id, name and empty arguments; Anthropic:
`content_block_start` of the `tool_use` block); other meta kinds send nothing.

OpenAI: content deltas (a chunk recorded as a refusal, `refusal: true`, as a `refusal`
delta), reasoning as `reasoning_content` and `reasoning` (the same text under both names),
tool calls as `tool_calls` deltas
(id, type and name on the first fragment), a finish chunk, the `include_usage` chunk when
asked, then `data: [DONE]`; an error event becomes `data: {"error": {...}}` and the stream
stops. Anthropic: `content_block_start/delta/stop` for text, thinking and tool_use
(`input_json_delta`), `message_delta` with usage, `message_stop`; an error event becomes
`event: error` (e.g. `overloaded_error`).
"""

from __future__ import annotations

import asyncio
import json
from typing import Any

import orjson

from uxlab.live.wire_formats import (
    anthropic_stop_reason,
    openai_finish_reason,
    token_counts,
    tool_calls,
    wire_tool,
)
from uxlab.streams.recording import Chunk, End, ErrorEvent, Meta, Recording

WIRES = ("openai", "anthropic")


def json_bytes(data: Any) -> bytes:
    """Compact UTF-8 JSON: orjson (several times faster on the serving hot path), or the
    stdlib with the same separators for what orjson refuses (an integer beyond 64 bits)."""
    try:
        return orjson.dumps(data)
    except TypeError:
        pass
    return json.dumps(data, ensure_ascii=False, separators=(",", ":")).encode()


def sse_bytes(data: Any, event: str | None = None) -> bytes:
    """One SSE event (`event:` line when named, one `data:` line, blank line)."""
    body = data.encode() if isinstance(data, str) else json_bytes(data)
    head = b"event: " + event.encode() + b"\n" if event else b""
    return head + b"data: " + body + b"\n\n"


class SSESink:
    """Formats what the player hands over and queues it for the HTTP response.

    `queue` yields bytes, then None when the stream is over (finished, failed or cancelled).
    """

    def __init__(
        self,
        wire: str,
        schedule: Recording,
        model: str,
        response_id: str,
        created_s: int,
        include_usage: bool = False,
        prompt_tokens: int = 0,
    ):
        if wire not in WIRES:
            raise ValueError(f"wire must be one of {WIRES}, got {wire!r}")
        self.wire = wire
        self.model = model
        self.response_id = response_id
        self.created_s = created_s
        self.include_usage = include_usage
        self.schedule = schedule
        self.has_tools = bool(tool_calls(schedule))
        self.input_tokens, self.output_tokens = token_counts(schedule, prompt_tokens)
        self.queue: asyncio.Queue[bytes | None] = asyncio.Queue()
        self.closed = False
        self._block: tuple[str, int] | None = None  # Anthropic: (kind, tool index) now open
        self._block_index = -1
        self._prelude_sent = False
        self._has_ping = any(
            isinstance(e, Meta) and e.data.get("kind") == "ping" for e in schedule.events
        )
        self._tool_metas = 0  # tool_call meta events seen (a meta's index when it has none)
        self._tool_names: dict[int, dict[str, Any]] = {}  # tool index -> id and name its metas gave
        self._last_tool = 0  # the tool a piece without `tool_index` belongs to: the last started
        self._tools_started: set[int] = set()  # tool indices whose id and name went out
        self._openai_tool_index: dict[int, int] = {}  # recorded tool index -> 0, 1, ...

    # -- Sink protocol -------------------------------------------------------------------
    def apply(self, index: int, chunk: Chunk) -> None:
        if self.closed:
            return
        format_chunk = self._openai_chunk if self.wire == "openai" else self._anthropic_chunk
        out = self._take_prelude() + format_chunk(index, chunk)
        if out:
            self.queue.put_nowait(out)

    def apply_meta(self, meta: Meta) -> None:
        """A meta event is due: the prelude (role), a ping or a tool call's start."""
        if self.closed:
            return
        kind = meta.data.get("kind")
        out = b""
        if kind == "role":
            out = self._take_prelude()
        elif kind == "ping" and self.wire == "anthropic":
            out = self._take_prelude() + sse_bytes({"type": "ping"}, "ping")
        elif kind in ("tool_call", "tool_use"):
            tool_index = meta.data.get("index", self._tool_metas)
            self._tool_metas += 1
            self._last_tool = tool_index
            known = self._tool_names.setdefault(tool_index, {})
            for key in ("id", "name"):  # a live stream names the call again with each delta,
                known[key] = known.get(key) or meta.data.get(key)  # its id on the first only
            start = self._openai_tool_start if self.wire == "openai" else self._anthropic_tool_start
            out = self._take_prelude() + start(self._tool(tool_index))
        if out:
            self.queue.put_nowait(out)

    def finish(self, end: End | None, error: ErrorEvent | None) -> None:
        if self.closed:
            return
        if error is not None:  # an error may be the first thing a stream sends
            self.queue.put_nowait(self._error(error))
        elif self.wire == "openai":
            self.queue.put_nowait(self._take_prelude() + self._openai_finish(end))
        else:
            self.queue.put_nowait(self._take_prelude() + self._anthropic_finish(end))
        self._close()

    def cancel(self) -> None:
        self._close()

    def _close(self) -> None:
        if not self.closed:
            self.closed = True
            self.queue.put_nowait(None)

    # -- OpenAI Chat Completions ---------------------------------------------------------
    def _openai(
        self,
        delta: dict[str, Any] | None,
        finish: str | None = None,
        usage: dict[str, Any] | None = None,
    ) -> bytes:
        obj: dict[str, Any] = {
            "id": self.response_id,
            "object": "chat.completion.chunk",
            "created": self.created_s,
            "model": self.model,
            "system_fingerprint": "uxlab",
            "choices": []
            if delta is None
            else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
        }
        if self.include_usage:
            obj["usage"] = usage
        return sse_bytes(obj)

    def _take_prelude(self) -> bytes:
        """The prelude the first time it is asked for, then nothing."""
        if self._prelude_sent:
            return b""
        self._prelude_sent = True
        return self.prelude()

    def prelude(self) -> bytes:
        """The bytes that open the stream (role chunk, or `message_start` and `ping`)."""
        if self.wire == "openai":
            return self._openai({"role": "assistant", "content": ""})
        message: dict[str, Any] = {
            "id": self.response_id,
            "type": "message",
            "role": "assistant",
            "content": [],
            "model": self.model,
            "stop_reason": None,
            "stop_sequence": None,
            "usage": {"input_tokens": self.input_tokens, "output_tokens": 1},
        }
        start = sse_bytes({"type": "message_start", "message": message}, "message_start")
        return start if self._has_ping else start + sse_bytes({"type": "ping"}, "ping")

    def _openai_call(self, tool: dict[str, Any], arguments: str) -> bytes:
        """A `tool_calls` delta; id, type and name on the call's first fragment only.

        Calls are numbered 0, 1, ... in order of appearance (a recording from another API
        may number them by content block).
        """
        number = self._openai_tool_index.setdefault(tool["index"], len(self._openai_tool_index))
        call: dict[str, Any] = {"index": number}
        if tool["index"] not in self._tools_started:
            self._tools_started.add(tool["index"])
            call.update(
                id=tool["id"],
                type="function",
                function={"name": tool["name"], "arguments": arguments},
            )
        else:
            call["function"] = {"arguments": arguments}
        return self._openai({"tool_calls": [call]})

    def _tool(self, tool_index: int) -> dict[str, Any]:
        """A tool call as it goes out, with the id and name its metas gave (`wire_tool`)."""
        known = self._tool_names.get(tool_index, {})
        return wire_tool(tool_index, known.get("id"), known.get("name"))

    def _tool_of(self, chunk: Chunk) -> dict[str, Any]:
        """The tool call a `tool` chunk is a piece of (its `tool_index`, else the last
        started)."""
        return self._tool(chunk.extra.get("tool_index", self._last_tool))

    def _openai_tool_start(self, tool: dict[str, Any]) -> bytes:
        if tool["index"] in self._tools_started:
            return b""
        return self._openai_call(tool, "")

    def _openai_chunk(self, index: int, chunk: Chunk) -> bytes:
        if chunk.channel == "reasoning":
            # Both names: DeepSeek and older vLLM read `reasoning_content`, current vLLM and
            # OpenRouter `reasoning`; clients read one of them (the first they know).
            return self._openai({"reasoning_content": chunk.text, "reasoning": chunk.text})
        if chunk.channel == "tool":
            return self._openai_call(self._tool_of(chunk), chunk.text)
        if chunk.extra.get("refusal"):  # a recorded refusal goes out as the API sends it
            return self._openai({"refusal": chunk.text})
        return self._openai({"content": chunk.text})

    def _openai_finish(self, end: End | None) -> bytes:
        out = self._openai({}, openai_finish_reason(end, self.has_tools))
        if self.include_usage:
            out += self._openai(
                None,
                usage={
                    "prompt_tokens": self.input_tokens,
                    "completion_tokens": self.output_tokens,
                    "total_tokens": self.input_tokens + self.output_tokens,
                },
            )
        return out + b"data: [DONE]\n\n"

    # -- Anthropic Messages --------------------------------------------------------------
    def _start_block(self, kind: str, tool: dict[str, Any] | None) -> bytes:
        """Close the open block (if any) and open a `kind` block; b"" when it is open."""
        key = (kind, tool["index"] if tool else 0)
        if self._block == key:
            return b""
        out = self._stop_block()
        self._block_index += 1
        self._block = key
        block: dict[str, Any] = {"type": kind}
        if kind == "text":
            block["text"] = ""
        elif kind == "thinking":
            block.update(thinking="", signature="")
        else:
            assert tool is not None
            block.update(id=tool["id"], name=tool["name"], input={})
        return out + sse_bytes(
            {"type": "content_block_start", "index": self._block_index, "content_block": block},
            "content_block_start",
        )

    def _anthropic_tool_start(self, tool: dict[str, Any]) -> bytes:
        return self._start_block("tool_use", tool)

    def _anthropic_chunk(self, index: int, chunk: Chunk) -> bytes:
        kind = {"content": "text", "reasoning": "thinking", "tool": "tool_use"}[chunk.channel]
        out = self._start_block(kind, self._tool_of(chunk) if kind == "tool_use" else None)
        delta = {
            "text": {"type": "text_delta", "text": chunk.text},
            "thinking": {"type": "thinking_delta", "thinking": chunk.text},
            "tool_use": {"type": "input_json_delta", "partial_json": chunk.text},
        }[kind]
        return out + sse_bytes(
            {"type": "content_block_delta", "index": self._block_index, "delta": delta},
            "content_block_delta",
        )

    def _stop_block(self) -> bytes:
        if self._block is None:
            return b""
        self._block = None
        return sse_bytes(
            {"type": "content_block_stop", "index": self._block_index}, "content_block_stop"
        )

    def _anthropic_finish(self, end: End | None) -> bytes:
        delta = {
            "type": "message_delta",
            "delta": {
                "stop_reason": anthropic_stop_reason(end, self.has_tools),
                "stop_sequence": None,
            },
            "usage": {"output_tokens": self.output_tokens},
        }
        return (
            self._stop_block()
            + sse_bytes(delta, "message_delta")
            + sse_bytes({"type": "message_stop"}, "message_stop")
        )

    # -- errors --------------------------------------------------------------------------
    def _error(self, error: ErrorEvent) -> bytes:
        err = {
            "type": str(error.error.get("type") or "api_error"),
            "message": str(error.error.get("message") or "injected error"),
        }
        if self.wire == "openai":
            return sse_bytes({"error": {**err, "code": None, "param": None}})
        return self._stop_block() + sse_bytes({"type": "error", "error": err}, "error")
