"""OpenTelemetry GenAI spans (OTLP JSON) -> Recordings (`--from otel`).

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

The recording is built as `trace_recording` describes (first chunk and end recorded, gaps
between made up).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from functools import partial
from pathlib import Path
from typing import Any

import msgspec

from uxlab.reading import InputProblem, Wording, convert, loads_json
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Requests,
    Skipped,
    id_base,
    origin_of,
)
from uxlab.streams.importers.trace_recording import (
    documents,
    iso_us,
    output_messages,
    trace_recording,
)

_OPERATIONS = ("chat", "text_completion", "generate_content")


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


# -- OpenTelemetry ---------------------------------------------------------------------


Nanos = int | float | str
"""A time in ns since the epoch (OTLP JSON writes the 64-bit number as a string)."""


class Status(msgspec.Struct):
    code: Any = None
    message: Any = None


class Span(msgspec.Struct):
    """A span as uxlab reads it; its times are required of a model call only (by hand)."""

    traceId: Any = None
    spanId: Any = None
    startTimeUnixNano: Nanos | None = None
    endTimeUnixNano: Nanos | None = None
    attributes: list[Any] | None = None
    events: list[Any] | None = None
    status: Status | None = None


class ScopeSpans(msgspec.Struct):
    spans: list[Span] | None = None


class Resource(msgspec.Struct):
    attributes: list[Any] | None = None


class ResourceSpans(msgspec.Struct):
    resource: Resource | None = None
    scopeSpans: list[ScopeSpans] | None = None


class TraceExport(msgspec.Struct):
    """An OTLP JSON trace export (one document of the file)."""

    resourceSpans: list[ResourceSpans]


def _ns_words(value: Any) -> str:
    return f"expected a time in ns since the epoch, got {value!r:.40}"


WORDING: Wording = {
    "": lambda _: "missing (expected an OTLP JSON trace export)",
    "resourceSpans": lambda _: "missing (expected an OTLP JSON trace export)",
    "resourceSpans[*].scopeSpans[*].spans[*].startTimeUnixNano": _ns_words,
    "resourceSpans[*].scopeSpans[*].spans[*].endTimeUnixNano": _ns_words,
}
_PLACE = re.compile(r"^(resourceSpans\[\d+\](?:\.scopeSpans\[\d+\](?:\.spans\[\d+\])?)?)\.?(.*)$")


def _error(path: Path, where: str, field: str | None, problem: str) -> ImportFormatError:
    """A document's error, said at the span (or scope, resource) it is in."""
    place = _PLACE.match(field or "")
    if place is None:
        return ImportFormatError(path, where, field or "resourceSpans", problem)
    return ImportFormatError(path, f"{where}:{place[1]}", place[2] or None, problem)


def _spans(path: Path) -> Iterator[tuple[str, Span, dict[str, Any]]]:
    """`(where, span, resource attributes)` of every span of every document."""
    for where, doc in documents(path):
        export = convert(doc, TraceExport, WORDING, error=partial(_error, path, where))
        for r, rs in enumerate(export.resourceSpans):
            at = f"{where}:resourceSpans[{r}]"
            resource = _attributes(rs.resource.attributes if rs.resource is not None else None)
            for s, ss in enumerate(rs.scopeSpans or []):
                for k, span in enumerate(ss.spans or []):
                    yield f"{at}.scopeSpans[{s}].spans[{k}]", span, resource


def _span_output(
    attrs: dict[str, Any], span: Span
) -> tuple[list[tuple[str, str]], list[dict[str, Any]], str | None]:
    """Text runs, tool calls and finish reason of a span's output, whichever way it is kept."""
    if "gen_ai.output.messages" in attrs:
        return output_messages(attrs["gen_ai.output.messages"])
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
    for event in span.events or []:
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


def _is_model_call(attrs: dict[str, Any]) -> bool:
    """Whether a span with these attributes is a GenAI model call."""
    operation = attrs.get("gen_ai.operation.name")
    return operation in _OPERATIONS or (
        operation is None and ("gen_ai.system" in attrs or "gen_ai.provider.name" in attrs)
    )


def import_otel(path: Path, options: ImportOptions) -> ImportResult:
    """One recording per GenAI model-call span of an OTLP JSON trace export."""
    path = Path(path)
    result = ImportResult()
    spans = (
        (where, span, resource, _attributes(span.attributes))
        for where, span, resource in _spans(path)
    )
    model_calls = Requests(spans, lambda item: _is_model_call(item[3]), options, result)
    for this, (where, span, resource, attrs) in model_calls:
        operation = attrs.get("gen_ai.operation.name")
        origin = origin_of(path, trace=span.traceId, span=span.spanId)
        status = span.status or Status()
        if status.code in (2, "STATUS_CODE_ERROR"):
            result.skipped.append(Skipped(origin, f"error: {status.message or 'status ERROR'}"))
            continue
        start = _nanos(span.startTimeUnixNano, path, where, "startTimeUnixNano")
        end = _nanos(span.endTimeUnixNano, path, where, "endTimeUnixNano")
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
    if model_calls.n_others:
        result.warnings.append(
            f"{model_calls.n_others} span(s) are not GenAI model calls (not imported)"
        )
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
    t_us = iso_us(attrs.get("langfuse.observation.completion_start_time"))
    return None if t_us is None else (t_us * 1000 - start_ns) / 1e6
