"""AIPerf exports -> Recordings: `profile_export.jsonl` (timing only) and the raw export.

`profile_export.jsonl`, one record per request (`MetricRecordInfo` in ai-dynamo/aiperf)::

    {"metadata": {"x_request_id": ..., "timestamp_ns": ..., ...},
     "metrics": {"time_to_first_token": {"value": 305.6, "unit": "ms"},   # or "ttft"
                 "inter_chunk_latency": {"value": [24.8, ...], "unit": "ms"},
                 "request_latency": {...}, "output_sequence_length": {...},
                 "time_to_first_output_token": {...}, "reasoning_token_count": {...}, ...},
     "error": null | {"code": 499, "type": "RequestCancellationError", "message": ...}}

Two sets of metric names exist, told apart per record: the current one (AIPerf 0.13.0,
checked: `time_to_first_token`, `time_to_second_token`, `time_to_first_output_token`) and
the older one of AIPerf's 2025 example artifacts (`ttft`, `ttst`). `inter_chunk_latency`
and `request_latency` are named alike in both. The header says which was read
(`source.aiperf_metric_names`: `current` or `legacy`).

The first chunk arrives at the TTFT, each next one `inter_chunk_latency[i]` later (exactly);
the end is at `request_latency`, which AIPerf takes at the last response *with output*, not
at the stream's terminator (a finish chunk and `[DONE]` that come later are not in it).
Records with an `error` (cancelled: code 499) are skipped and reported. The records carry
no text, so a text is laid over the chunks (`text_source: "split"`). AIPerf counts every
response with output as a chunk, tool-call argument deltas included; the records do not say
which is which, so those go on `content` here (the raw export keeps the channels).

Reasoning: with `time_to_first_output_token` (current names) later than the TTFT, the chunks
before it are `reasoning` and the rest `content` (exact). Otherwise, when
`reasoning_token_count` is given, the first chunks (as many as reasoning tokens, scaled when
chunks != tokens) go on `reasoning` (inferred, and the header says so). Each channel's run is
laid from the start of the text. `n_tokens` is 1 when the chunk count equals
`output_sequence_length`, else null.

`profile_export_raw.jsonl` (`RawRecordInfo`, with `--export-level raw`)::

    {"metadata": {...}, "start_perf_ns": ..., "payload": {request}, "status": 200,
     "responses": [{"perf_ns": ..., "text": "data: {...}\\n\\n"}
                   | {"perf_ns": ..., "packets": [{"name": "data", "value": "{...}"}]}],
     "error": null | {...}}

is lossless: arrival `perf_ns - start_perf_ns`, text mapped as OpenAI Chat SSE. Both kinds
are told apart per record (`responses` vs `metrics`). The model name is read from a
`profile_export_aiperf.json` next to the file when there is one.
"""

from __future__ import annotations

from functools import partial
from pathlib import Path
from typing import Annotated, Any, Literal

import msgspec
import numpy as np

from uxlab.reading import MAX_TIME_MS, MAX_TOKENS, MISSING, Wording, convert, expected, shown
from uxlab.streams.importers.base import (
    ImportFormatError,
    ImportOptions,
    ImportResult,
    Skipped,
    chunks_from_gaps,
    id_base,
    import_header,
    iter_jsonl,
    map_located,
    origin_of,
    read_json,
    selected,
)
from uxlab.streams.importers.openai_sse import openai_chat_events_to_recording
from uxlab.streams.importers.sse_capture import response_text_events
from uxlab.streams.peer_view import facts
from uxlab.streams.recording import End, Recording
from uxlab.streams.split_text import lay_text, neutral_text
from uxlab.streams.sse import SseEvent

_TO_MS = {"ms": 1.0, "ns": 1e-6, "us": 1e-3, "s": 1000.0, "sec": 1000.0}
TimeUnit = Literal["ms", "ns", "us", "s", "sec"]
Time = Annotated[float, msgspec.Meta(ge=0)]
Gap = Annotated[float, msgspec.Meta(ge=0, le=MAX_TIME_MS)]


class TimeMetric(msgspec.Struct):
    value: Time
    unit: TimeUnit


class GapsMetric(msgspec.Struct):
    value: list[Gap]
    unit: TimeUnit


class CountMetric(msgspec.Struct):
    """A count (informative only: a value that is not a number is not used)."""

    value: Any = None


class WallClockMetric(msgspec.Struct):
    value: Any = None
    unit: Any = "ns"


