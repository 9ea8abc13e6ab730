"""Vendor wire vocabulary shared by the SSE sink and the non-streaming answers.

Maps a recording's finish reason and usage (whatever API it was recorded from) to the
OpenAI Chat or Anthropic Messages names, and finds each tool call's id and name.
"""

from __future__ import annotations

from typing import Any

from uxlab.streams.recording import End, Recording
from uxlab.streams.tool_calls import tool_calls as recording_tool_calls

_TO_OPENAI = {
    "end_turn": "stop",
    "stop_sequence": "stop",
    "max_tokens": "length",
    "tool_use": "tool_calls",
    "STOP": "stop",
    "MAX_TOKENS": "length",
    "completed": "stop",
    "max_output_tokens": "length",
}
_TO_ANTHROPIC = {
    "stop": "end_turn",
    "length": "max_tokens",
    "tool_calls": "tool_use",
    "function_call": "tool_use",
    "STOP": "end_turn",
    "MAX_TOKENS": "max_tokens",
    "completed": "end_turn",
    "max_output_tokens": "max_tokens",
}
_OPENAI_REASONS = ("stop", "length", "tool_calls", "content_filter", "function_call")
_ANTHROPIC_REASONS = (
    "end_turn",
    "max_tokens",
    "stop_sequence",
    "tool_use",
    "pause_turn",
    "refusal",
)


def openai_finish_reason(end: End | None, has_tools: bool) -> str:
    reason = end.finish_reason if end is not None else None
    if reason in _OPENAI_REASONS:
        return reason
    if reason in _TO_OPENAI:
        return _TO_OPENAI[reason]
    return "tool_calls" if has_tools else "stop"


def anthropic_stop_reason(end: End | None, has_tools: bool) -> str:
    reason = end.finish_reason if end is not None else None
    if reason in _ANTHROPIC_REASONS:
        return reason
    if reason in _TO_ANTHROPIC:
        return _TO_ANTHROPIC[reason]
    return "tool_use" if has_tools else "end_turn"


def token_counts(schedule: Recording, prompt_tokens_guess: int) -> tuple[int, int]:
    """(input, output) tokens: from the recording's usage when known, else counted."""
    usage: dict[str, Any] = (schedule.end.usage if schedule.end is not None else None) or {}
    inp = usage.get("prompt_tokens") or usage.get("input_tokens") or usage.get("promptTokenCount")
    out = (
        usage.get("completion_tokens")
        or usage.get("output_tokens")
        or usage.get("candidatesTokenCount")
    )
    if out is None:
        out = sum(c.n_tokens if c.n_tokens is not None else 1 for c in schedule.chunks)
    return int(inp if inp is not None else prompt_tokens_guess), int(out)


def wire_tool(index: int, call_id: str | None, name: str | None) -> dict[str, Any]:
    """A tool call as the wire names it: {"index", "id", "name"}, the id and name made up
    where the recording has none (`call_<index>`, `tool`)."""
    return {"index": index, "id": call_id or f"call_{index}", "name": name or "tool"}


def tool_calls(schedule: Recording) -> list[dict[str, Any]]:
    """Every tool call of a schedule in order of appearance: {"index", "id", "name", "args"}
    (`streams.tool_calls`, named as `wire_tool` names them).

    A call announced by a `tool_call` meta event counts even without argument chunks (a
    tool that takes no input); `args` is its input ("" when none; arguments streamed by
    JSON path are put together as JSON).
    """
    return [
        {**wire_tool(call.index, call.id, call.name), "args": call.arguments}
        for call in recording_tool_calls(schedule)
    ]
