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

from pathlib import Path
from typing import Any

import numpy as np

from uxlab.reading import MAX_TOKENS, InputProblem
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
    number_list,
    origin_of,
    read_json,
    require,
    selected,
)
from uxlab.streams.importers.openai_sse import openai_chat_events_to_recording
from uxlab.streams.importers.sse_capture import response_text_events
from uxlab.streams.peer_view import facts
from uxlab.streams.recording import End, Recording
from uxlab.streams.split_text import lay_text, neutral_text
from uxlab.streams.sse import SseEvent

_TO_MS = {"ms": 1.0, "ns": 1e-6, "us": 1e-3, "s": 1000.0, "sec": 1000.0}


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
        if "responses" in obj:
            rec = _raw_record(path, where, obj, rid, origin, model)
        elif "metrics" in obj:
            try:
                rec = _metric_record(path, where, obj, rid, origin, model, text, options)
            except InputProblem as exc:
                raise ImportFormatError(path, where, exc.field, exc.problem) from None
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


def _metric(
    metrics: dict[str, Any],
    key: str,
    path: Path,
    where: str,
    required: bool = True,
    is_list: bool = False,
) -> Any:
    """A time metric's value in ms: a number, or a list of numbers with `is_list` (None when
    absent and not required)."""
    if key not in metrics:
        if required:
            raise ImportFormatError(path, where, f"metrics.{key}", "missing")
        return None
    m = metrics[key]
    if not isinstance(m, dict) or "value" not in m:
        raise ImportFormatError(path, where, f"metrics.{key}", 'expected {"value", "unit"}')
    value, unit = m["value"], m.get("unit")
    scale = _TO_MS.get(unit) if isinstance(unit, str) else None
    if scale is None:
        raise ImportFormatError(
            path,
            where,
            f"metrics.{key}.unit",
            f"expected a time unit (ms, ns, us, s), got {unit!r:.40}",
        )
    if is_list:
        return [v * scale for v in number_list(value, f"metrics.{key}.value", path, where)]
    if isinstance(value, bool) or not isinstance(value, int | float) or not value >= 0:
        raise ImportFormatError(
            path,
            where,
            f"metrics.{key}.value",
            f"expected a non-negative number, got {value!r:.60}",
        )
    return value * scale


