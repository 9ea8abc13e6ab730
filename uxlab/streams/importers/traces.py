"""Production traces -> Recordings: OpenTelemetry GenAI spans and Langfuse generations.

Traces keep, per model call, when it started and ended, when the first chunk of a streamed
answer came (if the instrumentation records it), the answer's text and the token usage,
not when each later chunk came. They give production TTFT and e2e distributions.

**OTLP JSON** (`--from otel`): what an OpenTelemetry collector's file exporter or an OTLP/HTTP
JSON body holds, one document or one per line::

    {"resourceSpans": [{"resource": {"attributes": [...]}, "scopeSpans": [{"spans": [
      {"traceId", "spanId", "name": "chat gpt-4o", "startTimeUnixNano": "...",
       "endTimeUnixNano": "...", "status": {"code": 2?, "message"},
       "attributes": [{"key": "gen_ai.operation.name", "value": {"stringValue": "chat"}},
                      {"key": "gen_ai.response.time_to_first_chunk",
                       "value": {"doubleValue": 0.41}},
                      {"key": "gen_ai.output.messages", "value": {"stringValue": "[...]"}}, ...],
       "events": [...]}]}]}]}

A span is a model call when it has `gen_ai.operation.name` (`chat`, `text_completion`,
`generate_content`) or, for older instrumentations, `gen_ai.system` with a completion.
Read (GenAI semantic conventions): `gen_ai.response.time_to_first_chunk` (s, from the
request; also `langfuse.observation.completion_start_time` as an ISO time), the output from
`gen_ai.output.messages` (parts of type `text`, `reasoning`, `tool_call`), else the older
`gen_ai.completion.N.content` attributes or a `gen_ai.choice` event; `gen_ai.request.model`
/ `gen_ai.response.model`, `gen_ai.usage.input_tokens` / `output_tokens`,
`gen_ai.response.finish_reasons`. Spans with an error status are skipped and reported.

**Langfuse** (`--from langfuse`): observations as the public API lists them (a JSON list, or
`{"data": [...]}`, or one per line), each `{"type": "GENERATION", "startTime",
"completionStartTime", "endTime", "model", "output", "usage" | "usageDetails", "level",
"statusMessage", ...}` with ISO times; `level: "ERROR"` is skipped and reported.

Recording: time zero is the span's start. With a first-chunk time, the text is cut into
pieces (as many as the output tokens when known) laid from the first chunk to the end, the
gaps between them made up (`source.timing` starts with `synthetic`: `inspect` shows TTFT and
e2e, and leaves ITL and stalls out). Without one (a call that did not stream, or an
instrumentation that does not record it) the text has no times (`timing: none`) and only the
end is known. Tool calls are kept (a `tool_call` meta and its arguments) at the end.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import numpy as np

from uxlab.reading import InputProblem, loads_json
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Skipped,
    id_base,
    import_header,
    limit_reached,
    loads_checked,
    origin_of,
    read_text_checked,
    wanted,
)
from uxlab.streams.recording import Chunk, End, Event, Meta, Recording
from uxlab.streams.split_text import split_text, text_pieces

TIMING = "synthetic: recorded first chunk and end; even gaps between"
_OPERATIONS = ("chat", "text_completion", "generate_content")


# -- reading -------------------------------------------------------------------------------


def _documents(path: Path) -> Iterator[tuple[str, Any]]:
    """The JSON document of a file, or one per line (JSON Lines)."""
    text = read_text_checked(path)
    lines = [(n, raw) for n, raw in enumerate(text.splitlines(), start=1) if raw.strip()]
    if len(lines) > 1 and all(raw.lstrip().startswith("{") for _, raw in lines):
        try:  # JSON Lines (one document per line) unless the whole file is one document
            loads_json(lines[0][1])
        except InputProblem:
            yield "1", loads_checked(text, path, None)
            return
        for lineno, raw in lines:
            yield str(lineno), loads_checked(raw, path, str(lineno))
        return
    yield "1", loads_checked(text, path, None)


def _any_value(value: Any) -> Any:
    """An OTLP `AnyValue` (`{"stringValue": ...}`, `{"intValue": "12"}`, ...) as Python."""
    if not isinstance(value, dict):
        return value
    for key in ("stringValue", "boolValue", "doubleValue"):
        if key in value:
            return value[key]
    if "intValue" in value:
        try:
            return int(value["intValue"])
        except (TypeError, ValueError, OverflowError):
            return None
    for key in ("arrayValue", "kvlistValue"):
        inner = value.get(key)
        items = inner.get("values") if isinstance(inner, dict) else None
        if isinstance(items, list):
            return [_any_value(v) for v in items] if key == "arrayValue" else _attributes(items)
    return None


def _str(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _attributes(items: Any) -> dict[str, Any]:
    if not isinstance(items, list):
        return {}
    return {
        a["key"]: _any_value(a.get("value"))
        for a in items
        if isinstance(a, dict) and isinstance(a.get("key"), str)
    }


def _nanos(value: Any, path: Path, where: str, name: str) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise ImportFormatError(
            path, where, name, f"expected a time in ns since the epoch, got {value!r:.40}"
        ) from None


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _iso_us(value: Any) -> int | None:
    """An ISO 8601 time (Langfuse) as whole microseconds since the epoch (exact, no float
    rounding); None when absent or unreadable."""
    if not isinstance(value, str) or not value:
        return None
    try:
        t = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if t.tzinfo is None:
        t = t.replace(tzinfo=UTC)
    return (t - _EPOCH) // timedelta(microseconds=1)


# -- the recording ---------------------------------------------------------------------


def trace_recording(
    rid: str,
    *,
    importer: str,
    origin: str,
    ttft_ms: float | None,
    end_ms: float,
    parts: list[tuple[str, str]],
    tool_calls: list[dict[str, Any]],
    output_tokens: int | None,
    finish_reason: str | None,
    usage: dict[str, Any] | None,
    **source: Any,
) -> Recording:
    """A recording from a trace's moments: text laid from the first chunk to the end."""
    finish_reason = _str(finish_reason)
    source = {k: (v if isinstance(v, str | int | float) else None) for k, v in source.items()}
    events: list[Event] = []
    runs = [(channel, text) for channel, text in parts if text]
    if ttft_ms is not None and runs:
        # As many chunks as output tokens when known, else token-like pieces; each run gets
        # its share (at least one, at most one per character).
        n_pieces = [len(text_pieces(text)) for _, text in runs]
        n_chunks = output_tokens or sum(n_pieces)
        shares = [
            min(len(text), max(1, round(n_chunks * k / sum(n_pieces))))
            for (_, text), k in zip(runs, n_pieces, strict=True)
        ]
        times = np.linspace(ttft_ms, max(end_ms, ttft_ms), sum(shares)).tolist()
        per_token = 1 if output_tokens == sum(shares) else None
        for (channel, text), n in zip(runs, shares, strict=True):
            for piece in split_text(text, n):
                t_ms = times.pop(0)
                events.append(Chunk(t_ms=t_ms, text=piece, channel=channel, n_tokens=per_token))
    else:
        events.extend(Chunk(t_ms=None, text=text, channel=channel) for channel, text in runs)
    for k, call in enumerate(tool_calls):
        meta = {"kind": "tool_call", "index": k, "id": call.get("id"), "name": call.get("name")}
        events.append(Meta(t_ms=end_ms, data=meta))
        if call.get("arguments"):
            events.append(
                Chunk(t_ms=end_ms, text=call["arguments"], channel="tool", extra={"tool_index": k})
            )
    header = import_header(
        rid,
        importer=importer,
        origin=origin,
        text_source="split" if ttft_ms is not None else "recorded",
        timing=TIMING if ttft_ms is not None else "none: the trace keeps no first-chunk time",
        **source,
    )
    return Recording(header=header, events=events, end=End(end_ms, finish_reason, usage))


