"""OpenAI Chat Completions (and legacy Completions) SSE streams -> Recording.

Input: a captured SSE body (`data: {chat.completion.chunk}` events ending in `data: [DONE]`),
either a *timed capture* (each event preceded by `: t_ms=412.700`, see `uxlab.streams.sse`)
or a plain body without times, which imports the text only (`t_ms` null everywhere).
SRC may be one file or a folder of `*.sse` / `*.txt` files (one stream per file).

Mapping (`openai_chat_events_to_recording`, reused by the live recorder):

- a role-only prelude (`delta: {"role": "assistant", "content": ""}`) -> `meta {"kind": "role"}`,
  never an empty chunk, so TTFT counts the first real text;
- `delta.content` (and Completions' `choices[].text`) -> `chunk` on channel `content`;
  `delta.refusal` -> `content` with `"refusal": true`;
- `delta.reasoning_content` / `delta.reasoning` (vLLM, DeepSeek, OpenRouter) -> `reasoning`;
- `delta.tool_calls[]`: the fragment carrying `id`/`name` -> `meta {"kind": "tool_call"}`,
  each `function.arguments` piece -> `chunk` on channel `tool` (with `tool_index`);
- `finish_reason` -> `end.finish_reason`; the `include_usage` chunk (`choices: []`) ->
  `end.usage`; `[DONE]` (or the last event) gives the end time;
- a mid-stream `{"error": {...}}` -> `error` event, then `end` with `finish_reason: "error"`.

Only choice index 0 is imported (chat UIs show one answer); other choices are counted in a
warning. SSE chunks are not tokens, so `n_tokens` is null.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Skipped,
    StreamEventError,
    event_json_object,
    import_header,
    origin_of,
    selected,
)
from uxlab.streams.recording import Chunk, End, ErrorEvent, Event, Header, Meta, Recording
from uxlab.streams.replay_file import safe_filename
from uxlab.streams.sse import parse_sse

TimedEvent = tuple[float | None, str | None, str]
"""(arrival t_ms or None, SSE event name or None, data text)."""


def response_text_events(t_ms: float, raw: str) -> list[TimedEvent]:
    """The events of one benchmark-recorded response body, all arriving at `t_ms`.

    A body that starts like SSE (`data:`, `event:` or a `:` comment) is parsed as SSE; any
    other non-blank body (a plain JSON response) is one event; a blank body is none.
    """
    parsed = parse_sse(raw) if raw.lstrip().startswith(("data:", "event:", ":")) else []
    if parsed:
        return [(t_ms, ev.event, ev.data) for ev in parsed]
    return [(t_ms, None, raw)] if raw.strip() else []


def openai_chat_events_to_recording(events: list[TimedEvent], header: Header) -> Recording:
    """Map OpenAI Chat Completions SSE events to a Recording (see the module docstring).

    Raises StreamEventError(index, field, problem) for an event that is not a chunk object.
    The header's `source.model` is filled from the chunks when it is empty.
    """
    out: list[Event] = []
    finish_reason: str | None = None
    usage: dict[str, Any] | None = None
    end_t: float | None = None
    last_t: float | None = None
    done = False
    errored = False
    other_choices = 0
    for i, (t_ms, _name, data) in enumerate(events):
        last_t = t_ms if t_ms is not None else last_t
        if data.strip() == "[DONE]":
            done = True
            end_t = t_ms
            continue
        obj = event_json_object(i, data)
        if obj.get("error") is not None:
            err = obj["error"] if isinstance(obj["error"], dict) else {"message": obj["error"]}
            out.append(ErrorEvent(t_ms=t_ms, error=err))
            errored = True
            end_t = t_ms
            continue
        if not header.source.get("model") and isinstance(obj.get("model"), str):
            header.source["model"] = obj["model"]
        if obj.get("usage"):
            usage = obj["usage"]
        choices = obj.get("choices")
        if choices is None:
            if obj.get("usage"):
                continue
            raise StreamEventError(i, "choices", "missing (expected a list of choices)")
        if not isinstance(choices, list):
            raise StreamEventError(i, "choices", f"expected a list, got {choices!r:.60}")
        for choice in choices:
            if not isinstance(choice, dict):
                raise StreamEventError(i, "choices[]", f"expected an object, got {choice!r:.60}")
            if choice.get("index", 0) != 0:
                other_choices += 1
                continue
            out.extend(_choice_events(i, t_ms, choice))
            if choice.get("finish_reason"):
                finish_reason = choice["finish_reason"]
    if errored:
        finish_reason = "error"
    if other_choices:
        header.extra.setdefault("import_notes", []).append(
            f"{other_choices} delta(s) of choices other than index 0 were not imported"
        )
    if not (done or finish_reason or errored):
        return Recording(header=header, events=out, end=None)  # cut off: keep what came
    return Recording(
        header=header,
        events=out,
        end=End(
            t_ms=end_t if end_t is not None else last_t, finish_reason=finish_reason, usage=usage
        ),
    )


def _choice_events(i: int, t_ms: float | None, choice: dict[str, Any]) -> list[Event]:
    events: list[Event] = []
    delta = choice.get("delta")
    if delta is None:
        # Legacy Completions stream: the text sits on the choice itself.
        text = choice.get("text")
        if isinstance(text, str) and text:
            events.append(Chunk(t_ms=t_ms, text=text, channel="content"))
        return events
    if not isinstance(delta, dict):
        raise StreamEventError(i, "choices[0].delta", f"expected an object, got {delta!r:.60}")
    role = delta.get("role")
    if role:
        events.append(Meta(t_ms=t_ms, data={"kind": "role", "role": role}))
    for key in ("reasoning_content", "reasoning"):
        text = delta.get(key)
        if isinstance(text, str) and text:
            events.append(Chunk(t_ms=t_ms, text=text, channel="reasoning"))
            break
    content = delta.get("content")
    if content is not None and not isinstance(content, str):
        raise StreamEventError(
            i, "choices[0].delta.content", f"expected a string, got {content!r:.60}"
        )
    if content:
        events.append(Chunk(t_ms=t_ms, text=content, channel="content"))
    refusal = delta.get("refusal")
    if isinstance(refusal, str) and refusal:
        events.append(Chunk(t_ms=t_ms, text=refusal, channel="content", extra={"refusal": True}))
    tool_calls = delta.get("tool_calls") or []
    if not isinstance(tool_calls, list):
        raise StreamEventError(i, "choices[0].delta.tool_calls", "expected a list")
    for call in tool_calls:
        if not isinstance(call, dict):
            raise StreamEventError(i, "choices[0].delta.tool_calls[]", "expected an object")
        index = call.get("index", 0)
        fn = call.get("function") or {}
        if call.get("id") or fn.get("name"):
            meta = {
                "kind": "tool_call",
                "index": index,
                "id": call.get("id"),
                "name": fn.get("name"),
            }
            events.append(Meta(t_ms=t_ms, data=meta))
        args = fn.get("arguments")
        if isinstance(args, str) and args:
            events.append(Chunk(t_ms=t_ms, text=args, channel="tool", extra={"tool_index": index}))
    return events


def _capture_files(path: Path) -> list[Path]:
    if path.is_dir():
        files = sorted(p for p in path.iterdir() if p.suffix in (".sse", ".txt") and p.is_file())
        if not files:
            raise ImportFormatError(
                path, None, None, "no *.sse or *.txt capture files in this folder"
            )
        return files
    if not path.exists():
        raise FileNotFoundError(f"{path}: no such file or folder")
    return [path]


def _capture_id(file: Path, options: ImportOptions) -> str:
    stem = safe_filename(file.stem)
    return f"{safe_filename(options.id_prefix)}-{stem}" if options.id_prefix else stem


def read_capture(path: Path) -> tuple[list[TimedEvent], list[int]]:
    """The events of one capture file as (t_ms, name, data), and each event's line number."""
    try:
        raw = path.read_bytes()
        sse = parse_sse(raw)
    except UnicodeDecodeError as exc:
        raise ImportFormatError(path, None, None, f"not UTF-8 ({exc.reason})") from None
    timed = [ev.t_ms for ev in sse]
    n_timed = sum(t is not None for t in timed)
    if 0 < n_timed < len(sse):
        first = next(ev for ev in sse if ev.t_ms is None)
        raise ImportFormatError(
            path,
            str(first.line),
            "t_ms",
            "this event has no `: t_ms=` comment while others do (time every event or none)",
        )
    last = -1.0
    for ev in sse:
        t = ev.t_ms
        if t is not None:
            if t < last:
                raise ImportFormatError(
                    path, str(ev.line), "t_ms", f"{t} is earlier than the previous event ({last})"
                )
            last = t
    return [(ev.t_ms, ev.event, ev.data) for ev in sse], [ev.line for ev in sse]


