"""What every SSE event mapping shares: the Recording builder and strict / tolerant mode.

One mapping per API (`openai_sse`, `anthropic_sse`, `openai_responses_sse`, `gemini_sse`)
serves both the importers and the live recorder, so a live recording and a re-import of
its `.sse` sidecar give the same Recording. Each mapping is a `step(builder, i, t_ms,
name, data)` that maps one event; `map_events` runs it over a stream:

- strict (importers): an event that cannot be mapped raises `StreamEventError` naming the
  event and the field, which the capture importer turns into `file:line: field: problem`;
- tolerant (live recorder, `uxlab import --tolerant`): that event becomes
  `meta {"kind": "malformed_event", "event", "data" (first 500 characters), "problem"}`
  and the rest of the stream is mapped, so nothing that arrived is lost and nothing raises.

Shared conventions: a role prelude is `meta {"kind": "role"}` (never an empty chunk); a
tool call's start is `meta {"kind": "tool_call", "index", "id", "name"}` and its argument
pieces are `tool` chunks with `tool_index` (`uxlab.streams.tool_calls` reads them back, one
call each); a call whose pieces never completed (the API never said it was whole) gets
`"incomplete": true` on its start meta, and a second call is never merged into the first
(it gets its own index); reasoning goes on channel `reasoning`; finish reason and usage go
to `end`. The first terminator or error ends the stream: a mid-stream
error is an `error` event and an `end` at its time with `finish_reason: "error"`; events
after the end are not mapped (counted in `header.extra["import_notes"]`, `[DONE]` aside).
A stream without its terminator has no `end` (a truncated stream). When one stream event
gives several pieces of output (reasoning and text in one delta, a call's name with its
first arguments, a Gemini event with several parts), the second and later say
`same_event: true`.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

from uxlab.reading import Wording, convert
from uxlab.streams.importers.base import StreamEventError, event_json_object
from uxlab.streams.recording import (
    SAME_EVENT,
    Chunk,
    End,
    ErrorEvent,
    Event,
    Header,
    Meta,
    Recording,
)
from uxlab.streams.sse import SseEvent

T = TypeVar("T")

MALFORMED = "malformed_event"
"""The meta kind of an event the tolerant mode kept instead of mapping."""


@dataclass
class StreamBuilder:
    """Collects one stream's events, finish reason and usage; `recording()` makes it."""

    header: Header
    strict: bool = True
    events: list[Event] = field(default_factory=list)
    end: End | None = None
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    last_t_ms: float | None = None
    n_tools: int = 0
    role: str | None = None
    notes: list[str] = field(default_factory=list)
    open_calls: dict[int, Meta] = field(default_factory=dict)
    """Start metas of the tool calls not yet complete, by index."""
    call_indices: set[int] = field(default_factory=set)
    state: dict[str, Any] = field(default_factory=dict)
    """What one API's mapping keeps between events (its own keys)."""

    def chunk(self, t_ms: float | None, text: str, channel: str = "content", **extra: Any) -> None:
        """An output piece; empty text adds nothing."""
        if text:
            self.events.append(Chunk(t_ms=t_ms, text=text, channel=channel, extra=extra))

    def meta(self, t_ms: float | None, **data: Any) -> None:
        self.events.append(Meta(t_ms=t_ms, data=data))

    def role_prelude(self, t_ms: float | None, role: str, **data: Any) -> None:
        """The role prelude, once (servers that repeat the role in every delta add nothing)."""
        if role != self.role:
            self.role = role
            self.meta(t_ms, kind="role", role=role, **data)

    def tool_call(
        self,
        t_ms: float | None,
        index: int,
        call_id: str | None,
        name: str | None,
        *,
        complete: bool = False,
        **info: Any,
    ) -> int:
        """A tool call starts; its argument pieces follow as `tool` chunks (`tool_args`).

        Returns the call's index: `index`, or the next free one when a call with `index`
        started before (two calls are never merged). `info` (None values left out) is
        kept on the start meta; `complete`: the call is whole already (no pieces follow).
        """
        if index in self.call_indices:
            index = max(self.call_indices) + 1
        self.call_indices.add(index)
        self.n_tools += 1
        data = {"kind": "tool_call", "index": index, "id": call_id, "name": name}
        data.update({k: v for k, v in info.items() if v is not None})
        meta = Meta(t_ms=t_ms, data=data)
        self.events.append(meta)
        if not complete:
            self.open_calls[index] = meta
        return index

    def call_meta(self, index: int) -> Meta:
        """The start meta of tool call `index` (a detached one when the tolerant mode
        dropped it), to add what the API says of the call later (a late name)."""
        for event in reversed(self.events):
            if not isinstance(event, Meta) or event.data.get("kind") != "tool_call":
                continue
            if event.data.get("index") == index:
                return event
        return Meta(t_ms=None)

    def tool_args(self, t_ms: float | None, index: int, text: str, **extra: Any) -> None:
        """A piece of tool call `index`'s input (empty text adds nothing)."""
        self.chunk(t_ms, text, "tool", tool_index=index, **extra)

    def tool_done(self, index: int) -> None:
        """The API said tool call `index` is whole."""
        self.open_calls.pop(index, None)

    def finish_tool_calls(self) -> None:
        """Every started call is whole (APIs that end calls with the response only)."""
        self.open_calls.clear()

    def error(self, t_ms: float | None, error: dict[str, Any]) -> None:
        """A mid-stream error: an `error` event, and the stream ends there."""
        self.events.append(ErrorEvent(t_ms=t_ms, error=error))
        self.end = End(t_ms=t_ms, finish_reason="error", usage=self.usage)

    def close(self, t_ms: float | None) -> None:
        """The stream's terminator arrived at `t_ms`."""
        if self.end is None:
            self.end = End(t_ms=t_ms, finish_reason=self.finish_reason, usage=self.usage)

    def fill_model(self, model: Any) -> None:
        """Fill `source.model` from the stream when the header has none."""
        if not self.header.source.get("model") and isinstance(model, str) and model:
            self.header.source["model"] = model

    def recording(self) -> Recording:
        if self.open_calls:
            for meta in self.open_calls.values():
                meta.data["incomplete"] = True
            self.notes.append(
                f"{len(self.open_calls)} tool call(s) never completed: kept with what "
                "arrived, marked incomplete"
            )
            self.open_calls.clear()
        if self.notes:
            self.header.extra.setdefault("import_notes", []).extend(self.notes)
        return Recording(header=self.header, events=self.events, end=self.end)


