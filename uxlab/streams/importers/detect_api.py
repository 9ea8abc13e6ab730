"""Which API a stream of events speaks, from the shape of its first JSON event or its URL.

Used where a file does not say (a HAR entry, a DevTools log, a JSON log of events), and to
refuse an SSE capture given to another API's importer (`sse_capture.check_api`). The
names are those of `STREAM_MAPPINGS`: `openai`, `openai-responses`, `anthropic`, `gemini`,
`cohere`, `gemini-interactions`, `bedrock`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from uxlab.streams.sse import SseEvent

COHERE_EVENTS = frozenset(
    {
        "message-start",
        "content-start",
        "content-delta",
        "content-end",
        "tool-plan-delta",
        "tool-call-start",
        "tool-call-delta",
        "tool-call-end",
        "citation-start",
        "citation-end",
        "message-end",
        "debug",
    }
)
"""The event types of a Cohere v2 chat stream."""

INTERACTIONS_STARTS = ("step.start", "content.start")
INTERACTIONS_DELTAS = ("step.delta", "content.delta")
INTERACTIONS_STOPS = ("step.stop", "content.stop")
INTERACTIONS_COMPLETED = ("interaction.completed", "interaction.complete")
INTERACTIONS_CREATED = ("interaction.created", "interaction.start")
INTERACTIONS_EVENTS = frozenset(
    {
        *INTERACTIONS_STARTS,
        *INTERACTIONS_DELTAS,
        *INTERACTIONS_STOPS,
        *INTERACTIONS_COMPLETED,
        *INTERACTIONS_CREATED,
        "interaction.status_update",
    }
)
"""Event types only a Gemini Interactions stream has (its mapping reads them from here)."""

ANTHROPIC_EVENTS = frozenset(
    {"message_start", "content_block_start", "content_block_delta", "ping", "message_delta"}
)
BEDROCK_EVENTS = frozenset(
    {
        "messageStart",
        "contentBlockStart",
        "contentBlockDelta",
        "contentBlockStop",
        "messageStop",
        "metadata",
    }
)
"""ConverseStream event types: a JSON log has one of them as each object's only key."""

_URL_MARKERS = (
    ("/chat/completions", "openai"),
    ("/completions", "openai"),
    ("/messages", "anthropic"),
    ("/responses", "openai-responses"),
    (":streamGenerateContent", "gemini"),
    ("/interactions", "gemini-interactions"),
    ("/v2/chat", "cohere"),
    ("/converse-stream", "bedrock"),
)


def looks_like_ollama(text: str) -> bool:
    """Whether a JSON line is one of Ollama's NDJSON stream objects (`created_at`, `done`):
    Ollama has its own importer, `--from ollama`."""
    return '"created_at"' in text and '"done"' in text


def api_of_object(name: str | None, obj: dict[str, Any]) -> str | None:
    """The API of one event (its SSE name, if any, and its JSON object), or None."""
    kind = name or obj.get("type") or obj.get("event_type")
    if isinstance(kind, str):
        if kind.startswith("response."):
            return "openai-responses"
        if kind in ANTHROPIC_EVENTS:
            return "anthropic"
        if kind in COHERE_EVENTS:
            return "cohere"
        if kind in INTERACTIONS_EVENTS:
            return "gemini-interactions"
    if "choices" in obj:
        return "openai"
    if "candidates" in obj:
        return "gemini"
    if len(obj) == 1 and next(iter(obj)) in BEDROCK_EVENTS:
        return "bedrock"
    return None


def api_of(url: str, events: Sequence[SseEvent]) -> str | None:
    """The API of an event stream: from the shape of its first JSON event, else from the URL
    (a chat app's own path may say nothing or mislead)."""
    for ev in events:
        try:
            obj = json.loads(ev.data)
        except (ValueError, RecursionError):  # not JSON, a 5,000-digit number, too deep:
            continue  # the mapping's reader names what is wrong, if the stream is imported
        if not isinstance(obj, dict):
            break
        found = api_of_object(ev.event, obj)
        if found is not None:
            return found
        break
    path = url.split("?", 1)[0]
    return next((api for marker, api in _URL_MARKERS if marker in path), None)