def import_capture_files(
    path: Path,
    options: ImportOptions,
    mapper: Any,
    importer: str,
    api: str,
    vendor: str,
) -> ImportResult:
    """Shared driver for SSE capture importers: one recording per capture file."""
    result = ImportResult()
    for _, file in selected(_capture_files(path), options, result):
        events, lines = read_capture(file)
        origin = origin_of(file, request=0)
        if not events:
            result.skipped.append(Skipped(origin, "no SSE events in the file"))
            continue
        timed = events[0][0] is not None
        header = import_header(
            _capture_id(file, options),
            importer=importer,
            origin=origin,
            api=api,
            vendor=vendor,
            timing="recorded" if timed else "none",
        )
        try:
            rec = mapper(events, header)
        except StreamEventError as exc:
            raise ImportFormatError(file, str(lines[exc.index]), exc.field, exc.problem) from None
        if not timed:
            result.warnings.append(f"{file.name}: no `: t_ms=` comments, imported text only")
        if rec.end is None:
            result.warnings.append(f"{file.name}: stream ends without an end; kept as truncated")
        result.recordings.append(rec)
    return result


def import_openai_sse(path: Path, options: ImportOptions) -> ImportResult:
    """Import OpenAI Chat Completions SSE captures (a file or a folder of files)."""
    return import_capture_files(
        Path(path),
        options,
        openai_chat_events_to_recording,
        importer="openai-sse",
        api="openai.chat",
        vendor="openai",
    )