class Metrics(msgspec.Struct):
    """The metrics uxlab reads (AIPerf's current and legacy names); others are not read."""

    time_to_first_token: TimeMetric | msgspec.UnsetType = msgspec.UNSET
    ttft: TimeMetric | msgspec.UnsetType = msgspec.UNSET
    inter_chunk_latency: GapsMetric | msgspec.UnsetType = msgspec.UNSET
    request_latency: TimeMetric | msgspec.UnsetType = msgspec.UNSET
    time_to_first_output_token: TimeMetric | msgspec.UnsetType = msgspec.UNSET
    input_sequence_length: CountMetric | None = None
    output_sequence_length: CountMetric | None = None
    output_token_count: CountMetric | None = None
    reasoning_token_count: CountMetric | None = None
    min_request_timestamp: WallClockMetric | None = None


class Metadata(msgspec.Struct):
    x_request_id: str | int | None = None
    request_start_ns: Any = None
    timestamp_ns: Any = None


class MetricRecord(msgspec.Struct):
    """A `profile_export.jsonl` record."""

    metrics: Metrics
    metadata: Metadata | None = None


class Packet(msgspec.Struct):
    name: str
    value: str | None = None


class RawResponse(msgspec.Struct):
    perf_ns: int | float  # ns: an int keeps every digit past 2**53
    text: str | msgspec.UnsetType = msgspec.UNSET
    packets: list[Packet] | msgspec.UnsetType | None = msgspec.UNSET


class RawRecord(msgspec.Struct):
    """A `profile_export_raw.jsonl` record."""

    start_perf_ns: int | float
    responses: list[RawResponse]
    payload: Any = None
    status: Any = None
    metadata: Metadata | None = None


def _time_words(name: str) -> Wording:
    """The hand-written checks' words for a time metric `metrics.name`."""
    key = f"metrics.{name}"
    return {
        key: lambda _: 'expected {"value", "unit"}',
        f"{key}.unit": lambda v: f"expected a time unit (ms, ns, us, s), got {shown(v)}",
        f"{key}.value": lambda v: (
            'missing (expected {"value", "unit"})'
            if v is MISSING
            else f"expected a non-negative number, got {shown(v)}"
        ),
    }


WORDING: Wording = {
    **{k: v for name in ("time_to_first_token", "ttft", "request_latency",
                         "time_to_first_output_token", "inter_chunk_latency")
       for k, v in _time_words(name).items()},
    "metrics.inter_chunk_latency.value": lambda v: (
        'missing (expected {"value", "unit"})'
        if v is MISSING
        else f"expected a list of numbers, got {shown(v)}"
    ),
    "metrics.inter_chunk_latency.value[*]": lambda v: (
        f"expected a non-negative number, got {shown(v)}"
    ),
    "metrics": lambda v: f"expected an object of metrics, got {shown(v)}",
    "metadata": lambda v: f"expected an object, got {type(v).__name__}",
    "metadata.x_request_id": lambda _: "expected a string",
    "start_perf_ns": expected("a perf_counter time in ns"),
    "responses": expected("a list of responses"),
    "responses[*].perf_ns": expected("a time in ns"),
    "responses[*].packets[*]*": lambda _: "expected string `name` and `value`",
}  # fmt: skip
"""The words the hand-written checks said, where the model's would say less."""


