"""Request parameters `uxlab serve` honours or refuses: `max_tokens` and `n`.

`request_limits(body, wire)` reads them from a request body (OpenAI Chat: `max_tokens` or
`max_completion_tokens`, the smaller when both are given; Anthropic: `max_tokens`) and
raises `RequestParamError` naming the parameter when a value is malformed, or when `n`
asks for more than one choice (the server plays one recording per request).

`cut_at_tokens(schedule, max_tokens)` ends a schedule after that many output tokens, as a
model that hits its limit does: tokens are counted over every channel (content, reasoning,
tool arguments) as each chunk's `n_tokens` where known, else one per chunk; a chunk that
crosses the limit is cut into token-like pieces (`uxlab.shaping.tokens.split_pieces`) and
only the allowed ones are kept. The end follows the last kept token at once with
`finish_reason: "length"` (Anthropic `stop_reason: "max_tokens"`); events after the cut
(including a later injected error) are dropped. A schedule within the limit is unchanged.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from uxlab.errors import UxlabError
from uxlab.shaping.tokens import split_pieces
from uxlab.streams.recording import Chunk, End, Event, Recording

_INPUT_USAGE_KEYS = ("prompt_tokens", "input_tokens", "promptTokenCount")


class RequestParamError(UxlabError):
    """A request parameter the server cannot honour; `param` names it."""

    def __init__(self, param: str, message: str):
        super().__init__(f"{param}: {message}")
        self.param = param


@dataclass(frozen=True)
class Limits:
    """What a request asks of the answer's length."""

    max_tokens: int | None = None
    """Output tokens after which the stream ends with finish reason `length` (None: no cap)."""


def _positive_int(body: dict[str, Any], key: str) -> int | None:
    value = body.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise RequestParamError(key, f"expected a whole number >= 1, got {value!r:.40}")
    return value


def request_limits(body: dict[str, Any], wire: str) -> Limits:
    """The token cap a request body asks for; refuses `n` other than 1."""
    n = body.get("n")
    if n is not None:
        if isinstance(n, bool) or not isinstance(n, int) or n < 1:
            raise RequestParamError("n", f"expected a whole number >= 1, got {n!r:.40}")
        if n > 1:
            raise RequestParamError(
                "n",
                f"uxlab serve plays one recording per request, so it answers one choice; "
                f"got n = {n} (send n = 1 or leave it out, and make {n} requests instead)",
            )
    keys = ("max_tokens", "max_completion_tokens") if wire == "openai" else ("max_tokens",)
    caps = [cap for cap in (_positive_int(body, k) for k in keys) if cap is not None]
    return Limits(max_tokens=min(caps) if caps else None)


def chunk_tokens(chunk: Chunk) -> int:
    """A chunk's output tokens: `n_tokens` where known, else 1."""
    return chunk.n_tokens if chunk.n_tokens is not None else 1


def cut_at_tokens(schedule: Recording, max_tokens: int) -> Recording:
    """The schedule ended after `max_tokens` output tokens (see the module docstring)."""
    if sum(chunk_tokens(c) for c in schedule.chunks) <= max_tokens:
        return schedule
    kept: list[Event] = []
    count = 0
    last_t_ms: float | None = None
    for event in schedule.events:
        if not isinstance(event, Chunk):
            kept.append(event)
            continue
        tokens = chunk_tokens(event)
        if count + tokens > max_tokens:  # only with known n_tokens > 1: keep part of it
            room = max_tokens - count
            pieces = split_pieces(event.text, tokens)
            event = dataclasses.replace(event, text="".join(pieces[:room]), n_tokens=room)
            tokens = room
        kept.append(event)
        count += tokens
        last_t_ms = event.t_ms
        if count >= max_tokens:
            break
    usage = schedule.end.usage if schedule.end is not None else None
    input_usage = {k: v for k, v in (usage or {}).items() if k in _INPUT_USAGE_KEYS}
    end = End(t_ms=last_t_ms, finish_reason="length", usage=input_usage or None)
    header = dataclasses.replace(
        schedule.header, extra={**schedule.header.extra, "served_max_tokens": max_tokens}
    )
    return Recording(header, kept, end)