def _metric_record(
    path: Path,
    where: str,
    obj: dict[str, Any],
    rid: str,
    origin: str,
    model: str | None,
    text: str,
    options: ImportOptions,
) -> Recording | str:
    metrics = require(obj, "metrics", (dict,), "an object of metrics", path, where)
    names = metric_names(metrics, path, where)
    ttft_ms = _metric(metrics, TTFT_NAMES[names], path, where)
    gaps_ms = _metric(metrics, "inter_chunk_latency", path, where, False, is_list=True) or []
    n_chunks = len(gaps_ms) + 1
    osl = _count(metrics, "output_sequence_length")
    n_reasoning_tokens = _count(metrics, "reasoning_token_count") or 0
    tokens_are_chunks = osl == n_chunks
    first_output_ms = _metric(metrics, "time_to_first_output_token", path, where, required=False)
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
    end_ms = _metric(metrics, "request_latency", path, where, required=False)
    last_ms = chunks[-1].t_ms or 0.0
    end_ms = last_ms if end_ms is None else max(float(end_ms), last_ms)
    usage = {
        k: _count(metrics, k)
        for k in (
            "input_sequence_length",
            "output_sequence_length",
            "output_token_count",
            "reasoning_token_count",
        )
    }
    meta = _metadata(obj, path, where)
    start = _count_ns(metrics.get("min_request_timestamp")) or _start_ns(meta)
    header = import_header(
        rid,
        importer="aiperf",
        origin=origin,
        api="openai.chat",
        model=model,
        text_source="split",
        timing="recorded",
        request_id=meta.get("x_request_id"),
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


def _count(metrics: dict[str, Any], key: str) -> int | None:
    """A count metric's value (None when absent or not a count: counts are only informative)."""
    m = metrics.get(key)
    value = m.get("value") if isinstance(m, dict) else None
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    if not 0 <= value <= MAX_TOKENS:
        raise InputProblem(f"metrics.{key}.value", f"{value!r:.40} is not a plausible count")
    return int(value)


def _count_ns(metric: Any) -> int | None:
    """A wall-clock metric in ns (`min_request_timestamp`), None when absent or not one."""
    value = metric.get("value") if isinstance(metric, dict) else None
    ok = isinstance(value, int) and not isinstance(value, bool) and value > 0
    return value if ok and metric.get("unit", "ns") == "ns" else None


def _start_ns(meta: dict[str, Any]) -> int | None:
    """When the request was sent, on the run's wall clock (ns), from the record's metadata
    (`request_start_ns` in AIPerf 0.13, `timestamp_ns` before); kept in the header as
    `request_start_ns` so the run's span (AIPerf's `benchmark_duration`) can be rebuilt."""
    for key in ("request_start_ns", "timestamp_ns"):
        value = meta.get(key)
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


def _metadata(obj: dict[str, Any], path: Path, where: str) -> dict[str, Any]:
    """The record's `metadata` object ({} when absent or null), else an error."""
    meta = obj.get("metadata")
    if meta is None:
        return {}
    if not isinstance(meta, dict):
        raise ImportFormatError(
            path, where, "metadata", f"expected an object, got {type(meta).__name__}"
        )
    rid = meta.get("x_request_id")
    if rid is not None and not isinstance(rid, str | int):
        raise ImportFormatError(path, where, "metadata.x_request_id", "expected a string")
    return meta


def _packets(value: Any, path: Path, where: str, name: str) -> list[tuple[str, str]]:
    """`[(name, value)]` of a raw response's `packets` (a list of {name, value} strings)."""
    if value is None:
        return []
    if not isinstance(value, list):
        raise ImportFormatError(path, where, name, f"expected a list, got {type(value).__name__}")
    out: list[tuple[str, str]] = []
    for i, packet in enumerate(value):
        if not isinstance(packet, dict):
            raise ImportFormatError(path, where, f"{name}[{i}]", "expected {name, value}")
        key, text = packet.get("name"), packet.get("value")
        if not isinstance(key, str) or not isinstance(text, str | None):
            raise ImportFormatError(
                path, where, f"{name}[{i}]", "expected string `name` and `value`"
            )
        out.append((key, text or ""))
    return out


def _raw_record(
    path: Path, where: str, obj: dict[str, Any], rid: str, origin: str, model: str | None
) -> Recording | str:
    start_ns = require(obj, "start_perf_ns", (int, float), "a perf_counter time in ns", path, where)
    responses = require(obj, "responses", (list,), "a list of responses", path, where)
    if not responses:
        return "no responses"
    events: list[SseEvent] = []
    for k, resp in enumerate(responses):
        if not isinstance(resp, dict):
            raise ImportFormatError(path, where, f"responses[{k}]", "expected an object")
        perf_ns = require(
            resp, "perf_ns", (int, float), "a time in ns", path, where, prefix=f"responses[{k}]."
        )
        t_ms = (perf_ns - start_ns) / 1e6
        if t_ms < 0:
            raise ImportFormatError(
                path, where, f"responses[{k}].perf_ns", "earlier than start_perf_ns"
            )
        if events and events[-1].t_ms is not None and t_ms < events[-1].t_ms:
            raise ImportFormatError(
                path, where, f"responses[{k}].perf_ns", "earlier than the response before"
            )
        if "packets" in resp:
            packets = _packets(resp["packets"], path, where, f"responses[{k}].packets")
            name = next((v for n, v in packets if n == "event"), None)
            data = "\n".join(v for n, v in packets if n == "data")
            if data or name:
                events.append(SseEvent(name, data, t_ms))
        elif "text" in resp:
            raw = resp["text"]
            if not isinstance(raw, str):
                raise ImportFormatError(path, where, f"responses[{k}].text", "expected a string")
            events.extend(response_text_events(t_ms, raw))
        else:
            raise ImportFormatError(
                path, where, f"responses[{k}]", "expected `text` or `packets` next to `perf_ns`"
            )
    raw_payload = obj.get("payload")
    payload = raw_payload if isinstance(raw_payload, dict) else {}
    meta = _metadata(obj, path, where)
    model_name = payload.get("model")
    header = import_header(
        rid,
        importer="aiperf-raw",
        origin=origin,
        api="openai.chat",
        model=model_name if isinstance(model_name, str) and model_name else model,
        request=payload,
        timing="recorded",
        request_id=meta.get("x_request_id"),
        request_start_ns=_start_ns(meta),
        http_status=obj.get("status"),
    )
    return map_located(
        openai_chat_events_to_recording, events, header, path, lambda i: f"{where} (response {i})"
    )