Step = Callable[[StreamBuilder, int, float | None, str | None, str], None]
"""Maps one event (`builder, index, t_ms, event name, data`) into the builder."""


def map_events(
    events: Sequence[SseEvent],
    header: Header,
    step: Step,
    *,
    strict: bool,
    finish_ends: bool = False,
) -> StreamBuilder:
    """Run `step` over the events until the stream ends; see the module docstring.

    `finish_ends`: a stream that gave a finish reason but no terminator ends at its last
    event (OpenAI Chat without `[DONE]`; Gemini, which has no terminator). Returns the
    builder (`recording()` makes the Recording). Blank events (no name, no data) are skipped.
    """
    b = StreamBuilder(header, strict=strict)
    after_end = 0
    for i, ev in enumerate(events):
        t_ms, name, data = ev.t_ms, ev.event, ev.data
        if b.end is not None:
            if data.strip() not in ("", "[DONE]"):
                after_end += 1
            continue
        if t_ms is not None:
            b.last_t_ms = t_ms
        if name is None and not data.strip():
            continue
        mark = len(b.events)
        try:
            step(b, i, t_ms, name, data)
            mark_same_event(b.events[mark:])
        except StreamEventError as exc:
            if strict:
                raise
            del b.events[mark:]  # none of a malformed event's pieces are kept half-mapped
            problem = f"{exc.field}: {exc.problem}" if exc.field else exc.problem
            b.meta(t_ms, kind=MALFORMED, event=name, data=data[:500], problem=problem)
    if finish_ends and b.end is None and b.finish_reason is not None:
        b.close(b.last_t_ms)
    if after_end:
        b.notes.append(f"{after_end} event(s) after the end of the stream were not mapped")
    return b


def mark_same_event(new: Sequence[Event]) -> None:
    """One stream event gave these events: its second and later pieces of output (a chunk
    with text, a tool call's start) say so (`same_event: true`), so that a peer counting
    *responses* (AIPerf, vLLM) counts the event once."""
    seen = False
    for event in new:
        if isinstance(event, Chunk) and event.text:
            target = event.extra
        elif isinstance(event, Meta) and event.data.get("kind") == "tool_call":
            target = event.data
        else:
            continue
        if seen:
            target[SAME_EVENT] = True
        seen = True


def named_event(index: int, name: str | None, data: str) -> tuple[str, dict[str, Any]]:
    """(kind, object) of a named-event API's event: the `event:` name, else the data's
    `type`; a blank `data:` is `{}`. A StreamEventError when neither names it."""
    obj = event_json_object(index, data) if data.strip() else {}
    kind = name or obj.get("type")
    if not isinstance(kind, str):
        raise StreamEventError(index, "event", "neither an `event:` name nor a `type` in the data")
    return kind, obj


@overload
def read_event(
    i: int, obj: Any, model: type[T], wording: Wording | None = None, prefix: str = ""
) -> T: ...
@overload
def read_event(
    i: int, obj: Any, model: Any, wording: Wording | None = None, prefix: str = ""
) -> Any: ...
def read_event(
    i: int, obj: Any, model: Any, wording: Wording | None = None, prefix: str = ""
) -> Any:
    """`obj` as `model` in one pass, else a StreamEventError for event `i` naming the field.

    `obj` sits at `prefix` in the event's object (`""`: it is the object; `delta.`,
    `candidates[0].content.parts[2].`), so the field is said by its path in the event;
    `wording` gives a reader's own words by that path (`[*]` for any index).
    """
    at = re.sub(r"\[\d+\]", "[*]", prefix)
    return convert(
        obj,
        model,
        {k.removeprefix(at): v for k, v in (wording or {}).items() if k.startswith(at)},
        error=lambda field, problem: StreamEventError(
            i, f"{prefix}{field}" if field else prefix.rstrip(".") or None, problem
        ),
    )


def error_event(
    b: StreamBuilder, t_ms: float | None, name: str | None, obj: dict[str, Any]
) -> bool:
    """Map an `event: error` or a `{"error": ...}` object (a bare message is wrapped);
    whether the event was one."""
    if name != "error" and obj.get("error") is None:
        return False
    err = obj.get("error", obj)
    b.error(t_ms, err if isinstance(err, dict) else {"message": str(err)})
    return True


def count_malformed(rec: Recording) -> int:
    """How many events the tolerant mode kept as `malformed_event` metas."""
    return sum(isinstance(e, Meta) and e.data.get("kind") == MALFORMED for e in rec.events)
