"""Which recording answers a request: the default picker (prompt match, else cycling)."""

from __future__ import annotations

from typing import Any

from uxlab.live.request_limits import cut_at_tokens
from uxlab.live.serve.config import Pick, Picker, ServeConfig
from uxlab.streams.recording import Recording


def corpus_picker(config: ServeConfig) -> Picker:
    """The default choice: prompt match, else recording `i mod n`; seed `seed + i`."""
    by_prompt: dict[str, Recording] = {}
    for rec in config.recordings:
        prompt = recorded_prompt(rec)
        if prompt is not None:
            by_prompt.setdefault(prompt, rec)

    def pick(request_index: int, prompt: str | None) -> Pick:
        source = by_prompt.get(prompt) if prompt is not None else None
        if source is None:
            source = config.recordings[request_index % len(config.recordings)]
        seed = config.seed + request_index
        return Pick(config.shape(source, seed), seed, source.id)

    return pick


def choose(
    pick: Picker, request_index: int, prompt: str | None, max_tokens: int | None
) -> tuple[Pick, Recording]:
    """The pick for a request and its schedule, cut at `max_tokens` (no event loop needed:
    run in a worker thread, shaping a long recording holds no other stream up)."""
    chosen = pick(request_index, prompt)
    schedule = chosen.schedule
    if max_tokens is not None:
        schedule = cut_at_tokens(schedule, max_tokens)
    return chosen, schedule


def recorded_prompt(rec: Recording) -> str | None:
    """The last user message a recording was made with (None when unknown)."""
    req = rec.header.request or {}
    prompt = req.get("prompt")
    if isinstance(prompt, str):
        return prompt
    return last_user_text(req.get("messages") or [])


def last_user_text(messages: list[Any]) -> str | None:
    """The text of the last user message (string content or text parts joined)."""
    for m in reversed(messages):
        if not isinstance(m, dict) or m.get("role") != "user":
            continue
        content = m.get("content")
        if isinstance(content, str):
            return content
        if isinstance(content, list):
            return "".join(
                p.get("text", "")
                for p in content
                if isinstance(p, dict) and p.get("type") in ("text", None)
            )
    return None
