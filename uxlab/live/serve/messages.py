"""The JSON bodies `uxlab serve` answers with: a whole message (non-streaming) or an error,
each in the wire's format (OpenAI Chat Completions or Anthropic Messages)."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from starlette.responses import JSONResponse

from uxlab.live.wire_formats import (
    anthropic_stop_reason,
    openai_finish_reason,
    token_counts,
    tool_calls,
)
from uxlab.streams.recording import Recording


def error_response(
    wire: str,
    status: int,
    kind: str,
    message: str,
    headers: dict[str, str] | None = None,
    param: str | None = None,
) -> JSONResponse:
    """An error in the wire's own format (Anthropic's or OpenAI's)."""
    if wire == "anthropic":
        body = {"type": "error", "error": {"type": kind, "message": message}}
    else:
        body = {"error": {"message": message, "type": kind, "param": param, "code": None}}
    return JSONResponse(body, status_code=status, headers=headers)


def _text(schedule: Recording, channel: str) -> str:
    return "".join(c.text for c in schedule.chunks if c.channel == channel)


def openai_message(schedule: Recording, model: str, prompt_tokens: int) -> dict[str, Any]:
    """The whole schedule as one OpenAI chat completion (a non-streaming answer)."""
    inp, out = token_counts(schedule, prompt_tokens)
    calls = tool_calls(schedule)
    content = "".join(
        c.text for c in schedule.chunks if c.channel == "content" and not c.extra.get("refusal")
    )
    refusal = "".join(c.text for c in schedule.chunks if c.extra.get("refusal"))
    # As the API does: content is null when the answer is only tool calls (or a refusal).
    message: dict[str, Any] = {
        "role": "assistant",
        "content": content or (None if calls or refusal else ""),
    }
    if refusal:
        message["refusal"] = refusal
    reasoning = _text(schedule, "reasoning")
    if reasoning:
        message["reasoning_content"] = reasoning
        message["reasoning"] = reasoning  # current vLLM's and OpenRouter's name for it
    if calls:
        message["tool_calls"] = [
            {
                "id": c["id"],
                "type": "function",
                "function": {"name": c["name"], "arguments": c["args"]},
            }
            for c in calls
        ]
    return {
        "id": "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "system_fingerprint": "uxlab",
        "choices": [
            {
                "index": 0,
                "message": message,
                "logprobs": None,
                "finish_reason": openai_finish_reason(schedule.end, bool(calls)),
            }
        ],
        "usage": {"prompt_tokens": inp, "completion_tokens": out, "total_tokens": inp + out},
    }


def anthropic_message(schedule: Recording, model: str, prompt_tokens: int) -> dict[str, Any]:
    """The whole schedule as one Anthropic message (a non-streaming answer)."""
    inp, out = token_counts(schedule, prompt_tokens)
    blocks: list[dict[str, Any]] = []
    reasoning = _text(schedule, "reasoning")
    if reasoning:
        blocks.append({"type": "thinking", "thinking": reasoning, "signature": ""})
    text = _text(schedule, "content")
    calls = tool_calls(schedule)
    if text or not (blocks or calls):  # an empty answer is one empty text block
        blocks.append({"type": "text", "text": text})
    for c in calls:
        try:
            args = json.loads(c["args"]) if c["args"] else {}
        except json.JSONDecodeError:
            args = {"_raw": c["args"]}
        blocks.append({"type": "tool_use", "id": c["id"], "name": c["name"], "input": args})
    return {
        "id": "msg_" + uuid.uuid4().hex[:24],
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": blocks,
        "stop_reason": anthropic_stop_reason(schedule.end, bool(calls)),
        "stop_sequence": None,
        "usage": {"input_tokens": inp, "output_tokens": out},
    }