def _arguments(value: Any) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else json.dumps(value)


def _output_messages(raw: Any) -> tuple[list[tuple[str, str]], list[dict[str, Any]], str | None]:
    """Text runs, tool calls and finish reason of `gen_ai.output.messages`."""
    if isinstance(raw, str):
        try:
            raw = loads_json(raw)
        except InputProblem:
            return [("content", raw)], [], None
    parts: list[tuple[str, str]] = []
    calls: list[dict[str, Any]] = []
    finish = None
    for message in raw if isinstance(raw, list) else [raw]:
        if not isinstance(message, dict):
            continue
        finish = finish or message.get("finish_reason")
        for part in message.get("parts") or []:
            if not isinstance(part, dict):
                continue
            kind = part.get("type")
            if kind == "text" and isinstance(part.get("content"), str):
                parts.append(("content", part["content"]))
            elif kind == "reasoning" and isinstance(part.get("content"), str):
                parts.append(("reasoning", part["content"]))
            elif kind == "tool_call":
                calls.append(
                    {
                        "id": part.get("id"),
                        "name": part.get("name"),
                        "arguments": _arguments(part.get("arguments")),
                    }
                )
        if isinstance(message.get("content"), str):  # a plain {role, content} message
            parts.append(("content", message["content"]))
    return parts, calls, finish


# -- OpenTelemetry ---------------------------------------------------------------------