def import_aiperf(path: Path, options: ImportOptions) -> ImportResult:
    """Import an AIPerf `profile_export.jsonl` or `profile_export_raw.jsonl`."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    model = _model_from_summary(path.parent / "profile_export_aiperf.json")
    text = options.text if options.text is not None else neutral_text()
    result = ImportResult()
    for index, (lineno, obj) in selected(iter_jsonl(path), options, result):
        origin = origin_of(path, record=index)
        error = obj.get("error")
        if error:
            result.skipped.append(Skipped(origin, _error_reason(error)))
            continue
        where = str(lineno)
        rid = f"{id_base(path, options)}-r{index:03d}"
        error_at = partial(ImportFormatError, path, where)
        if "responses" in obj:
            raw = convert(obj, RawRecord, WORDING, error=error_at)
            rec = _raw_record(path, where, raw, rid, origin, model)
        elif "metrics" in obj:
            record = convert(obj, MetricRecord, WORDING, error=error_at)
            rec = _metric_record(
                path, where, record, obj["metrics"], rid, origin, model, text, options
            )
        else:
            raise ImportFormatError(
                path,
                where,
                "metrics",
                "missing (expected an AIPerf record with `metrics`, or a raw record with "
                "`responses`)",
            )
        result.add(origin, rec)
    note = _raw_end_difference(result.recordings)
    if note:
        result.warnings.append(f"{path.name}: {note}")
    return result


def _raw_end_difference(recs: list[Recording]) -> str | None:
    """How far each raw stream's end (its last packet) is past AIPerf's `request_latency`
    (the last response with output), said on import so the two files' e2e are not taken
    for one definition."""
    diffs = []
    for rec in recs:
        if rec.header.source.get("importer") != "aiperf-raw" or rec.end is None:
            continue
        last = facts(rec).last_ms
        if last is not None and rec.end.t_ms is not None:
            diffs.append(rec.end.t_ms - last)
    if not diffs:
        return None
    return (
        "e2e here ends at each stream's last packet; AIPerf's request_latency ends at the "
        f"last response with output, {np.mean(diffs):.1f} ms earlier on average (max "
        f"{max(diffs):.1f} ms) over {len(diffs)} stream(s). `uxlab inspect --as aiperf` "
        "gives AIPerf's definition for both of AIPerf's files"
    )


def _error_reason(error: Any) -> str:
    if not isinstance(error, dict):
        return f"error: {error}"
    code = error.get("code")
    etype = error.get("type") or "error"
    label = "cancelled" if code == 499 else "failed"
    return f"{label} ({etype}, code {code})"


def _model_from_summary(summary: Path) -> str | None:
    if not summary.is_file():
        return None
    try:
        config = read_json(summary)["input_config"]
        if "models" in config:  # current: {"models": {"items": [{"name": ...}]}}
            return str(config["models"]["items"][0]["name"])
        names = config["endpoint"]["model_names"]  # legacy
        return str(names[0]) if names else None
    except (ImportFormatError, KeyError, IndexError, TypeError):
        return None


TTFT_NAMES: dict[str, str] = {"current": "time_to_first_token", "legacy": "ttft"}
"""The TTFT metric's name in each of AIPerf's two sets of metric names."""


def metric_names(metrics: dict[str, Any], path: Path, where: str) -> str:
    """`current` or `legacy`: which of AIPerf's metric names a record uses."""
    for names, ttft in TTFT_NAMES.items():
        if ttft in metrics:
            return names
    raise ImportFormatError(
        path,
        where,
        "metrics.time_to_first_token",
        "missing (expected `time_to_first_token` (AIPerf 0.13) or `ttft` (older AIPerf); "
        f"the record has {', '.join(sorted(metrics)[:8]) or 'no metrics'})",
    )


def _ms(metric: TimeMetric | msgspec.UnsetType) -> float | None:
    """A time metric's value in ms (None when absent)."""
    return None if metric is msgspec.UNSET else metric.value * _TO_MS[metric.unit]


def _metric_record(
    path: Path,
    where: str,
    record: MetricRecord,
    given: dict[str, Any],
    rid: str,
    origin: str,
    model: str | None,
    text: str,
    options: ImportOptions,
) -> Recording | str:
    metrics = record.metrics
    names = metric_names(given, path, where)
    ttft_ms = _ms(metrics.time_to_first_token if names == "current" else metrics.ttft)
    assert ttft_ms is not None  # its name is in the record (metric_names)
    icl = metrics.inter_chunk_latency
    gaps_ms = [g * _TO_MS[icl.unit] for g in icl.value] if icl is not msgspec.UNSET else []
    n_chunks = len(gaps_ms) + 1
    count = partial(_count, path, where, metrics)
    osl = count("output_sequence_length")
    n_reasoning_tokens = count("reasoning_token_count") or 0
    tokens_are_chunks = osl == n_chunks
    first_output_ms = _ms(metrics.time_to_first_output_token)
    channels_from = None
    if first_output_ms is not None and n_reasoning_tokens:
        # Chunks before the first non-reasoning output are reasoning: exact, from the times.
        times = ttft_ms + np.concatenate([[0.0], np.cumsum(gaps_ms)])
        n_reasoning = int(np.argmin(np.abs(times - first_output_ms)))
        channels_from = "time_to_first_output_token"
    elif n_reasoning_tokens and osl:
        n_reasoning = min(n_chunks, round(n_reasoning_tokens * n_chunks / osl))
        channels_from = "inferred from reasoning_token_count"
    else:
        n_reasoning = 0
    channels = ["reasoning"] * n_reasoning + ["content"] * (n_chunks - n_reasoning)
    texts = lay_text(text, n_reasoning) + lay_text(text, n_chunks - n_reasoning)
    chunks = chunks_from_gaps(
        ttft_ms, gaps_ms, texts, channels, n_tokens=1 if tokens_are_chunks else None
    )
    end_ms = _ms(metrics.request_latency)
    last_ms = chunks[-1].t_ms or 0.0
    end_ms = last_ms if end_ms is None else max(float(end_ms), last_ms)
    usage = {
        k: count(k)
        for k in (
            "input_sequence_length",
            "output_sequence_length",
            "output_token_count",
            "reasoning_token_count",
        )
    }
    meta = record.metadata or Metadata()
    start = _count_ns(metrics.min_request_timestamp) or _start_ns(meta)
    header = import_header(
        rid,
        importer="aiperf",
        origin=origin,
        api="openai.chat",
        model=model,
        text_source="split",
        timing="recorded",
        request_id=meta.x_request_id,
        request_start_ns=start,
        aiperf_metric_names=names,
        channels=channels_from if n_reasoning else None,
        text=options.text_name or "uxlab neutral text",
    )
    return Recording(
        header=header,
        events=list(chunks),
        end=End(
            t_ms=end_ms,
            finish_reason=None,
            usage={k: v for k, v in usage.items() if v is not None} or None,
        ),
    )


def _count(path: Path, where: str, metrics: Metrics, key: str) -> int | None:
    """A count metric's value (None when absent or not a count: counts are only informative)."""
    m = getattr(metrics, key)
    value = m.value if m is not None else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not 0 <= value <= MAX_TOKENS:
        raise ImportFormatError(
            path, where, f"metrics.{key}.value", f"{value!r:.40} is not a plausible count"
        )
    return int(value)


def _count_ns(metric: WallClockMetric | None) -> int | None:
    """A wall-clock metric in ns (`min_request_timestamp`), None when absent or not one."""
    value = metric.value if metric is not None else None
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return value if ok and metric is not None and metric.unit == "ns" else None


def _start_ns(meta: Metadata) -> int | None:
    """When the request was sent, on the run's wall clock (ns), from the record's metadata
    (`request_start_ns` in AIPerf 0.13, `timestamp_ns` before); kept in the header as
    `request_start_ns` so the run's span (AIPerf's `benchmark_duration`) can be rebuilt."""
    for value in (meta.request_start_ns, meta.timestamp_ns):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _raw_record(
    path: Path, where: str, obj: RawRecord, rid: str, origin: str, model: str | None
) -> Recording | str:
    if not obj.responses:
        return "no responses"
    events: list[SseEvent] = []
    for k, resp in enumerate(obj.responses):
        t_ms = (resp.perf_ns - obj.start_perf_ns) / 1e6
        if t_ms < 0:
            raise ImportFormatError(
                path, where, f"responses[{k}].perf_ns", "earlier than start_perf_ns"
            )
        if events and events[-1].t_ms is not None and t_ms < events[-1].t_ms:
            raise ImportFormatError(
                path, where, f"responses[{k}].perf_ns", "earlier than the response before"
            )
        if resp.packets is not msgspec.UNSET:
            packets = [(p.name, p.value or "") for p in resp.packets or []]
            name = next((v for n, v in packets if n == "event"), None)
            data = "\n".join(v for n, v in packets if n == "data")
            if data or name:
                events.append(SseEvent(name, data, t_ms))
        elif resp.text is not msgspec.UNSET:
            events.extend(response_text_events(t_ms, resp.text))
        else:
            raise ImportFormatError(
                path, where, f"responses[{k}]", "expected `text` or `packets` next to `perf_ns`"
            )
    payload = obj.payload if isinstance(obj.payload, dict) else {}
    meta = obj.metadata or Metadata()
    model_name = payload.get("model")
    header = import_header(
        rid,
        importer="aiperf-raw",
        origin=origin,
        api="openai.chat",
        model=model_name if isinstance(model_name, str) and model_name else model,
        request=payload,
        timing="recorded",
        request_id=meta.x_request_id,
        request_start_ns=_start_ns(meta),
        http_status=obj.status,
    )
    return map_located(
        openai_chat_events_to_recording, events, header, path, lambda i: f"{where} (response {i})"
    )