def _spans(path: Path) -> Iterator[tuple[str, dict[str, Any], dict[str, Any]]]:
    """`(where, span, resource attributes)` of every span of every document."""
    for where, doc in _documents(path):
        if not isinstance(doc, dict) or not isinstance(doc.get("resourceSpans"), list):
            raise ImportFormatError(
                path, where, "resourceSpans", "missing (expected an OTLP JSON trace export)"
            )
        for r, rs in enumerate(doc["resourceSpans"]):
            at = f"{where}:resourceSpans[{r}]"
            rs = _object(rs, path, at)
            resource = _attributes(_object(rs.get("resource") or {}, path, at).get("attributes"))
            for s, ss in enumerate(_list(rs.get("scopeSpans"), path, f"{at}.scopeSpans")):
                at_s = f"{at}.scopeSpans[{s}]"
                ss = _object(ss, path, at_s)
                for k, span in enumerate(_list(ss.get("spans"), path, f"{at_s}.spans")):
                    yield f"{at_s}.spans[{k}]", _object(span, path, f"{at_s}.spans[{k}]"), resource


def _object(value: Any, path: Path, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise ImportFormatError(path, where, None, f"expected an object, got {value!r:.40}")
    return value


def _list(value: Any, path: Path, where: str) -> list[Any]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise ImportFormatError(path, where, None, f"expected a list, got {value!r:.40}")
    return value


def _span_output(attrs: dict[str, Any], span: dict[str, Any]):
    if "gen_ai.output.messages" in attrs:
        return _output_messages(attrs["gen_ai.output.messages"])
    parts: list[tuple[str, str]] = []
    finish = None
    k = 0
    while f"gen_ai.completion.{k}.content" in attrs or f"gen_ai.completion.{k}.role" in attrs:
        text = attrs.get(f"gen_ai.completion.{k}.content")
        if isinstance(text, str):
            parts.append(("content", text))
        finish = finish or attrs.get(f"gen_ai.completion.{k}.finish_reason")
        k += 1
    if parts:
        return parts, [], finish
    for event in span.get("events") or []:
        if isinstance(event, dict) and event.get("name") == "gen_ai.choice":
            body = _attributes(event.get("attributes"))
            message = body.get("message")
            if isinstance(message, str):
                try:
                    message = loads_json(message)
                except InputProblem:
                    message = {"content": message}
            if isinstance(message, dict) and isinstance(message.get("content"), str):
                parts.append(("content", message["content"]))
            finish = finish or body.get("finish_reason")
    return parts, [], finish


def import_otel(path: Path, options: ImportOptions) -> ImportResult:
    """One recording per GenAI model-call span of an OTLP JSON trace export."""
    path = Path(path)
    result = ImportResult()
    index = 0
    not_genai = 0
    for where, span, resource in _spans(path):
        attrs = _attributes(span.get("attributes"))
        operation = attrs.get("gen_ai.operation.name")
        if operation not in _OPERATIONS and not (
            operation is None and ("gen_ai.system" in attrs or "gen_ai.provider.name" in attrs)
        ):
            not_genai += 1
            continue
        this = index
        index += 1
        if not wanted(this, options):
            continue
        if limit_reached(options, len(result.recordings)):
            break
        origin = origin_of(path, trace=span.get("traceId"), span=span.get("spanId"))
        status = span.get("status") or {}
        if isinstance(status, dict) and status.get("code") in (2, "STATUS_CODE_ERROR"):
            result.skipped.append(
                Skipped(origin, f"error: {status.get('message') or 'status ERROR'}")
            )
            continue
        start = _nanos(span.get("startTimeUnixNano"), path, where, "startTimeUnixNano")
        end = _nanos(span.get("endTimeUnixNano"), path, where, "endTimeUnixNano")
        if end < start:
            raise ImportFormatError(path, where, "endTimeUnixNano", "before startTimeUnixNano")
        end_ms = (end - start) / 1e6
        ttft_ms = _span_ttft_ms(attrs, start, where, path)
        if ttft_ms is not None and not 0 <= ttft_ms <= end_ms + 1e-6:
            raise ImportFormatError(
                path, where, "gen_ai.response.time_to_first_chunk",
                f"{ttft_ms:.3f} ms is not within the span (0 to {end_ms:.3f} ms)",
            )  # fmt: skip
        parts, calls, finish = _span_output(attrs, span)
        reasons = attrs.get("gen_ai.response.finish_reasons")
        if finish is None and isinstance(reasons, list) and reasons:
            finish = str(reasons[0])
        usage = {
            k.removeprefix("gen_ai.usage."): attrs[k]
            for k in ("gen_ai.usage.input_tokens", "gen_ai.usage.output_tokens")
            if isinstance(attrs.get(k), int)
        }
        result.recordings.append(
            trace_recording(
                f"{id_base(path, options)}-s{this:04d}",
                importer="otel",
                origin=origin,
                ttft_ms=ttft_ms,
                end_ms=end_ms,
                parts=parts,
                tool_calls=calls,
                output_tokens=usage.get("output_tokens"),
                finish_reason=finish,
                usage=usage or None,
                api=attrs.get("gen_ai.system") or attrs.get("gen_ai.provider.name"),
                model=attrs.get("gen_ai.response.model") or attrs.get("gen_ai.request.model"),
                operation=operation,
                service=resource.get("service.name"),
            )
        )
    if not_genai:
        result.warnings.append(f"{not_genai} span(s) are not GenAI model calls (not imported)")
    return result


def _span_ttft_ms(attrs: dict[str, Any], start_ns: int, where: str, path: Path) -> float | None:
    value = attrs.get("gen_ai.response.time_to_first_chunk")
    if value is not None:
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise ImportFormatError(
                path,
                where,
                "gen_ai.response.time_to_first_chunk",
                f"expected seconds, got {value!r:.40}",
            )
        return float(value) * 1000.0
    t_us = _iso_us(attrs.get("langfuse.observation.completion_start_time"))
    return None if t_us is None else (t_us * 1000 - start_ns) / 1e6


# -- Langfuse --------------------------------------------------------------------------


def _observations(path: Path) -> Iterator[tuple[str, dict[str, Any]]]:
    for where, doc in _documents(path):
        items = doc.get("data") if isinstance(doc, dict) and "data" in doc else doc
        if isinstance(items, dict):
            items = [items]
        if not isinstance(items, list):
            raise ImportFormatError(path, where, None, "expected Langfuse observations (a list)")
        for i, obs in enumerate(items):
            if isinstance(obs, dict):
                yield (f"{where}:[{i}]" if len(items) > 1 or where != "1" else f"[{i}]"), obs


def import_langfuse(path: Path, options: ImportOptions) -> ImportResult:
    """One recording per Langfuse GENERATION observation."""
    path = Path(path)
    result = ImportResult()
    index = 0
    others = 0
    for where, obs in _observations(path):
        if obs.get("type") != "GENERATION":
            others += 1
            continue
        this = index
        index += 1
        if not wanted(this, options):
            continue
        if limit_reached(options, len(result.recordings)):
            break
        origin = origin_of(path, observation=obs.get("id"))
        if obs.get("level") == "ERROR":
            result.skipped.append(Skipped(origin, f"error: {obs.get('statusMessage') or 'ERROR'}"))
            continue
        start = _iso_us(obs.get("startTime"))
        end = _iso_us(obs.get("endTime"))
        if start is None or end is None:
            missing = "startTime" if start is None else "endTime"
            raise ImportFormatError(path, where, missing, "missing (expected an ISO 8601 time)")
        if end < start:
            raise ImportFormatError(path, where, "endTime", "before startTime")
        first = _iso_us(obs.get("completionStartTime"))
        ttft_ms = None if first is None else (first - start) / 1000.0
        if ttft_ms is not None and not 0 <= ttft_ms <= (end - start) / 1000.0:
            raise ImportFormatError(
                path, where, "completionStartTime", "not between startTime and endTime"
            )
        parts, calls, finish = _langfuse_output(obs.get("output"))
        usage_raw = obs.get("usageDetails") or obs.get("usage") or {}
        usage = {
            f"{k}_tokens": v
            for k, v in (usage_raw.items() if isinstance(usage_raw, dict) else [])
            if k in ("input", "output") and isinstance(v, int) and not isinstance(v, bool)
        }
        result.recordings.append(
            trace_recording(
                f"{id_base(path, options)}-g{this:04d}",
                importer="langfuse",
                origin=origin,
                ttft_ms=ttft_ms,
                end_ms=(end - start) / 1000.0,
                parts=parts,
                tool_calls=calls,
                output_tokens=usage.get("output_tokens"),
                finish_reason=finish,
                usage=usage or None,
                model=obs.get("model") if isinstance(obs.get("model"), str) else None,
                trace_id=obs.get("traceId"),
            )
        )
    if others:
        result.warnings.append(f"{others} observation(s) are not generations (not imported)")
    return result


def _langfuse_output(output: Any) -> tuple[list[tuple[str, str]], list[dict[str, Any]], str | None]:
    if isinstance(output, str):
        return [("content", output)], [], None
    if isinstance(output, dict):
        calls = [
            {
                "id": c.get("id"),
                "name": (c.get("function") or {}).get("name"),
                "arguments": _arguments((c.get("function") or {}).get("arguments")),
            }
            for c in output.get("tool_calls") or []
            if isinstance(c, dict)
        ]
        parts: list[tuple[str, str]] = []
        if isinstance(output.get("reasoning_content"), str):
            parts.append(("reasoning", output["reasoning_content"]))
        if isinstance(output.get("content"), str):
            parts.append(("content", output["content"]))
        return parts, calls, None
    if isinstance(output, list):
        return _output_messages(output)
    return [], [], None
